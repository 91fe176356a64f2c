"""Rank fusion: RRF and weighted min-max / z-score sums, checked by hand; order independence."""
from __future__ import annotations

import math
import random

import pytest

from evalkit.nodes.fusion import normalise, rrf, weighted
from evalkit.records import Hit


def hits(*pairs: tuple[str, float]) -> list[Hit]:
    """A ranking, best first; passage 'x#0' belongs to document 'x'."""
    return [Hit(f"{pid}#0", pid, score) for pid, score in pairs]


def as_pairs(ranking: list[Hit]) -> list[tuple[str, float]]:
    return [(h.doc_id, h.score) for h in ranking]


# Two channels: dense ranks a > b > c, BM25 ranks c > d (a, b missing from BM25, d from dense).
DENSE = hits(("a", 0.9), ("b", 0.7), ("c", 0.5))
BM25 = hits(("c", 12.0), ("d", 3.0))


# --- RRF ------------------------------------------------------------------------------

def test_rrf_by_hand():
    # weights 1 (dense), 0.5 (bm25), k = 60; ranks are 1-based
    fused = rrf([DENSE, BM25], [1.0, 0.5], k=60)
    expected = {
        "a": 1 / 61,
        "b": 1 / 62,
        "c": 1 / 63 + 0.5 / 61,  # in both channels
        "d": 0.5 / 62,           # missing from dense: contributes nothing there
    }
    assert [h.doc_id for h in fused] == ["c", "a", "b", "d"]
    for h in fused:
        assert h.score == pytest.approx(expected[h.doc_id], rel=1e-12)
        assert h.id == f"{h.doc_id}#0"


def test_rrf_ignores_scores_and_uses_k():
    # RRF only looks at ranks: rescaling scores changes nothing; k=0 gives 1/rank
    fused = rrf([hits(("a", 1e9), ("b", -5.0))], [1.0], k=0)
    assert as_pairs(fused) == [("a", 1.0), ("b", 0.5)]
    assert rrf([], [], k=60) == []


def test_rrf_ties_broken_by_id():
    # b is 1st in one channel and 2nd in the other, a the reverse: equal sums
    fused = rrf([hits(("b", 1), ("a", 1)), hits(("a", 1), ("b", 1))], [1.0, 1.0])
    assert [h.doc_id for h in fused] == ["a", "b"]
    assert fused[0].score == fused[1].score


def test_rrf_errors():
    with pytest.raises(ValueError, match="2 rankings but 1 weights"):
        rrf([DENSE, BM25], [1.0])
    with pytest.raises(ValueError, match="k must be >= 0"):
        rrf([DENSE], [1.0], k=-1)


# --- weighted sum ---------------------------------------------------------------------

def test_weighted_minmax_by_hand():
    # dense 0.9/0.7/0.5 -> min-max 1, 0.5, 0; bm25 12/3 -> 1, 0. weights 0.6 / 0.4
    fused = weighted([DENSE, BM25], [0.6, 0.4], norm="minmax", missing="min")
    expected = {
        "a": 0.6 * 1.0 + 0.4 * 0.0,  # missing from bm25: bm25's lowest normalised score (0)
        "b": 0.6 * 0.5 + 0.4 * 0.0,
        "c": 0.6 * 0.0 + 0.4 * 1.0,
        "d": 0.6 * 0.0 + 0.4 * 0.0,  # missing from dense: dense's lowest (0)
    }
    assert [h.doc_id for h in fused] == ["a", "c", "b", "d"]
    for h in fused:
        assert h.score == pytest.approx(expected[h.doc_id])
    # for min-max the lowest normalised score is 0, so 'zero' gives the same fusion
    assert as_pairs(weighted([DENSE, BM25], [0.6, 0.4], norm="minmax", missing="zero")) == as_pairs(fused)


