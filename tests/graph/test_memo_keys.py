"""The work memo's cheap keys: exact (equal key only for equal values of equal types), unpicklable
values never shared, part identities remembered per node only while they are still right, and the
trace's fast path for rankings giving exactly what the general one gives."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from evalkit.frozen import FrozenList
from evalkit.graph.memo import SharedRanking, WorkMemo, detached, inputs_digest, part_identity
from evalkit.graph.node import Node
from evalkit.graph.state import compact
from evalkit.records import Hit

DISTINCT = [1, 1.0, True, "1", 0, 0.0, -0.0, False, None, "", [], (), {}, [1], (1,), ["1"], [[1]], {"a": 1},
            {"a": 1.0}, {"a": 1, "b": 2}, {"b": 2, "a": 1}, Hit("p", "d", 0.5), [Hit("p", "d", 0.5)],
            (Hit("p", "d", 0.5),), [Hit("p", "d", np.float32(0.5))], [Hit("p", "d", np.float64(0.5))],
            [Hit("p", "d", 0.5), Hit("q", "d", 0.25)], [Hit("q", "d", 0.25), Hit("p", "d", 0.5)],
            [Hit("p", "d", -0.0)], [Hit("p", "d", 0.0)], [Hit("p", "e", 0.5)], np.float64(1.0), b"1",
            frozenset({1}), math.inf, "\x00absent", ["a", "b"], [("a",), "b"], [["a"], "b"], ("hits", "p"),
            SharedRanking([Hit("p", "d", 0.5)]), SharedRanking(), FrozenList([Hit("p", "d", 0.5)]), FrozenList([1]),
            FrozenList()]


def test_keys_of_different_values_or_types_differ():
    keys = [inputs_digest([("f", v)]) for v in DISTINCT]
    assert None not in keys
    for i, a in enumerate(keys):
        for j, b in enumerate(keys):
            if i != j:
                assert a != b, (DISTINCT[i], DISTINCT[j])


def test_equal_values_built_apart_have_equal_keys():
    def build() -> list:
        return [("queries", ["what is x?"]), ("retrieved", [Hit(f"p{i}", f"d{i}", 1 / (i + 1)) for i in range(50)]),
                ("attributes", {"dept": "hr", "n": 3, "w": 0.5}), ("pair", (1, "a", None))]
    first, second = inputs_digest(build()), inputs_digest(build())
    assert first == second and hash(first) == hash(second)
    assert inputs_digest(build()[:3]) != first  # the field names are part of the key


def test_unpicklable_values_are_never_shared():
    assert inputs_digest([("f", lambda: 1)]) is None
    assert inputs_digest([("f", [1, {"x": lambda: 1}])]) is None
    memo, calls = WorkMemo(), []
    for _ in range(2):
        memo.shared("part", (lambda: 1,), lambda: calls.append(1) or len(calls))
    assert calls == [1, 1] and memo.part_hits == 0 and not memo.has("part", (lambda: 1,))


def test_the_memo_shares_only_equal_inputs():
    memo, calls = WorkMemo(), []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    assert memo.shared("p", ("q", 1), compute) == 1
    assert memo.shared("p", ("q", 1), compute) == 1  # equal inputs: reused
    assert memo.shared("p", ("q", 1.0), compute) == 2  # 1.0 == 1, but another type: computed
    assert memo.shared("p", ("q", True), compute) == 3
    assert memo.shared("other", ("q", 1), compute) == 4
    assert (memo.part_hits, memo.part_misses) == (1, 4)


class _Parted(Node):
    type = "test_parted"

    @classmethod
    def shared_parts(cls, params):
        return [({"search": "bm25", "k": 10}, ("queries",)), ({"search": "dense", "k": 5}, ("queries",))]


def test_part_identities_are_remembered_only_while_right():
    node = _Parted("n", None)
    node.context = {"chunking": {"method": "document"}, "seed": 1}
    parts = node.parts()
    assert node.parts() is parts  # computed once
    for part, _ in parts:
        assert node.part_identity(part) == part_identity(part, node.context)
    node.context = {"chunking": {"method": "document"}, "seed": 2}  # a scheduler hands its context on
    for part, _ in parts:
        assert node.part_identity(part) == part_identity(part, node.context)
    fresh = {"search": "bm25", "k": 11}  # not one of parts(): hashed anew every time, never remembered
    assert node.part_identity(fresh) == part_identity(fresh, node.context)
    assert all(p is not fresh for p, _, _ in node._part_ids)
    assert len(node._part_ids) == 2


def test_compact_of_a_ranking_equals_the_general_path():
    hits = [Hit(f"p{i}", f"d{i}", 1 / 3 + i) for i in range(150)]
    general = {"n": 150, "first": [compact(h) for h in hits[:100]]}
    assert compact(hits) == general
    assert compact(hits[:7]) == [compact(h) for h in hits[:7]]
    mixed = [hits[0], "text", 0.1234567891, hits[1]]
    assert compact(mixed) == [compact(hits[0]), "text", 0.123457, compact(hits[1])]
    assert compact([]) == [] and compact(()) == []


@pytest.mark.parametrize("value", [[Hit("p", "d", 0.5)] * 3, {"a": [1, 2.5, "x"]}, ("t", None)])
def test_keys_are_pickle_free_for_plain_data(value, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("pickled")
    monkeypatch.setattr(pickle, "dumps", refuse)
    assert inputs_digest([("f", value)]) is not None


def test_detached_copies_every_container_and_shares_the_immutable_leaves():
    from evalkit.graph.memo import detached
    from evalkit.records import Hit

    hit = Hit("p1", "d1", 0.5)
    value = {"r": [hit, hit], "nested": [[1, "a"], {"k": [2.0, None, True]}], "t": (3, [4])}
    copy = detached(value)
    assert copy == value
    assert copy["r"] is not value["r"] and copy["r"][0] is hit  # frozen Hits are shared
    assert copy["nested"][0] is not value["nested"][0]
    assert copy["nested"][1]["k"] is not value["nested"][1]["k"]
    assert copy["t"][1] is not value["t"][1]
    copy["nested"][1]["k"].append("x")
    assert value["nested"][1]["k"] == [2.0, None, True]  # a change to the copy never reaches the original


def test_a_shared_ranking_refuses_every_change_and_otherwise_is_a_list():
    import copy
    import json

    import orjson

    hits = [Hit(f"p{i}", f"d{i}", 1 / (i + 3)) for i in range(5)]
    shared = SharedRanking(hits)
    changes = [lambda r: r.append(hits[0]), lambda r: r.extend(hits), lambda r: r.insert(0, hits[0]),
               lambda r: r.pop(), lambda r: r.remove(hits[0]), lambda r: r.clear(), lambda r: r.sort(key=str),
               lambda r: r.reverse(), lambda r: r.__setitem__(0, hits[1]), lambda r: r.__delitem__(0),
               lambda r: r.__setitem__(slice(0, 2), []), lambda r: r.__iadd__(hits), lambda r: r.__imul__(2)]
    for change in changes:
        with pytest.raises(TypeError, match="copy it first"):
            change(shared)
    assert shared == hits and list(shared) == hits  # nothing changed
    assert type(shared[1:3]) is list and shared[1:3] == hits[1:3] and type(shared + hits) is list
    twin = pickle.loads(pickle.dumps(shared))  # what a Ray worker sends back
    assert type(twin) is SharedRanking and twin == hits
    for mine in (copy.copy(shared), copy.deepcopy(shared), shared.copy(), list(shared), shared[:]):
        assert type(mine) is list and mine == hits  # a copy is a plain list, yours to change
        mine.append(hits[0])
    nested = copy.deepcopy({"t": FrozenList([FrozenList(["p", 0.5])])})
    assert type(nested["t"]) is list and type(nested["t"][0]) is list and nested == {"t": [["p", 0.5]]}
    plain = [[1, "a"], 2.5]
    assert json.dumps(FrozenList(plain)) == json.dumps(plain)
    assert orjson.dumps(FrozenList(plain)) == orjson.dumps(plain)
    with pytest.raises(TypeError, match="Hits only"):
        SharedRanking([["p", "d", 0.5]])


def test_compact_of_a_shared_ranking_is_made_once_and_equals_the_general_path():
    hits = [Hit(f"p{i}", f"d{i % 7}", 1 / 3 + i) for i in range(100)]
    shared = SharedRanking(hits)
    first = compact(shared)
    assert first == compact(hits) == [compact(h) for h in hits]
    assert compact(shared) is first and isinstance(first, FrozenList)  # every trace holds the same frozen list
    assert compact({"bm25": shared}) == {"bm25": first}
    longer = SharedRanking(hits + [Hit("x", "y", 0.0)] * 50)
    cut = compact(longer)
    assert cut == compact(list(longer)) and cut["n"] == 150
    assert compact(longer) is not cut  # a cut form (a dict anyone could change) is made again each time
    assert compact(SharedRanking()) == []


def test_detached_keeps_a_shared_ranking_and_copies_what_holds_it():
    shared = SharedRanking([Hit("p", "d", 0.5)])
    value = {"channel_hits": {"bm25": shared}, "retrieved": [Hit("p", "d", 0.5)]}
    copy = detached(value)
    assert copy == value and copy["channel_hits"] is not value["channel_hits"]
    assert copy["channel_hits"]["bm25"] is shared and copy["retrieved"] is not value["retrieved"]


def test_retain_drops_only_work_whose_static_identity_no_later_variant_has():
    from evalkit.graph.memo import Stored, WorkKeys, WorkMemo

    memo = WorkMemo()
    for identity, base in (("full-a", "a"), ("full-b", "b")):
        memo.note_node(identity, base)
        memo.store(identity, {"question": "q"}, Stored({"x": 1}, [], 0.0))
    memo.store("full-unknown", {"question": "q"}, Stored({"x": 2}, [], 0.0))  # never noted: kept
    for part in ("p-used", "p-done", "p-foreign"):
        memo.shared(part, ["q"], lambda: [1])
    memo.retain(WorkKeys(nodes=frozenset({"a"}), parts=frozenset({"p-used"}),
                         known_parts=frozenset({"p-used", "p-done"})))
    assert set(memo._nodes) == {"full-a", "full-unknown"}
    assert {k[0] for k in memo._parts} == {"p-used", "p-foreign"}
    assert memo.lookup("full-a", {"question": "q"}) is not None and memo.lookup("full-b", {"question": "q"}) is None
