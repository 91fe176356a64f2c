"""The graph engine: edges, routes, next(), traces, failures, max_steps, state isolation."""
from __future__ import annotations

import pytest

from evalkit.graph import END, START, Graph, Node, NodeParams, Route, initial_state, register_node
from evalkit.graph.schema import declare_field
from evalkit.records import Hit

# toy fields, declared the way a plugin declares its own
declare_field("n", int, "test counter")
declare_field("hits", list[Hit], "test ranking")
declare_field("secret_field", int, "a field the Undeclared node writes without declaring it")


class CountParams(NodeParams):
    step: int = 1


@register_node
class Count(Node):
    """Increments state['n'] (a toy node for engine tests)."""

    type = "test_count"
    reads = ("question",)
    optional_reads = ("n",)
    writes = ("n", "hits")
    Params = CountParams

    def run(self, state):
        n = state.get("n", 0) + self.params.step
        return {"n": n, "hits": [Hit(f"d{n}#0", f"d{n}", 1.0 / n)]}


class Boom(Node):
    type = "test_boom"
    writes = ("n",)

    def run(self, state):
        raise RuntimeError("model server down")


class Sloppy(Node):
    """Breaks the contract: mutates a list in the state in place."""

    type = "test_sloppy"
    reads = ("hits",)
    writes = ("hits",)

    def run(self, state):
        state["hits"].append(Hit("x#0", "x", 0.0))
        return {}


class Undeclared(Node):
    type = "test_undeclared"
    writes = ("n",)

    def run(self, state):
        return {"secret_field": 1}


class Jump(Node):
    """Chooses its successor itself through next()."""

    type = "test_jump"
    writes = ()
    optional_reads = ("n",)

    def run(self, state):
        return {}

    def next(self, state):
        return "b" if state["n"] < 3 else ""


def count(name: str, step: int = 1) -> Count:
    return Count(name, CountParams(step=step))


def run(graph: Graph):
    return graph.run(initial_state("q1", "what?", "en"))


def test_default_edges_run_in_order_and_trace_every_step():
    g = Graph("g", {"a": count("a"), "b": count("b", 10)}, {START: "a", "a": "b", "b": END})
    out = run(g)
    assert out.error is None and out.state["n"] == 11
    assert [(e.node, e.step, e.edge, e.edge_reason) for e in out.trace] == [("a", 0, "b", "default"),
                                                                              ("b", 1, END, "default")]
    first = out.trace[0]
    assert first.wrote == {"n": 1, "hits": [["d1#0", "d1", 1.0]]}  # ids and scores, compact
    assert first.duration_ms >= 0 and first.started_at > 1e9 and first.type == "test_count"


def test_route_is_data_and_trace_names_the_condition():
    g = Graph("g", {"a": count("a"), "b": count("b"), "c": count("c", 100)},
              {START: "a", "a": "c", "b": END, "c": END}, routes={"a": Route("n", {1: "b"})})
    out = run(g)
    assert [e.node for e in out.trace] == ["a", "b"]
    assert out.trace[0].edge_reason == "condition n=1"


def test_next_overrides_routes_and_default():
    g = Graph("g", {"a": count("a"), "j": Jump("j", NodeParams()), "b": count("b")},
              {START: "a", "a": "j", "j": END, "b": "j"})
    out = run(g)
    assert [e.node for e in out.trace] == ["a", "j", "b", "j", "b", "j"]
    assert out.trace[1].edge_reason == "next()" and out.trace[-1].edge_reason == "default"
    assert out.state["n"] == 3


def test_a_raising_node_fails_the_query_not_the_run():
    g = Graph("g", {"a": count("a"), "x": Boom("x", NodeParams())}, {START: "a", "a": "x", "x": END})
    out = run(g)
    assert out.failed
    assert out.error == {"node": "x", "step": 1, "type": "RuntimeError", "message": "model server down"}
    assert out.trace[-1].error == {"type": "RuntimeError", "message": "model server down"}
    assert out.state["n"] == 1  # what finished before the failure is kept
    again = run(g)  # the graph is reusable after a failure
    assert again.failed and again.state["n"] == 1


