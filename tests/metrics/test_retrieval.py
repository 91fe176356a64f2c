"""Tests of evalkit.metrics: hand-computed cases, then agreement with pytrec_eval (trec_eval).

Convention when comparing with trec_eval: trec_eval re-sorts a run by score and breaks
ties by document id in DESCENDING order, while evalkit evaluates the order the pipeline
returned. So every evalkit ranking is handed to pytrec_eval with scores derived from its
rank (``score = len - position``: strictly decreasing, no ties), and both see one order.
trec_eval cannot hold one document twice, so rankings are deduplicated before that.
"""
from __future__ import annotations

import math
import random

import pytest
import pytrec_eval

from evalkit.errors import EvalkitError
from evalkit.metrics import (
    DEFAULT_METRICS,
    GRAMMAR,
    REGISTRY,
    MetricNameError,
    MetricSpec,
    aggregate,
    dedupe,
    hit,
    mrr,
    ndcg,
    parse_metric,
    precision,
    recall,
    score_query,
)

FUNCTIONS = {"recall": recall, "hit": hit, "precision": precision, "mrr": mrr, "ndcg": ndcg}
# evalkit family -> pytrec_eval measure family (mrr is compared with recip_rank on the cut run)
TREC_NAME = {"recall": "recall", "hit": "success", "precision": "P", "ndcg": "ndcg_cut"}
KS = (1, 3, 5, 10, 20)


def rank_scores(ranking: list[str]) -> dict[str, float]:
    """pytrec_eval run scores that encode evalkit's order: deduped, score = len - position."""
    ranked = dedupe(ranking)
    return {d: float(len(ranked) - i) for i, d in enumerate(ranked)}


def trec_eval(run: dict[str, float], relevant: set[str], measures: set[str]) -> dict[str, float]:
    """Evaluate one query with pytrec_eval; ``run`` maps doc id -> score."""
    evaluator = pytrec_eval.RelevanceEvaluator({"q": {d: 1 for d in relevant}}, measures)
    return evaluator.evaluate({"q": run})["q"]


# ---------------------------------------------------------------- hand-computed cases

RANKED = ["d1", "d2", "d3", "d4", "d5"]
RELEVANT = {"d2", "d4", "d9"}  # relevant: d2 (rank 2), d4 (rank 4), d9 (not retrieved)


@pytest.mark.parametrize(
    ("fn", "k", "expected"),
    [
        (recall, 1, 0.0),
        (recall, 3, 1 / 3),  # d2
        (recall, 5, 2 / 3),  # d2, d4 of 3 relevant
        (recall, 50, 2 / 3),  # k larger than the list
        (hit, 1, 0.0),
        (hit, 2, 1.0),  # d2 at rank 2
        (precision, 1, 0.0),
        (precision, 5, 2 / 5),
        (precision, 10, 2 / 10),  # divides by k, not by the 5 returned
        (mrr, 1, 0.0),
        (mrr, 5, 1 / 2),  # first relevant at rank 2
        (ndcg, 1, 0.0),
        (ndcg, 2, (1 / math.log2(3)) / (1 + 1 / math.log2(3))),
        (ndcg, 5, (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3) + 1 / math.log2(4))),
    ],
)
def test_hand_computed(fn, k, expected):
    assert fn(RANKED, RELEVANT, k) == pytest.approx(expected, abs=1e-12)


def test_perfect_ranking_scores_one():
    ranked = ["d1", "d2", "x"]
    relevant = {"d1", "d2"}  # relevant: d1, d2 at ranks 1, 2
    for fn in (recall, hit, mrr, ndcg):
        assert fn(ranked, relevant, 3) == 1.0
    assert precision(ranked, relevant, 2) == 1.0


def test_ndcg_ideal_is_cut_at_k():
    # relevant: 5 documents, k = 2: the ideal top 2 holds 2 of them, so a top 2 of
    # relevant documents is a perfect 1.0 (IDCG over min(|R|, k) positions)
    relevant = {f"r{i}" for i in range(5)}
    assert ndcg(["r3", "r1", "x"], relevant, 2) == 1.0
    assert recall(["r3", "r1", "x"], relevant, 2) == pytest.approx(2 / 5)


