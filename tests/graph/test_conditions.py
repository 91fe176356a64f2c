"""Conditions as data (evalkit.graph.conditions): grammar, semantics, type checks, routes that use them."""
from __future__ import annotations

import datetime as dt
import textwrap

import pytest

from evalkit.errors import ConfigError
from evalkit.graph import END, Graph, Node, NodeParams, register_node
from evalkit.graph.conditions import (
    AllOf,
    AnyOf,
    Compare,
    ConditionError,
    Not,
    Ref,
    check_types,
    describe,
    evaluate,
    fields,
    parse,
    resolve,
    to_data,
)
from evalkit.graph.config import build_graph, load_graph_config
from evalkit.graph.graph import Route


def holds(raw, **values):
    return evaluate(parse(raw), values.get)


def test_comparisons_follow_their_documented_semantics():
    assert holds({"field": "x", "lt": 0.7}, x=0.69) and not holds({"field": "x", "lt": 0.7}, x=0.7)
    assert holds({"field": "x", "le": 0.7}, x=0.7) and not holds({"field": "x", "le": 0.7}, x=0.71)
    assert holds({"field": "x", "gt": 3}, x=4) and not holds({"field": "x", "gt": 3}, x=3)
    assert holds({"field": "x", "ge": 3}, x=3.0)  # int and float compare as numbers
    assert holds({"field": "x", "eq": "vector"}, x="vector") and holds({"field": "x", "ne": "vector"}, x="bm25")
    assert holds({"field": "x", "in": ["a", "b"]}, x="b") and not holds({"field": "x", "in": ["a", "b"]}, x="c")
    assert holds({"field": "d", "ge": "2025-06-01"}, d="2025-11-01")  # ISO dates compare as strings
    assert not holds({"field": "d", "ge": "2025-06-01"}, d="2025-03-01")


def test_null_and_absent_values():
    # absent reads as null: ordered comparisons and `in` are false, eq null holds, ne negates eq
    for op in ("lt", "le", "gt", "ge"):
        assert not holds({"field": "x", op: 1})
    assert not holds({"field": "x", "in": [1, 2]})
    assert holds({"field": "x", "eq": None}) and not holds({"field": "x", "ne": None})
    assert holds({"field": "x", "ne": "acme"})
    assert holds({"field": "x", "exists": False}) and not holds({"field": "x", "exists": True})
    assert holds({"field": "x", "exists": True}, x=0)


def test_booleans_are_not_numbers():
    assert not holds({"field": "x", "eq": 1}, x=True)
    assert holds({"field": "x", "eq": True}, x=True)
    with pytest.raises(ConditionError, match="numbers compare with numbers"):
        holds({"field": "x", "lt": 1}, x=True)
    with pytest.raises(ConditionError):
        holds({"field": "x", "lt": 1}, x="0.5")  # a string is not a number


def test_any_all_not_combine():
    gate = {"any": [{"field": "n_relevant", "ge": 3}, {"field": "atoms_covered", "eq": True}]}
    assert holds(gate, n_relevant=3, atoms_covered=False)
    assert holds(gate, n_relevant=1, atoms_covered=True)
    assert not holds(gate, n_relevant=2, atoms_covered=False)
    both = {"all": [{"field": "a", "gt": 0}, {"not": {"field": "b", "eq": "x"}}]}
    assert holds(both, a=1, b="y") and not holds(both, a=1, b="x") and not holds(both, a=0, b="y")


@pytest.mark.parametrize("raw, path, message", [
    ({"field": "x", "lesser": 1}, "lesser", "unknown operator 'lesser'"),
    ({"field": "x", "lt": 1, "gt": 0}, "", "exactly one operator"),
    ({"field": "x"}, "", "exactly one operator"),
    ({"any": []}, "any", "non-empty list"),
    ({"any": [{"field": "x", "eq": 1}], "field": "y"}, "", "must stand alone"),
    ({"all": [{"field": "x", "eq": 1}, {"fild": "y", "eq": 2}]}, "all[1]", "no 'field'"),
    ({"field": "x", "in": []}, "in", "non-empty list"),
    ({"field": "x", "exists": "yes"}, "exists", "true or false"),
    ({"field": "x", "lt": [1]}, "lt", "number or a string"),
    ({"field": "x", "eq": {"from_record": "tenant"}}, "eq", "constant here"),
    ("x < 3", "", "expected a mapping"),
])
def test_bad_conditions_name_where_they_are_wrong(raw, path, message):
    with pytest.raises(ConditionError, match=message) as info:
        parse(raw)
    assert info.value.path == path


def test_type_checks_against_declared_types():
    types = {"rerank_top1": "float | None", "route": "str", "guard_triggered": "bool", "retrieved": "list[Hit]"}
    check_types(parse({"field": "rerank_top1", "lt": 0.7}), types)
    check_types(parse({"field": "rerank_top1", "eq": None}), types)
    check_types(parse({"field": "route", "in": ["vector", "bm25"]}), types)
    with pytest.raises(ConditionError, match="cannot compare it with 'low'"):
        check_types(parse({"field": "rerank_top1", "lt": "low"}), types)
    with pytest.raises(ConditionError, match="can never equal it") as info:
        check_types(parse({"any": [{"field": "route", "eq": "x"}, {"field": "guard_triggered", "eq": "yes"}]}), types)
    assert info.value.path == "any[1].eq"
    with pytest.raises(ConditionError, match="needs a number or a string"):
        check_types(parse({"field": "retrieved", "gt": 3}), types)
    with pytest.raises(ConditionError, match="did you mean 'rerank_top1'") as info:
        check_types(parse({"not": {"field": "rerank_top", "lt": 1}}), types)
    assert info.value.path == "not.field"


