"""``weighted_documents`` (and ``weighted_documents_grid``, many weights at once): the document ranking of ``weighted``'s best passages, read from the columns without
building a ``Hit`` (what the fusion weight sweep of ``evalkit compare`` reads for every weight and query)."""
from __future__ import annotations

import random

import pytest

from evalkit.nodes.fusion import Columns, weighted, weighted_documents, weighted_documents_grid
from evalkit.records import Hit


def _ranking(rng: random.Random, n: int, tied: bool) -> list[Hit]:
    pids = rng.sample(range(400), n)
    return [Hit(f"p{p}", f"d{p // 3}", float(rng.randrange(5)) if tied else rng.uniform(-2, 9)) for p in pids]


@pytest.mark.parametrize("seed", range(30))
def test_it_is_weighted_read_by_document(seed):
    rng = random.Random(seed)
    a, b = _ranking(rng, rng.randrange(1, 120), seed % 2 == 0), _ranking(rng, rng.randrange(0, 120), seed % 3 == 0)
    cols = [Columns.of(a), Columns.of(b)]
    for w in (0.0, 0.1, 0.35, 1.0, -0.5):
        for norm in ("minmax", "zscore"):
            for missing in ("min", "zero"):
                for limit in (None, 1, 20, 100):
                    hits = weighted([a, b], [w, 1 - w], norm, missing, limit=limit)
                    expected = [(d["doc_id"], d["score"]) for d in Hit.by_document(hits)]
                    assert weighted_documents(cols, [w, 1 - w], norm, missing, limit) == expected


def test_a_grid_of_weights_is_each_weight_alone():
    """Every weight of a sweep's grid, fused in one pass, gives what ``weighted`` gives for it alone; a weight whose
    sums overflow in an array (1e308 x a score above 1.8) is None, left to ``weighted``'s general path, the
    others not."""
    left = 0
    for seed in range(20):
        rng = random.Random(100 + seed)
        a = _ranking(rng, rng.randrange(1, 120), seed % 2 == 0)
        b = _ranking(rng, rng.randrange(0, 120), seed % 3 == 0)
        cols = [Columns.of(a), Columns.of(b)]
        grid = [0.0, 0.05, 0.1, 0.35, 0.5, 0.7, 0.95, 1.0, -0.5, 1e308, 0.3]
        for norm in ("minmax", "zscore"):
            for missing in ("min", "zero"):
                for limit in (None, 1, 20, 100):
                    found = weighted_documents_grid(cols, [[w, 1 - w] for w in grid], norm, missing, limit)
                    assert found is not None and len(found) == len(grid)
                    for w, docs in zip(grid, found):
                        if docs is None:  # 1e308 x a score past 1.8 is inf in an array: weighted's general path (fsum)
                            assert w == 1e308
                            left += 1
                            continue
                        hits = weighted([a, b], [w, 1 - w], norm, missing, limit=limit)
                        assert docs == [(d["doc_id"], d["score"]) for d in Hit.by_document(hits)]
    assert left > 0  # the overflow case was met


def test_it_leaves_the_general_path_to_weighted():
    a = [Hit("p1", "d1", 1.0), Hit("p2", "d1", 0.5)]
    twice = [Hit("p1", "d1", 1.0), Hit("p1", "d1", 0.5)]          # a passage listed twice
    assert weighted_documents([Columns.of(a), Columns.of(twice)], [0.5, 0.5]) is None
    nan = [Hit("p3", "d2", float("nan")), Hit("p4", "d2", 1.0)]   # a sum that is not finite
    assert weighted_documents([Columns.of(a), Columns.of(nan)], [0.5, 0.5]) is None
    assert weighted_documents([Columns.of(a)] * 3, [0.3, 0.3, 0.4]) is None   # three channels
    with pytest.raises(ValueError, match="missing-score rule"):
        weighted_documents([Columns.of(a), Columns.of(a)], [0.5, 0.5], missing="max")
    assert weighted_documents_grid([Columns.of(a), Columns.of(twice)], [[0.5, 0.5], [0.2, 0.8]]) is None
    assert weighted_documents_grid([Columns.of(a), Columns.of(nan)], [[0.5, 0.5], [0.2, 0.8]]) == [None, None]
    assert weighted_documents_grid([Columns.of(a), Columns.of(a)], [[0.5, 0.5, 0.1]]) is None   # a weight too many


def test_columns_of_a_trace_channel_list_are_the_columns_of_its_hits():
    items = [["p1", "d1", 0.5], [7, 8, 2], ["p3", "d1", -0.0], ["p1", "d2", 1e-9]]
    hits = [Hit(str(p), str(d), float(s)) for p, d, s in items]
    a, b = Columns.of_items(items), Columns.of(hits)
    assert (a.ids, a.docs, a.unique) == (b.ids, b.docs, b.unique) and a.scores.tobytes() == b.scores.tobytes()
    assert Columns.of_items([]).ids == () and not a.unique
    with pytest.raises(ValueError):
        Columns.of_items([["p1", "d1", "high"]])   # as Hit(..., float("high")) raises