def test_recall_and_hit_differ_with_several_relevant():
    ranked = ["d1", "x", "y"]
    relevant = {"d1", "d2"}  # relevant: d1 (rank 1); d2 not retrieved
    assert hit(ranked, relevant, 3) == 1.0
    assert recall(ranked, relevant, 3) == 0.5


@pytest.mark.parametrize("family", sorted(FUNCTIONS))
def test_empty_ranking_scores_zero(family):
    assert FUNCTIONS[family]([], {"d1"}, 10) == 0.0


@pytest.mark.parametrize("family", sorted(FUNCTIONS))
def test_empty_relevant_is_an_error_not_a_zero(family):
    with pytest.raises(ValueError, match="relevant is empty"):
        FUNCTIONS[family](["d1"], set(), 10)


@pytest.mark.parametrize("family", sorted(FUNCTIONS))
def test_bad_k_and_bad_types(family):
    fn = FUNCTIONS[family]
    with pytest.raises(ValueError, match="positive"):
        fn(["d1"], {"d1"}, 0)
    with pytest.raises(TypeError, match="k must be an int"):
        fn(["d1"], {"d1"}, 2.0)
    with pytest.raises(TypeError, match="single string"):
        fn("d1", {"d1"}, 1)  # a str is a Sequence[str] of characters
    with pytest.raises(TypeError, match="single string"):
        fn(["d1"], "d1", 1)


def test_dedupe_keeps_first_occurrence_rank():
    assert dedupe(["d1", "d2", "d1", "d3", "d2"]) == ["d1", "d2", "d3"]
    assert dedupe([]) == []
    chunks = ("d1", "d1")
    assert dedupe(chunks) == ["d1"] and chunks == ("d1", "d1")  # input untouched


def test_top_k_of_a_ranking_is_dedupe_then_cut_with_or_without_duplicates():
    """_prepare cuts the first k ids without deduplicating the whole list when they are distinct:
    the same top k as dedupe(ranked)[:k] on rankings with and without duplicates, short and long."""
    from evalkit.metrics.retrieval import _top_unique

    rng = random.Random(5)
    for _ in range(2000):
        ranked = [f"d{rng.randint(0, rng.choice([3, 30, 300]))}" for _ in range(rng.randint(0, 40))]
        k = rng.randint(1, 45)
        assert _top_unique(ranked, k) == dedupe(ranked)[:k]
        assert _top_unique(tuple(ranked), k) == dedupe(ranked)[:k]


def test_duplicate_chunks_count_once():
    # three chunks of d1, then d2; relevant: d2 (rank 2 once d1's chunks are merged)
    ranked = ["d1", "d1", "d1", "d2"]
    assert mrr(ranked, {"d2"}, 2) == 0.5  # without dedupe d2 would sit at rank 4
    assert hit(ranked, {"d2"}, 2) == 1.0
    # two chunks of relevant d1: one document, one hit
    assert precision(["d1", "d1"], {"d1"}, 2) == 0.5
    assert recall(["d1", "d1"], {"d1", "d2"}, 2) == 0.5
    assert ndcg(["d1", "d1", "d2"], {"d1", "d2"}, 2) == 1.0


def test_duplicate_chunks_match_trec_eval_after_dedupe():
    ranked = ["d3", "d1", "d3", "d2", "d1", "d4"]
    relevant = {"d2", "d4"}  # relevant: d2 (rank 3 after dedupe), d4 (rank 4)
    got = trec_eval(rank_scores(ranked), relevant, {"recall.3", "P.3", "ndcg_cut.3", "success.3"})
    assert recall(ranked, relevant, 3) == pytest.approx(got["recall_3"], abs=1e-9)
    assert precision(ranked, relevant, 3) == pytest.approx(got["P_3"], abs=1e-9)
    assert ndcg(ranked, relevant, 3) == pytest.approx(got["ndcg_cut_3"], abs=1e-9)
    assert hit(ranked, relevant, 3) == got["success_3"] == 1.0


