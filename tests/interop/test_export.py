"""``evalkit export`` and ``evalkit.interop.export``: TREC round trip through pytrec_eval, tables, ties.

Fixture run (real ``run_eval``, BM25 only, no models), two variants over a tiny corpus:
  bm25      retrieve (BM25)                   final ranking = retrieval ranking
  reversed  retrieve (BM25) -> test_reverse final ranking = retrieval ranking reversed,
                                                 so the two TREC stages differ
Questions: q1-q4 answerable (q3 has three gold documents, one BM25 cannot find: recall
2/3), q5 unanswerable (no gold: left out of the qrels, NaN metrics in the table), q6
answerable but sharing no term with any document (an empty or useless ranking: 0).
"""
from __future__ import annotations

import json
from pathlib import Path

import fakes  # noqa: F401  (registers the test_reverse node type)
import pandas as pd
import pytest
import pytrec_eval
from click.testing import CliRunner
from fakes import DOCS, QUESTIONS

from evalkit.cli import cli
from evalkit.errors import EvalkitError
from evalkit.evalsets import freeze, load_eval_set
from evalkit.graph import config_from_dict
from evalkit.interop.export import (
    export_run,
    export_trec,
    to_dataframe,
    trec_run_lines,
    write_table,
)
from evalkit.run.runner import RunOptions, run_eval

BM25 = {"name": "bm25", "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}}}},
        "edges": {"start": "retrieve", "retrieve": "end"}}
REVERSED = {"name": "reversed",
            "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}}},
                      "rev": {"type": "test_reverse", "params": {}}},
            "edges": {"start": "retrieve", "retrieve": "rev", "rev": "end"}}
METRICS = ("recall@20", "recall@3", "hit@1", "hit@5", "mrr@10", "ndcg@10", "ndcg@3", "precision@5")


@pytest.fixture(scope="module")
def run_path(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("export")
    (tmp / "corpora").mkdir()
    corpus = tmp / "corpora" / "tiny.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in DOCS))
    es = tmp / "tiny.jsonl"
    es.write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": g, "type": t, "lang": "en"}) + "\n"
                          for i, q, g, t in QUESTIONS))
    freeze(es, corpus=str(corpus))
    out = tmp / "results" / "tiny.json"
    run_eval(load_eval_set(str(es)), [config_from_dict(BM25), config_from_dict(REVERSED)],
             RunOptions(output=out, progress=False, mlflow=False, metrics=METRICS), echo=lambda m: None)
    return out


def _per_query(run_path: Path, variant: str) -> dict[str, dict[str, float]]:
    rows = [json.loads(x) for x in (run_path.with_suffix("") / variant / "per_query.jsonl").read_text().splitlines()]
    return {r["query_id"]: r["metrics"] for r in rows if r["gold_doc_ids"]}


def _trec(qrels: Path, run: Path, measures: set[str], cut: int | None = None) -> dict[str, dict[str, float]]:
    with qrels.open() as f:
        q = pytrec_eval.parse_qrel(f)
    with run.open() as f:
        r = pytrec_eval.parse_run(f)
    if cut is not None:  # the run cut to its top `cut` (scores are rank-derived: highest first)
        r = {qid: dict(sorted(docs.items(), key=lambda kv: -kv[1])[:cut]) for qid, docs in r.items()}
    return pytrec_eval.RelevanceEvaluator(q, measures).evaluate(r)


# evalkit metric -> (stage, trec_eval measure, cut of the run)
TREC_EQUIVALENT = {"recall@20": ("retrieval", "recall_20", None), "recall@3": ("retrieval", "recall_3", None),
                   "hit@1": ("final", "success_1", None), "hit@5": ("final", "success_5", None),
                   "mrr@10": ("final", "recip_rank", 10), "ndcg@10": ("final", "ndcg_cut_10", None),
                   "ndcg@3": ("final", "ndcg_cut_3", None), "precision@5": ("final", "P_5", None)}


@pytest.mark.parametrize("variant", ["bm25", "reversed"])
def test_trec_round_trip_matches_evalkit_per_query(run_path: Path, tmp_path: Path, variant: str):
    paths = export_trec(run_path, tmp_path / "trec")
    assert [p.name for p in paths] == ["qrels.txt", "bm25.retrieval.run", "bm25.final.run",
                                       "reversed.retrieval.run", "reversed.final.run"]
    ours = _per_query(run_path, variant)
    assert set(ours) == {"q1", "q2", "q3", "q4", "q6"}
    assert len({v[m] for v in ours.values() for m in v}) > 3      # not all 0/1: the comparison has teeth
    for metric, (stage, measure, cut) in TREC_EQUIVALENT.items():
        theirs = _trec(tmp_path / "trec" / "qrels.txt", tmp_path / "trec" / f"{variant}.{stage}.run", {measure}, cut)
        for qid, values in ours.items():
            got = theirs.get(qid, {}).get(measure, 0.0)  # a query with an empty ranking is 0 in evalkit
            assert got == pytest.approx(values[metric], abs=1e-9), (variant, metric, qid)