def test_refs_resolve_and_round_trip():
    raw = {"any": [{"field": "tenant", "eq": {"from_record": "tenant"}}, {"field": "tenant", "exists": False}],
           }
    cond = parse(raw, refs=True)
    assert cond == AnyOf((Compare("tenant", "eq", Ref("tenant")), Compare("tenant", "exists", False)))
    assert parse(to_data(cond), refs=True) == cond
    assert fields(cond) == ["tenant"]
    resolved = resolve(cond, {"tenant": "acme"})
    assert evaluate(resolved, {"tenant": "acme"}.get) and not evaluate(resolved, {"tenant": "globex"}.get)
    assert evaluate(resolved, {}.get)  # a shared document (no tenant)
    with pytest.raises(ConditionError, match="not resolved"):
        evaluate(cond, {}.get)
    assert parse({"field": "d", "ge": dt.date(2025, 6, 1)}) == Compare("d", "ge", "2025-06-01")
    assert isinstance(parse({"not": {"all": [{"field": "a", "eq": 1}]}}), Not)
    assert isinstance(parse({"all": [{"field": "a", "eq": 1}]}), AllOf)
    assert describe(parse({"field": "x", "lt": 0.7}), {"x": 0.5}.get) == "x=0.5 < 0.7"


# --- routes with conditions ------------------------------------------------------------------------

@register_node
class _Score(Node):
    """Writes rerank_top1 = params.score (a toy node)."""

    class Params(NodeParams):
        score: float | None = 0.5

    type = "test_cond_score"
    reads = ("question",)
    writes = ("rerank_top1",)

    def run(self, state):
        return {"rerank_top1": self.params.score}


@register_node
class _Mark(Node):
    type = "test_cond_mark"
    reads = ("question",)
    writes = ("route",)

    def run(self, state):
        return {"route": self.name}


def _graph(score):
    nodes = {"score": _Score("score", _Score.Params(score=score)), "retry": _Mark("retry", NodeParams()),
             "ok": _Mark("ok", NodeParams())}
    route = Route(when=((parse({"field": "rerank_top1", "lt": 0.7}), "retry"),
                        (parse({"field": "rerank_top1", "eq": None}), "retry")))
    return Graph("g", nodes, {"start": "score", "score": "ok", "retry": END, "ok": END}, routes={"score": route})


@pytest.mark.parametrize("score, target", [(0.5, "retry"), (0.7, "ok"), (0.95, "ok"), (None, "retry")])
def test_a_route_takes_the_first_condition_that_holds(score, target):
    out = _graph(score).run({"question": "q", "query_id": "1", "lang": "en"})
    assert out.state["route"] == target
    event = out.trace[0]
    assert event.edge == target
    assert event.edge_reason == ("default" if target == "ok" else
                                 f"condition rerank_top1={score!r} {'<' if score is not None else '=='} "
                                 f"{0.7 if score is not None else None}")


def _config(tmp_path, routes: str):
    path = tmp_path / "v.yaml"
    path.write_text(textwrap.dedent("""\
        name: v
        nodes:
          score: {type: test_cond_score}
          retry: {type: test_cond_mark}
          ok: {type: test_cond_mark}
        edges: {start: score, score: ok, retry: end, ok: end}
        routes:
        """) + textwrap.indent(textwrap.dedent(routes), "  "))
    return path


def test_a_when_route_loads_builds_and_runs(tmp_path):
    path = _config(tmp_path, """\
        score:
          when:
            - if: {any: [{field: rerank_top1, lt: 0.7}, {field: rerank_top1, eq: null}]}
              to: retry
        """)
    cfg = load_graph_config(path)
    assert cfg.routes["score"]["when"][0]["to"] == "retry"
    import yaml

    from evalkit.graph.config import config_from_dict

    again = config_from_dict(yaml.safe_load(cfg.to_yaml()))  # round-trips like every config
    assert again.to_dict() == cfg.to_dict() and again.sha256() == cfg.sha256()
    graph = build_graph(cfg)
    assert graph.run({"question": "q", "query_id": "1", "lang": "en"}).state["route"] == "retry"


@pytest.mark.parametrize("routes, line, where, message", [
    ("score:\n  when:\n    - if: {field: rerank_top, lt: 0.7}\n      to: retry\n", 10,
     "routes.score.when[0].if.field", "unknown state field 'rerank_top'; did you mean 'rerank_top1'"),
    ("score:\n  when:\n    - if:\n        field: rerank_top1\n        lesser: 0.7\n      to: retry\n", 12,
     "routes.score.when[0].if.lesser", "unknown operator 'lesser'"),
    ("score:\n  when:\n    - if: {field: rerank_top1, lt: high}\n      to: retry\n", 10,
     "routes.score.when[0].if.lt", "cannot compare it with 'high'"),
    ("score:\n  when:\n    - if: {field: rerank_top1, lt: 0.7}\n      to: retyr\n", 11,
     "routes.score.when[0].to", "unknown node 'retyr'; did you mean 'retry'"),
    ("score:\n  when:\n    - if: {field: guard_triggered, eq: true}\n      to: retry\n", 10,
     "routes.score.when[0].if", "no node writes state field 'guard_triggered'"),
    ("score:\n  field: route\n  cases: {x: ok}\n  when: []\n", 8, "routes.score", "not both"),
    ("score:\n  when: {if: {field: rerank_top1, lt: 1}, to: retry}\n", 9, "routes.score.when", "non-empty list"),
])
def test_bad_routes_fail_at_load_with_file_line_and_path(tmp_path, routes, line, where, message):
    path = _config(tmp_path, routes)
    with pytest.raises(ConfigError) as info:
        load_graph_config(path)
    text = str(info.value)
    assert message in text
    assert f"{path}:{line}: {where}:" in text