def test_ties_evalkit_keeps_pipeline_order_trec_eval_needs_rank_scores():
    # The pipeline returned d1 and d2 with the SAME score and ordered them by id
    # ascending: d1 first. relevant: d1 (rank 1 in the order the pipeline returned).
    ranking = ["d1", "d2"]
    relevant = {"d1"}
    assert mrr(ranking, relevant, 10) == 1.0
    assert ndcg(ranking, relevant, 1) == 1.0

    # Given the raw tied scores, trec_eval re-sorts by score and breaks the tie by doc
    # id DESCENDING: it sees d2, d1, so d1 drops to rank 2. That is trec_eval's
    # convention, not a disagreement about the metric.
    tied = {"d1": 0.5, "d2": 0.5}
    raw = trec_eval(tied, relevant, {"recip_rank", "ndcg_cut.1"})
    assert raw["recip_rank"] == 0.5
    assert raw["ndcg_cut_1"] == 0.0

    # Rank-derived scores (len - position: d1 -> 2.0, d2 -> 1.0) carry evalkit's order
    # into trec_eval, and the two agree.
    assert rank_scores(ranking) == {"d1": 2.0, "d2": 1.0}
    same = trec_eval(rank_scores(ranking), relevant, {"recip_rank", "ndcg_cut.1"})
    assert same["recip_rank"] == mrr(ranking, relevant, 10) == 1.0
    assert same["ndcg_cut_1"] == ndcg(ranking, relevant, 1) == 1.0


def test_k_larger_than_list_and_empty_ranking_match_trec_eval():
    relevant = {"d2", "d7"}
    measures = {"recall.20", "success.20", "P.20", "ndcg_cut.20", "recip_rank"}
    for ranking in (["d1", "d2"], []):
        got = trec_eval(rank_scores(ranking), relevant, measures)
        assert recall(ranking, relevant, 20) == pytest.approx(got["recall_20"], abs=1e-9)
        assert hit(ranking, relevant, 20) == pytest.approx(got["success_20"], abs=1e-9)
        assert precision(ranking, relevant, 20) == pytest.approx(got["P_20"], abs=1e-9)
        assert ndcg(ranking, relevant, 20) == pytest.approx(got["ndcg_cut_20"], abs=1e-9)
        assert mrr(ranking, relevant, 20) == pytest.approx(got["recip_rank"], abs=1e-9)


# ---------------------------------------------------------------- randomized vs pytrec_eval

POOL = [f"d{i:02d}" for i in range(30)]


def _random_queries(n: int = 300) -> list[tuple[list[str], set[str]]]:
    rng = random.Random(0)
    queries = []
    for _ in range(n):
        ranking = rng.sample(POOL, rng.randint(0, 30))  # lengths 0..30: k > len happens
        if ranking and rng.random() < 0.3:  # some queries get duplicate chunks
            for _ in range(rng.randint(1, 5)):
                ranking.insert(rng.randrange(len(ranking) + 1), rng.choice(ranking))
        relevant = set(rng.sample(POOL, rng.randint(1, 4)))
        queries.append((ranking, relevant))
    return queries


QUERIES = _random_queries()


@pytest.fixture(scope="module")
def trec_results() -> dict[str, dict[str, float]]:
    """pytrec_eval over all random queries: ``{"recall_5": {qid: value}, "mrr_5": ...}``."""
    qrels = {f"q{i}": {d: 1 for d in rel} for i, (_, rel) in enumerate(QUERIES)}
    cuts = ",".join(str(k) for k in KS)
    measures = {f"{name}.{cuts}" for name in TREC_NAME.values()}
    run = {f"q{i}": rank_scores(r) for i, (r, _) in enumerate(QUERIES)}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    out: dict[str, dict[str, float]] = {}
    for qid, values in per_query.items():
        for key, value in values.items():
            out.setdefault(key, {})[qid] = value
    for k in KS:  # mrr@k = recip_rank on the run truncated to its top k
        cut_run = {f"q{i}": rank_scores(dedupe(r)[:k]) for i, (r, _) in enumerate(QUERIES)}
        rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut_run)
        out[f"mrr_{k}"] = {qid: v["recip_rank"] for qid, v in rr.items()}
    return out