def test_weighted_zscore_by_hand():
    # dense [0.9, 0.7, 0.5]: mean 0.7, population std sqrt(0.08/3) -> z = +1.2247, 0, -1.2247
    # bm25  [12, 3]:        mean 7.5, std 4.5                     -> z = +1, -1
    z = 0.2 / math.sqrt(0.08 / 3)
    assert z == pytest.approx(1.224745, abs=1e-6)
    by_min = dict(as_pairs(weighted([DENSE, BM25], [1.0, 1.0], norm="zscore", missing="min")))
    # missing -> that channel's lowest z (dense -z, bm25 -1)
    assert by_min == pytest.approx({"a": z - 1, "b": 0 - 1, "c": -z + 1, "d": -z - 1})
    by_zero = weighted([DENSE, BM25], [1.0, 1.0], norm="zscore", missing="zero")
    # missing -> 0 ("average"): a and b are no longer pushed down for lacking a BM25 hit
    assert dict(as_pairs(by_zero)) == pytest.approx({"a": z, "b": 0.0, "c": 1 - z, "d": -1.0})
    assert [h.doc_id for h in by_zero] == ["a", "b", "c", "d"]


def test_equal_scores():
    assert list(normalise([3.0, 3.0, 3.0], "minmax")) == [1.0, 1.0, 1.0]
    assert list(normalise([3.0, 3.0], "zscore")) == [0.0, 0.0]
    assert len(normalise([], "minmax")) == 0
    # a channel whose scores are all equal still counts (min-max 1.0 each, so its floor is 1.0)
    fused = weighted([hits(("b", 5.0), ("a", 5.0)), hits(("c", 2.0), ("a", 1.0))], [1.0, 1.0])
    # a: 1 + 0; b: 1 + floor of channel 2 (0); c: floor of channel 1 (1) + 1. a and b tie: by id
    assert as_pairs(fused) == [("c", 2.0), ("a", 1.0), ("b", 1.0)]


def test_weighted_empty_channel_and_errors():
    # a channel that found nothing contributes 0 to everyone
    fused = weighted([DENSE, []], [1.0, 1.0])
    assert [h.doc_id for h in fused] == ["a", "b", "c"]
    assert [h.score for h in fused] == pytest.approx([1.0, 0.5, 0.0])
    with pytest.raises(ValueError, match="unknown normalisation 'l2'; valid: minmax, zscore"):
        weighted([DENSE], [1.0], norm="l2")
    with pytest.raises(ValueError, match="unknown missing-score rule 'mean'; valid: min, zero"):
        weighted([DENSE], [1.0], missing="mean")
    with pytest.raises(ValueError, match="1 rankings but 2 weights"):
        weighted([DENSE], [1.0, 2.0])


# --- property: the order of the channels does not matter ------------------------------

def _random_case(rng: random.Random) -> tuple[list[list[Hit]], list[float]]:
    """2-5 rankings over a pool of 6 docs, with many shared docs, repeated scores and weights."""
    rankings = []
    for _ in range(rng.randint(2, 5)):
        docs = rng.sample("abcdef", rng.randint(0, 6))
        scores = sorted((rng.choice([0.1, 0.3, 0.5, 0.7, 1.0, 2.5]) for _ in docs), reverse=True)
        rankings.append(hits(*zip(docs, scores)))
    weights = [rng.choice([0.1, 0.2, 0.3, 0.5, 1.0, 1.5]) for _ in rankings]
    return rankings, weights


@pytest.mark.parametrize("method,kwargs", [
    (rrf, {"k": 60}), (rrf, {"k": 1}),
    (weighted, {"norm": "minmax", "missing": "min"}), (weighted, {"norm": "zscore", "missing": "min"}),
    (weighted, {"norm": "zscore", "missing": "zero"}),
])
def test_fusion_does_not_depend_on_channel_order(method, kwargs):
    rng = random.Random(20240611)
    for _ in range(300):
        rankings, weights = _random_case(rng)
        expected = method(rankings, weights, **kwargs)
        order = list(range(len(rankings)))
        rng.shuffle(order)
        got = method([rankings[i] for i in order], [weights[i] for i in order], **kwargs)
        assert got == expected  # same ids, same order, bit-identical scores