def test_stages_differ_when_there_is_a_reranker(run_path: Path, tmp_path: Path):
    export_trec(run_path, tmp_path)
    retrieval = (tmp_path / "reversed.retrieval.run").read_text().splitlines()
    final = (tmp_path / "reversed.final.run").read_text().splitlines()
    first = [line.split()[2] for line in retrieval if line.startswith("q1 ")]
    assert [line.split()[2] for line in final if line.startswith("q1 ")] == first[::-1]
    assert (tmp_path / "bm25.retrieval.run").read_text().replace(".retrieval", ".final") == \
        (tmp_path / "bm25.final.run").read_text()


def test_trec_line_format_and_qrels(run_path: Path, tmp_path: Path):
    export_trec(run_path, tmp_path, variants=["bm25"])
    line = (tmp_path / "bm25.retrieval.run").read_text().splitlines()[0].split()
    assert line[0] == "q1" and line[1] == "Q0" and line[3] == "1" and line[5] == "bm25.retrieval"
    assert (tmp_path / "qrels.txt").read_text().splitlines() == [
        "q1 0 doc-a 1", "q2 0 doc-d 1", "q3 0 doc-b 1", "q3 0 doc-g 1", "q3 0 doc-e 1", "q4 0 doc-c 1",
        "q6 0 doc-c 1"]   # q5 has no gold


def test_native_scores_let_trec_eval_reorder_ties():
    """Tied pipeline scores: trec_eval sorts ties by docid descending, so native scores can change metrics."""
    rows = [{"query_id": "q", "gold_doc_ids": ["d1"], "retrieved": [{"doc_id": "d1", "score": 0.5},
                                                                   {"doc_id": "d2", "score": 0.5}]}]
    qrels = {"q": {"d1": 1}}

    def rr(lines: list[str]) -> float:
        run = {"q": {ln.split()[2]: float(ln.split()[4]) for ln in lines}}
        return pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"]

    assert rr(trec_run_lines(rows, "retrieval", "x", scores="rank")) == 1.0      # evalkit's order kept
    assert rr(trec_run_lines(rows, "retrieval", "x", scores="native")) == 0.5    # d2 re-sorted first
    assert trec_run_lines(rows, "retrieval", "x", scores="native")[0] == "q Q0 d1 1 0.500000 x"


def test_whitespace_in_ids_is_refused():
    rows = [{"query_id": "q 1", "retrieved": [{"doc_id": "d1", "score": 1.0}]}]
    with pytest.raises(EvalkitError, match="whitespace"):
        trec_run_lines(rows, "retrieval", "x")
    with pytest.raises(EvalkitError, match="unknown stage"):
        trec_run_lines([], "rerank", "x")


def test_dataframe_one_row_per_variant_and_query(run_path: Path):
    df = to_dataframe(run_path)
    assert len(df) == 12 and list(df["variant"].unique()) == ["bm25", "reversed"]
    assert list(df["query_id"][:5]) == ["q1", "q2", "q3", "q4", "q5"]
    assert list(df.columns[:5]) == ["variant", "query_id", "question", "type", "lang"]
    assert set(METRICS) <= set(df.columns) and all(df[m].dtype == "float64" for m in METRICS)
    q5 = df[(df.variant == "bm25") & (df.query_id == "q5")].iloc[0]
    assert q5["type"] == "unanswerable" and q5["n_gold"] == 0 and pd.isna(q5["hit@5"])
    q1 = df[(df.variant == "reversed") & (df.query_id == "q1")].iloc[0]
    assert q1["path"] == ["retrieve", "rev"] and q1["n_steps"] == 2 and q1["outcome"] == "completed"
    assert q1["error"] is None or pd.isna(q1["error"])
    metrics = _per_query(run_path, "reversed")["q1"]
    assert q1["mrr@10"] == metrics["mrr@10"] and q1["gold_doc_ids"] == ["doc-a"]
    assert to_dataframe(run_path, variants=["reversed"])["variant"].unique().tolist() == ["reversed"]
    with pytest.raises(EvalkitError, match="did you mean 'bm25'"):
        to_dataframe(run_path, variants=["bm2"])