def test_random_queries_are_varied():
    lengths = [len(dedupe(r)) for r, _ in QUERIES]
    assert len(QUERIES) == 300
    assert min(lengths) == 0 and max(lengths) == 30
    assert sum(len(r) != len(dedupe(r)) for r, _ in QUERIES) > 50  # duplicate chunks
    assert {len(rel) for _, rel in QUERIES} == {1, 2, 3, 4}


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("family", sorted(FUNCTIONS))
def test_random_agreement_with_pytrec_eval(trec_results, family, k):
    key = f"mrr_{k}" if family == "mrr" else f"{TREC_NAME[family]}_{k}"
    expected = trec_results[key]
    assert len(expected) == len(QUERIES)  # pytrec_eval scored every query
    fn = FUNCTIONS[family]
    for i, (ranking, relevant) in enumerate(QUERIES):
        got = fn(ranking, relevant, k)
        assert got == pytest.approx(expected[f"q{i}"], abs=1e-9), (family, k, ranking, relevant)
    # the registry scores the same numbers under the printed name
    spec = parse_metric(f"final:{family}@{k}")
    for i, (ranking, relevant) in enumerate(QUERIES[:20]):
        scores = score_query([], ranking, relevant, metrics=(spec.name,))
        assert scores[spec.name] == pytest.approx(expected[f"q{i}"], abs=1e-9)


# ---------------------------------------------------------------- registry


@pytest.mark.parametrize(
    ("name", "family", "k", "stage"),
    [
        ("recall@20", "recall", 20, "retrieval"),
        ("hit@5", "hit", 5, "final"),
        ("mrr@10", "mrr", 10, "final"),
        ("ndcg@10", "ndcg", 10, "final"),
        ("precision@5", "precision", 5, "final"),
        ("retrieval:hit@5", "hit", 5, "retrieval"),
        ("final:recall@20", "recall", 20, "final"),
        ("retrieval:recall@100", "recall", 100, "retrieval"),
    ],
)
def test_parse_metric(name, family, k, stage):
    spec = parse_metric(name)
    assert spec == MetricSpec(name=name, family=family, k=k, fn=FUNCTIONS[family], stage=stage)
    assert spec.name == name  # the printed name keeps a stage prefix


def test_spec_is_frozen():
    spec = parse_metric("hit@5")
    with pytest.raises(AttributeError):
        spec.k = 3  # type: ignore[misc]


def test_default_metrics_parse_and_registry_matches_functions():
    assert DEFAULT_METRICS == ("recall@20", "hit@5", "mrr@10", "ndcg@10")
    assert [parse_metric(m).name for m in DEFAULT_METRICS] == list(DEFAULT_METRICS)
    assert set(REGISTRY) == set(FUNCTIONS)
    for name, family in REGISTRY.items():
        assert family.fn is FUNCTIONS[name]
        assert family.name in GRAMMAR  # the error lists every family it accepts


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("recall", "the cutoff is missing, e.g. 'recall@10'"),
        ("recall20", "does not have the form"),
        ("recall@", "not a positive integer"),
        ("recall@ten", "not a positive integer"),
        ("recall@0", "at least 1"),
        ("recall@020", "without leading zeros: 'recall@20'"),
        ("a:b:hit@5", "does not have the form"),
        ("hit@5@3", "does not have the form"),
        ("@10", "valid choices: hit, mrr, ndcg, precision, recall"),
        ("map@10", "valid choices: hit, mrr, ndcg, precision, recall"),
        ("recal@20", "did you mean 'recall'?"),
        ("Recall@20", "did you mean 'recall'?"),
        ("ndgc@10", "did you mean 'ndcg'?"),
        ("hits@5", "did you mean 'hit'?"),
        ("retreival:hit@5", "unknown stage 'retreival'; did you mean 'retrieval'?"),
        ("rerank:hit@5", "unknown stage 'rerank'"),
        (" hit@5", "unknown metric family ' hit'"),
    ],
)
def test_bad_names_state_the_grammar(name, hint):
    with pytest.raises(MetricNameError) as info:
        parse_metric(name)
    message = str(info.value)
    assert hint in message
    assert f"bad metric name {name!r}" in message
    assert "'[stage:]family@k'" in message
    assert "hit, mrr, ndcg, precision, recall" in message
    assert "retrieval, final" in message
    assert isinstance(info.value, ValueError) and isinstance(info.value, EvalkitError)