@pytest.mark.parametrize("fuse, kwargs", [(rrf, {"k": 60}), (rrf, {"k": 0}), (weighted, {"norm": "minmax"}),
                                          (weighted, {"norm": "zscore", "missing": "zero"})])
def test_limit_is_exactly_the_head_of_the_full_ranking(fuse, kwargs):
    # retrieve asks for its top_k only (building a Hit per passage of the union was a sweep's largest cost);
    # the head must be the same hits, scores and tie order as the full fused ranking's
    rng = random.Random(7)
    for _ in range(50):
        pool = [f"p{i}" for i in range(rng.randint(1, 60))]
        rankings = []
        for _ in range(rng.randint(1, 3)):
            ids = rng.sample(pool, rng.randint(0, len(pool)))
            scores = sorted((rng.choice([0.5, 1.0, rng.random()]) for _ in ids), reverse=True)  # with ties
            rankings.append([Hit(pid, "d" + pid, s) for pid, s in zip(ids, scores)])
        weights = [rng.choice([0.3, 1.0, 2.0]) for _ in rankings]
        full = fuse(rankings, weights, **kwargs)
        for limit in (1, 5, 20, len(full), len(full) + 3):
            assert fuse(rankings, weights, limit=limit, **kwargs) == full[:limit]


# --- the array path for one or two channels equals the general (fsum) path ------------

def _realistic_case(rng: random.Random) -> tuple[list[list[Hit]], list[float]]:
    """One or two rankings of up to 120 passages over a shared pool: real-looking float scores
    (cosines, BM25 values), runs of tied scores, empty channels, zero and odd weights."""
    pool = [f"p{i}" for i in range(rng.randint(1, 160))]
    rankings = []
    for _ in range(rng.choice([1, 2, 2, 2])):
        ids = rng.sample(pool, rng.randint(0, min(len(pool), 120)))
        kind = rng.random()
        if kind < 0.2:
            scores = [rng.choice([0.5, 1.0, 2.0]) for _ in ids]  # many ties
        elif kind < 0.6:
            scores = [rng.uniform(-1.0, 1.0) for _ in ids]  # cosines
        else:
            scores = [rng.uniform(0.0, 40.0) for _ in ids]  # BM25
        scores.sort(reverse=True)
        rankings.append([Hit(pid, f"d{pid[1:]}", s) for pid, s in zip(ids, scores)])
    weights = [rng.choice([0.0, 0.3, 0.5, 0.7, 1.0, 1 / 3, 2.0, -0.5]) for _ in rankings]
    return rankings, weights


@pytest.mark.parametrize("fuse, kwargs", [
    (rrf, {"k": 60}), (rrf, {"k": 0}), (rrf, {"k": 10}),
    (weighted, {"norm": "minmax", "missing": "min"}), (weighted, {"norm": "minmax", "missing": "zero"}),
    (weighted, {"norm": "zscore", "missing": "min"}), (weighted, {"norm": "zscore", "missing": "zero"}),
])
def test_array_path_equals_general_path(fuse, kwargs, monkeypatch):
    import evalkit.nodes.fusion as fusion

    rng = random.Random(1402)
    cases = [_realistic_case(rng) for _ in range(400)]
    limits = [rng.choice([None, 1, 5, 100]) for _ in cases]
    fast = [fuse(r, w, limit=lim, **kwargs) for (r, w), lim in zip(cases, limits)]
    # the columns a shared channel search hands over (nodes/retrieve.py) give the same again
    given = [fuse(r, w, limit=lim, columns=[fusion.Columns.of(x) for x in r], **kwargs)
             for (r, w), lim in zip(cases, limits)]
    monkeypatch.setattr(fusion, "_two_channels", lambda columns: None)  # every call takes the fsum path
    slow = [fuse(r, w, limit=lim, **kwargs) for (r, w), lim in zip(cases, limits)]
    assert given == fast
    for got, expected in zip(fast, slow):
        assert got == expected  # same passages, same order, bit-identical scores
        assert [math.copysign(1.0, h.score) for h in got] == [math.copysign(1.0, h.score) for h in expected]
        assert all(type(h.score) is float for h in got)
        assert [h.rounded for h in got] == [h.rounded for h in expected]  # Hit.many rounds in bulk


