"""Hit keeps a frozen dataclass's behaviour with its faster __init__ and its rounded score."""
from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from evalkit.records import Hit


def test_hit_behaves_as_the_frozen_dataclass_it_declares():
    h = Hit("p1#0", "p1", 0.123456789)
    assert (h.id, h.doc_id, h.score) == ("p1#0", "p1", 0.123456789)
    assert repr(h) == "Hit(id='p1#0', doc_id='p1', score=0.123456789)"
    assert h.rounded == round(0.123456789, 6) == 0.123457
    assert h.to_dict() == {"id": "p1#0", "doc_id": "p1", "score": 0.123457}
    # the cached rounding is not a field: equality, hashing, replace, pickling and copies ignore it
    fresh = Hit("p1#0", "p1", 0.123456789)
    assert h == fresh and hash(h) == hash(fresh) and h != Hit("p1#0", "p1", 0.5)
    assert [f.name for f in dataclasses.fields(h)] == ["id", "doc_id", "score"]
    assert dataclasses.astuple(h) == ("p1#0", "p1", 0.123456789)
    moved = dataclasses.replace(h, score=2.0000004)
    assert moved.rounded == 2.0 and h.rounded == 0.123457
    for other in (pickle.loads(pickle.dumps(h)), copy.deepcopy(h), copy.copy(h)):
        assert other == h and other.rounded == h.rounded
    with pytest.raises(dataclasses.FrozenInstanceError):
        h.score = 1.0  # type: ignore[misc]
    assert Hit(id="a", doc_id="b", score=1).score == 1  # keywords, and the value as given
    import numpy as np

    for score in (1, np.float32(0.1234567), np.float64(2.5e-7), 0.30000000000000004):
        assert Hit("a", "b", score).rounded == round(float(score), 6)
        assert type(Hit("a", "b", score).rounded) is float
    # slotted: no per-hit __dict__ (rankings hold millions), and the rounding is not an attribute to set
    assert not hasattr(h, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        h._rounded = 5.0  # type: ignore[misc]
    lazy = Hit("a", "b", np.float64(0.1234567))
    assert pickle.loads(pickle.dumps(lazy)).rounded == lazy.rounded == 0.123457


def _hard_floats(rng) -> list[float]:
    """Scores a ranking holds (cosines, BM25, RRF, fused sums) and the values where rounding to 6
    decimals is hard: exact and near ties (x * 10^6 at or next to k + 1/2), huge, tiny, subnormal,
    signed zeros, non-finite."""
    import math

    import numpy as np

    vals = [rng.uniform(-1, 1) for _ in range(3000)] + [rng.uniform(0, 60) for _ in range(3000)]
    vals += [1 / (60 + rng.randint(1, 100)) + 1 / (60 + rng.randint(1, 100)) for _ in range(2000)]
    for _ in range(3000):  # (k + 1/2) / 10^6 and its neighbours, the ties of the decimal rounding
        x = (rng.randint(-10**9, 10**9) + 0.5) / 1e6
        vals += [x, math.nextafter(x, math.inf), math.nextafter(x, -math.inf)]
    vals += [j / 128 for j in range(-300, 300)]  # x * 10^6 exactly k + 1/2: ties to even
    vals += [rng.uniform(-1, 1) * 10.0 ** rng.randint(-330, 308) for _ in range(3000)]
    vals += [rng.choice([1, -1]) * rng.uniform(2.0**51, 2.0**55) / 1e6 for _ in range(2000)]  # x * 10^6 near 2^52
    vals += [0.0, -0.0, 5e-324, -5e-324, 1e-7, -1e-7, 5e-7, -5e-7, 4.5e9, 2.0**52, 1e300, -1e300,
             math.inf, -math.inf, math.nan, float(np.finfo(np.float64).max)]
    return vals


def test_round6_is_round_bit_for_bit():
    import math
    import random

    import numpy as np

    from evalkit.records import round6

    vals = _hard_floats(random.Random(606))
    got = round6(np.asarray(vals, dtype=np.float64))
    for v, g in zip(vals, got):
        want = round(v, 6)
        assert type(g) is float
        assert (math.isnan(g) and math.isnan(want)) or (g == want and math.copysign(1, g) == math.copysign(1, want)), v


def test_hits_made_in_bulk_equal_hits_made_one_by_one():
    import math
    import random

    import numpy as np

    vals = [v for v in _hard_floats(random.Random(7)) if not math.isnan(v)]  # NaN != NaN: compared apart below
    ids = [f"p{i}#0" for i in range(len(vals))]
    docs = [f"p{i}" for i in range(len(vals))]
    bulk = Hit.many(ids, docs, np.asarray(vals, dtype=np.float64))
    one = [Hit(i, d, s) for i, d, s in zip(ids, docs, vals)]
    assert bulk == one
    assert [h.rounded for h in bulk] == [h.rounded for h in one]
    assert all(type(h.score) is float for h in bulk)
    h = bulk[0]
    for other in (pickle.loads(pickle.dumps(h)), copy.deepcopy(h), dataclasses.replace(h)):
        assert other == h and other.rounded == h.rounded
    with pytest.raises(dataclasses.FrozenInstanceError):
        h.score = 1.0  # type: ignore[misc]
    nan = Hit.many(["a"], ["a"], np.asarray([float("nan")]))[0]
    assert nan.score != nan.score and nan.rounded != nan.rounded


def test_bulk_hits_refuse_columns_of_different_lengths():
    import numpy as np

    with pytest.raises(ValueError, match="2 ids, 1 document ids, 2 scores"):
        Hit.many(["a", "b"], ["a"], np.asarray([1.0, 2.0]))


def test_triples_and_document_rankings_read_what_the_properties_give():
    """Hit.triples / Hit.by_document read the rounded score's slot directly: the same values as the
    property, for float scores (rounded when made) and others (rounded on first use), duplicates kept
    out of the document ranking in first-seen order."""
    import numpy as np

    hits = [Hit("p1#0", "p1", 0.1234567), Hit("p2#0", "p2", np.float32(0.5)), Hit("p1#1", "p1", 3),
            Hit("p3#0", "p3", np.float64(2.0000004)), Hit("p2#1", "p2", 0.0)]
    expected = [[h.id, h.doc_id, round(float(h.score), 6)] for h in hits]
    assert Hit.triples(hits) == expected
    assert Hit.triples(iter(hits)) == expected  # any iterable
    assert [type(t[2]) for t in Hit.triples(hits)] == [float] * len(hits)
    assert Hit.by_document(hits) == [{"doc_id": "p1", "score": 0.123457}, {"doc_id": "p2", "score": 0.5},
                                     {"doc_id": "p3", "score": 2.0}]
    assert Hit.triples([]) == [] and Hit.by_document([]) == []


def test_a_run_summary_writes_every_variant_as_its_own_full_copy_would():
    """``RunSummary.to_dict`` shares the variants' values instead of deep-copying them (the file is
    rewritten after every variant); what it holds, and the file written from it, are unchanged."""
    import json

    from evalkit.records import EvalSetRef, RunSummary, VariantSummary
    from evalkit.runstore import write_json_atomic

    variants = {
        "a": VariantSummary(metrics={"recall@20": 0.5, "hit@5": 1.0}, n_failed=0, n_queries=2, n_excluded=1,
                            index={"bm25": {"stats": {"terms": 12, "nested": [1, {"x": 2.5e-7}]}}},
                            timing={"retrieve": 0.25}, by_type={"multi_hop": {"recall@20": 0.25}},
                            usage={"generate": {"prompt_tokens": 10.0}}, corrected={"faithfulness": {"mean": 0.9}},
                            source={"kind": "answers", "file": "答案.jsonl"}),
        "b": VariantSummary(metrics={}, n_failed=1, n_queries=2, n_excluded=0),
    }
    summary = RunSummary(eval_set=EvalSetRef(name="e", version=1, sha256="a" * 64, n_queries=2), variants=variants,
                         status="running", pending=["c"])
    d = summary.to_dict()
    assert d["variants"] == {k: dataclasses.asdict(v) for k, v in variants.items()}
    assert d["pending"] == ["c"] and d["partial"] is True
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "summary.json"
        write_json_atomic(path, d)
        full = {**d, "variants": {k: dataclasses.asdict(v) for k, v in variants.items()}}
        assert json.loads(path.read_text(encoding="utf-8")) == full
        assert path.read_text(encoding="utf-8") == json.dumps(full, indent=2, ensure_ascii=False).replace(
            "2.5e-07", "2.5e-7") + "\n"  # the one float orjson writes in another (equal) form