def test_non_string_name_is_rejected():
    with pytest.raises(MetricNameError, match=r"must be a str, got int"):
        parse_metric(20)  # type: ignore[arg-type]


# ---------------------------------------------------------------- score_query / aggregate

RETRIEVED = ["d1", "d2", "d3"]
RERANKED = ["d3", "d1", "d2"]  # the reranker moved d3 up
GOLD = {"d3"}  # relevant: d3 (rank 3 retrieved, rank 1 after rerank)


def test_score_query_reads_the_ranking_of_each_stage():
    scores = score_query(
        RETRIEVED, RERANKED, GOLD,
        metrics=("mrr@10", "retrieval:mrr@10", "recall@2", "final:recall@2", "hit@1", "retrieval:hit@1"),
    )
    assert scores == {
        "mrr@10": 1.0,  # final: d3 at rank 1
        "retrieval:mrr@10": pytest.approx(1 / 3),  # retrieval: d3 at rank 3
        "recall@2": 0.0,  # recall reads retrieval by default: d3 not in top 2
        "final:recall@2": 1.0,
        "hit@1": 1.0,
        "retrieval:hit@1": 0.0,
    }


def test_score_query_defaults_and_no_reranker():
    scores = score_query(RETRIEVED, RETRIEVED, GOLD)  # no reranker: same list twice
    assert list(scores) == list(DEFAULT_METRICS)
    assert scores["recall@20"] == 1.0
    assert scores["hit@5"] == 1.0
    assert scores["mrr@10"] == pytest.approx(1 / 3)
    assert scores["ndcg@10"] == pytest.approx(1 / math.log2(4))


def test_score_query_dedupes_both_rankings():
    scores = score_query(["d1", "d1", "d3"], ["d1", "d1", "d3"], GOLD, metrics=("recall@2", "mrr@2"))
    assert scores == {"recall@2": 1.0, "mrr@2": 0.5}


def test_score_query_errors():
    with pytest.raises(ValueError, match="relevant is empty"):
        score_query(RETRIEVED, RERANKED, set())
    with pytest.raises(ValueError, match="relevant is empty"):
        score_query(RETRIEVED, RERANKED, [], metrics=())
    with pytest.raises(MetricNameError, match="did you mean 'recall'"):
        score_query(RETRIEVED, RERANKED, GOLD, metrics=("recal@20",))
    with pytest.raises(MetricNameError, match="single string"):
        score_query(RETRIEVED, RERANKED, GOLD, metrics="recall@20")  # type: ignore[arg-type]


def test_aggregate_is_the_mean_over_given_queries():
    per_query = [
        {"recall@20": 1.0, "mrr@10": 0.5},
        {"recall@20": 0.0, "mrr@10": 1.0},
        {"recall@20": 0.5, "mrr@10": 0.0},
    ]
    assert aggregate(per_query) == {"recall@20": pytest.approx(0.5), "mrr@10": pytest.approx(0.5)}
    assert aggregate([]) == {}
    assert aggregate([{"hit@5": 1.0}]) == {"hit@5": 1.0}


def test_aggregate_rejects_queries_with_different_metrics():
    with pytest.raises(ValueError, match=r"per_query\[1\].*missing \['mrr@10'\]"):
        aggregate([{"recall@20": 1.0, "mrr@10": 0.5}, {"recall@20": 1.0}])


def test_aggregate_of_random_queries_matches_pytrec_eval_mean(trec_results):
    per_query = [score_query(r, r, rel, metrics=("ndcg@10", "hit@5")) for r, rel in QUERIES]
    means = aggregate(per_query)
    n = len(QUERIES)
    assert means["ndcg@10"] == pytest.approx(sum(trec_results["ndcg_cut_10"].values()) / n, abs=1e-12)
    assert means["hit@5"] == pytest.approx(sum(trec_results["success_5"].values()) / n, abs=1e-12)