ALL_FUSIONS = [(rrf, {"k": 60}), (rrf, {"k": 0}), (weighted, {"norm": "minmax", "missing": "min"}),
               (weighted, {"norm": "zscore", "missing": "zero"})]


def test_a_union_made_once_serves_every_fusion_of_the_same_rankings():
    # a sweep's variants fuse the same shared channel searches with their own method, weights and
    # limit: the union the first one makes (Columns.unions) must give each the answer fresh columns give,
    # whichever order the rankings come in, and a ranking fused with itself
    import evalkit.nodes.fusion as fusion

    rng = random.Random(77)
    for _ in range(150):
        rankings, _ = _realistic_case(rng)
        cols = [fusion.Columns.of(r) for r in rankings]
        orders = [list(range(len(rankings))), list(range(len(rankings)))[::-1], [0, 0]]
        for order in orders:
            rs, cs = [rankings[i] for i in order], [cols[i] for i in order]
            for fuse, kwargs in ALL_FUSIONS:
                w = [rng.choice([0.3, 1.0, 2.0]) for _ in rs]
                lim = rng.choice([None, 1, 5, 100])
                fresh = fuse(rs, w, limit=lim, columns=[fusion.Columns.of(r) for r in rs], **kwargs)
                assert fuse(rs, w, limit=lim, columns=cs, **kwargs) == fresh
        if all(c.unique for c in cols):
            assert cols[0].unions  # the union was kept for the next variant
        assert not any(c is cols[0] for rest, _ in cols[0].unions.values() for c in rest)  # never itself
        if all(c.unique for c in cols):  # so were the normalised scores (Columns.normed), read-only
            assert set(cols[0].normed) == {"minmax", "zscore"}
            assert not any(a.flags.writeable for c in cols for a in c.normed.values())


def test_array_path_leaves_the_odd_cases_to_the_general_path():
    # a passage twice in one channel, three channels, a NaN score: the general path's answer, exactly
    twice = [Hit("a", "a", 0.9), Hit("a", "a", 0.8), Hit("b", "b", 0.1)]
    assert rrf([twice], [1.0]) == [Hit("a", "a", 1 / 61 + 1 / 62), Hit("b", "b", 1 / 63)]
    three = rrf([DENSE, BM25, DENSE], [1.0, 1.0, 1.0])
    assert three[0].doc_id == "c" and three[0].score == math.fsum([1 / 63, 1 / 61, 1 / 63])
    nan = weighted([hits(("a", float("nan")), ("b", 1.0)), BM25], [1.0, 1.0])
    assert any(math.isnan(h.score) for h in nan)
    with pytest.raises(ValueError):  # c is in both channels: fsum of +inf and -inf, as before
        rrf([DENSE, BM25], [float("inf"), -float("inf")])


def test_columns_must_describe_the_rankings():
    from evalkit.nodes.fusion import Columns

    with pytest.raises(ValueError, match="columns do not describe the rankings"):
        rrf([DENSE, BM25], [1.0, 1.0], columns=[Columns.of(BM25), Columns.of(DENSE)])
    shared = Columns.of(DENSE)
    assert shared.ids == ("a#0", "b#0", "c#0") and shared.unique and not shared.scores.flags.writeable
    assert Columns.of([Hit("a", "a", "high")]).scores is None  # not a number: the general path decides