def test_on_error_edge_takes_the_fallback_path():
    g = Graph("g", {"x": Boom("x", NodeParams()), "fb": count("fb")}, {START: "x", "x": END, "fb": END},
              on_error={"x": "fb"})
    out = run(g)
    assert not out.failed and out.state["n"] == 1
    assert out.trace[0].edge == "fb" and out.trace[0].edge_reason == "on_error"
    assert out.state["node_errors"] == [{"node": "x", "type": "RuntimeError", "message": "model server down"}]


def test_max_steps_stops_a_runaway_loop_with_a_recorded_error():
    g = Graph("g", {"a": count("a")}, {START: "a", "a": "a"}, max_steps=5)
    out = run(g)
    assert out.failed and out.error["type"] == "MaxStepsExceeded"
    assert len(out.trace) == 5 and out.state["n"] == 5


def test_each_query_runs_on_its_own_copy_of_the_state():
    shared = {"query_id": "q", "question": "?", "lang": "en", "queries": ["?"], "hits": [Hit("a#0", "a", 1.0)]}
    g = Graph("g", {"a": count("a")}, {START: "a", "a": END})
    out = g.run(shared)
    out.state["queries"].append("changed")
    assert shared["queries"] == ["?"] and shared["hits"] == [Hit("a#0", "a", 1.0)]


def test_in_place_mutation_is_caught_in_strict_mode():
    g = Graph("g", {"a": count("a"), "s": Sloppy("s", NodeParams())}, {START: "a", "a": "s", "s": END},
              check_mutation=True)
    out = run(g)
    assert out.failed and "mutated the state in place" in out.error["message"]


def test_undeclared_writes_are_refused():
    g = Graph("g", {"u": Undeclared("u", NodeParams())}, {START: "u", "u": END})
    out = run(g)
    assert out.failed and "undeclared field(s) ['secret_field']" in out.error["message"]


def test_next_to_unknown_node_is_an_error():
    class Lost(Jump):
        type = "test_lost"

        def next(self, state):
            return "nowhere"

    g = Graph("g", {"l": Lost("l", NodeParams())}, {START: "l", "l": END})
    out = g.run({**initial_state("q", "?", "en"), "n": 0})
    assert out.failed and "unknown node 'nowhere'" in out.error["message"]


def test_register_refuses_a_second_class_under_one_name():
    class Other(Node):
        type = "test_count"

    with pytest.raises(TypeError, match="registered twice"):
        register_node(Other)


def test_the_start_state_is_copied_as_deepcopy_copies_it():
    import copy
    import random

    from evalkit.graph.graph import _deep_copied

    class Box:
        def __init__(self, items: list) -> None:
            self.items = items

    def value(rng: random.Random, depth: int = 0):
        kind = rng.choice(["str", "int", "float", "bool", "none"] + (["list", "dict", "tuple"] if depth < 3 else []))
        if kind == "list":
            return [value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
        if kind == "dict":
            return {f"k{i}": value(rng, depth + 1) for i in range(rng.randint(0, 3))}
        if kind == "tuple":
            return tuple(value(rng, depth + 1) for _ in range(rng.randint(0, 3)))
        return {"str": "s", "int": 3, "float": -0.0, "bool": True, "none": None}[kind]

    rng = random.Random(5)
    for _ in range(300):
        state = {"question": "q", "history": [{"role": "user", "content": "hi"}], "v": value(rng)}
        made = _deep_copied(state)
        assert made == copy.deepcopy(state) and made is not state and made["history"][0] is not state["history"][0]
        made["history"][0]["content"] = "changed"
        assert state["history"][0]["content"] == "hi"
    box, tags = Box([1, [2]]), {"a", "b"}
    made = _deep_copied({"attributes": {"box": box, "tags": tags}})
    assert made["attributes"]["box"] is not box and made["attributes"]["box"].items == [1, [2]]
    assert made["attributes"]["box"].items is not box.items and made["attributes"]["tags"] == tags
    assert made["attributes"]["tags"] is not tags
