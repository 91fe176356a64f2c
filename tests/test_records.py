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