def test_parquet_and_csv_round_trip(run_path: Path, tmp_path: Path):
    df = to_dataframe(run_path)
    back = pd.read_parquet(write_table(df, tmp_path / "t.parquet", "parquet"))
    assert back.shape == df.shape and list(back.columns) == list(df.columns)
    assert list(back["gold_doc_ids"][2]) == ["doc-b", "doc-g", "doc-e"]
    pd.testing.assert_series_equal(back["ndcg@10"], df["ndcg@10"])
    csv = pd.read_csv(write_table(df, tmp_path / "t.csv", "csv"))
    assert json.loads(csv["gold_doc_ids"][2]) == ["doc-b", "doc-g", "doc-e"] and csv["hit@5"].isna().sum() == 2


def test_cli_export_defaults_beside_the_summary(run_path: Path):
    runner = CliRunner()
    res = runner.invoke(cli, ["export", str(run_path), "--format", "trec"])
    assert res.exit_code == 0, res.output
    assert (run_path.parent / "tiny.trec" / "qrels.txt").is_file() and "5 files" in res.output
    res = runner.invoke(cli, ["export", str(run_path)])
    assert res.exit_code == 0, res.output
    assert pd.read_parquet(run_path.with_suffix(".parquet")).shape[0] == 12
    res = runner.invoke(cli, ["export", str(run_path), "--format", "xlsx"])
    assert res.exit_code == 2 and "xlsx" in res.output


def test_export_run_rejects_unknown_format(run_path: Path):
    with pytest.raises(EvalkitError, match="unknown export format"):
        export_run(run_path, "xml")


def test_column_names_are_unique_even_when_a_metric_repeats_a_fixed_name(run_path: Path, tmp_path: Path):
    from evalkit.interop.export import FIXED_COLUMNS, metric_column

    assert metric_column("hit@5") == "hit@5" and metric_column("answer") == "metric:answer"
    rows = [json.loads(x) for x in (run_path.with_suffix("") / "bm25" / "per_query.jsonl").read_text().splitlines()]
    rows[0]["metrics"]["outcome"] = 0.5                          # a (hypothetical) metric named like a fixed column
    folder = tmp_path / "clash"
    (folder / "clash" / "bm25").mkdir(parents=True)
    (folder / "clash" / "bm25" / "per_query.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = json.loads(run_path.read_text())
    summary["variants"] = {"bm25": summary["variants"]["bm25"]}
    (folder / "clash.json").write_text(json.dumps(summary))
    df = to_dataframe(folder / "clash.json")
    assert len(set(df.columns)) == len(df.columns) and list(df.columns[:len(FIXED_COLUMNS)]) == list(FIXED_COLUMNS)
    assert df["metric:outcome"].iloc[0] == 0.5 and df["outcome"].iloc[0] == "completed"
    back = pd.read_csv(write_table(df, tmp_path / "c.csv", "csv"))
    assert list(back.columns) == list(df.columns)


def test_ragas_export_of_a_retrieval_only_run_carries_the_top_documents(run_path: Path, tmp_path: Path):
    """No answers: each sample holds the top 5 of the final ranking as contexts (title line + text), no response."""
    from evalkit.interop.ragas_export import TOP_K

    paths = export_run(run_path, "ragas", tmp_path / "r", ["reversed"])
    assert [p.name for p in paths] == ["reversed.jsonl"]
    samples = [json.loads(x) for x in paths[0].read_text(encoding="utf-8").splitlines()]
    rows = [json.loads(x) for x in (run_path.with_suffix("") / "reversed" / "per_query.jsonl").read_text().splitlines()]
    docs = {i: f"{t}\n{x}" for i, t, x in DOCS}
    assert [s["id"] for s in samples] == [r["query_id"] for r in rows]
    for s, r in zip(samples, rows, strict=True):
        top = [d["doc_id"] for d in r["reranked"]][:TOP_K]
        assert "response" not in s and s["retrieved_context_ids"] == top
        assert s["retrieved_contexts"] == [docs[d] for d in top]
        assert s.get("reference_context_ids", []) == r["gold_doc_ids"]


def test_ragas_export_without_the_corpus_says_what_to_restore(run_path: Path, tmp_path: Path):
    corpus = run_path.parent.parent / "corpora" / "tiny.jsonl"
    moved = corpus.with_suffix(".moved")
    corpus.rename(moved)
    try:
        with pytest.raises(EvalkitError, match=r"the corpus of this run .* was not found; a ragas sample needs the "
                                               r"passage texts: restore the corpus file"):
            export_run(run_path, "ragas", tmp_path / "r")
    finally:
        moved.rename(corpus)
