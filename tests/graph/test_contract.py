"""The engine contract: undeclared reads fail the query, reads nothing upstream writes are refused at
load with file:line, the example node of docs/concepts.md works as written."""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from evalkit.errors import ConfigError
from evalkit.graph import END, START, Graph, Node, NodeParams, initial_state, load_graph_config, register_node
from evalkit.graph.schema import QUESTION, RERANKED, RETRIEVED, Role
from evalkit.records import Hit

REPO = Path(__file__).resolve().parents[2]


class Peeker(Node[NodeParams]):
    """Reads a field it never declared."""

    type = "test_peeker"
    reads = (QUESTION,)
    writes = (RETRIEVED,)

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        _ = state.get("reranked")
        return {RETRIEVED: []}


class Hider(Peeker):
    """Reads an undeclared field and swallows the error: it must still be caught."""

    type = "test_hider"

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        try:
            _ = state["answer"]
        except Exception:  # noqa: BLE001 - the point of the test
            pass
        return {RETRIEVED: []}


@pytest.mark.parametrize("cls, field", [(Peeker, "reranked"), (Hider, "answer")])
def test_an_undeclared_read_fails_the_query_naming_node_type_and_field(cls, field):
    g = Graph("g", {"p": cls("p", NodeParams())}, {START: "p", "p": END})
    out = g.run(initial_state("q1", "what?", "en"))
    assert out.failed and out.error["type"] == "GraphError"
    assert f"node 'p' ({cls.type}) read state field '{field}', which it does not declare" in out.error["message"]


def test_a_promised_write_that_is_missing_fails_the_query():
    class Forgetful(Peeker):
        type = "test_forgetful"

        def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
            return {}

    out = Graph("g", {"f": Forgetful("f", NodeParams())}, {START: "f", "f": END}).run(initial_state("q", "?", "en"))
    assert out.failed and "did not write ['retrieved']" in out.error["message"]


def test_a_read_nothing_upstream_writes_is_refused_at_load_with_file_and_line(tmp_path: Path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: broken\n"
                    "nodes:\n"
                    "  retrieve: {type: retrieve, params: {bm25: {}}}\n"
                    "  rerank: {type: rerank}\n"
                    "  guard: {type: guard, params: {threshold: 0.8}}\n"
                    "edges: {start: retrieve, retrieve: guard, guard: rerank, rerank: end}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_graph_config(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:5: nodes.guard: ")  # the guard's line
    assert "reads state field 'reranked'" in msg and "start -> retrieve -> guard" in msg
    assert "nodes that write it (rerank) are not on this path" in msg


def test_a_read_written_on_only_one_branch_is_refused(tmp_path: Path):
    # the guard's route skips rerank on one branch: generate(evidence_from: reranked) may then run without it
    cfg = {"name": "b", "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {}}},
                                  "router": {"type": "intent_router"},
                                  "rerank": {"type": "rerank"},
                                  "generate": {"type": "generate", "params": {"llm": {"backend": "extractive"},
                                                                              "evidence_from": "reranked"}}},
           "edges": {"start": "router", "router": "retrieve", "retrieve": "rerank", "rerank": "generate",
                     "generate": "end"},
           "routes": {"retrieve": {"field": "route", "cases": {"keyword": "generate"}}}}
    from evalkit.graph import config_from_dict

    with pytest.raises(ConfigError, match=r"path start -> router -> retrieve -> generate nothing writes it"):
        config_from_dict(cfg)


def test_a_node_type_naming_an_unknown_field_is_refused_at_registration():
    class Typo(Node[NodeParams]):
        type = "test_typo"
        reads = ("retreived",)

    with pytest.raises(ValueError, match="'retreived', which the state schema does not declare; did you mean "
                                         "'retrieved'"):
        register_node(Typo)


def test_a_role_that_does_not_write_its_fields_is_refused():
    class NotAGenerator(Node[NodeParams]):
        type = "test_not_a_generator"
        role = Role.GENERATOR
        writes = ("answer",)

    with pytest.raises(TypeError, match="role 'generator' but does not declare writing"):
        register_node(NotAGenerator)


def test_the_documented_example_node_runs_as_written():
    page = (REPO / "docs" / "concepts.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- example: node -->\n```python\n(.*?)```", page, re.S)
    assert block, "the example node of docs/concepts.md is missing"
    namespace: dict[str, Any] = {}
    exec(compile(block.group(1), "docs/concepts.md", "exec"), namespace)  # noqa: S102 - our own docs
    cls = namespace["DropBelow"]
    assert cls.role is Role.TRANSFORM
    node = cls("drop", cls.Params(min_score=0.5, keep_min=1))
    hits = [Hit("a#0", "a", 0.9), Hit("b#0", "b", 0.4), Hit("c#0", "c", 0.6)]
    g = Graph("g", {"drop": node}, {START: "drop", "drop": END})
    out = g.run({**initial_state("q", "?", "en"), RETRIEVED: hits})
    assert out.error is None and [h.id for h in out.state[RETRIEVED]] == ["a#0", "c#0"]
    low = g.run({**initial_state("q", "?", "en"), RETRIEVED: [Hit("b#0", "b", 0.1), Hit("d#0", "d", 0.2)]})
    assert [h.id for h in low.state[RETRIEVED]] == ["b#0"]  # keep_min passages stay


def test_the_schema_reference_page_is_current():
    from evalkit.graph.schema import fields_markdown

    page = (REPO / "docs" / "graph.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- generated: schema \(evalkit.graph.schema.fields_markdown\) -->\n(.*?)<!-- end generated -->",
                      page, re.S)
    assert block and block.group(1) == fields_markdown(), "docs/graph.md is stale: paste fields_markdown() into it"


class Flipper(Node[NodeParams]):
    """Reverses the ranking it read IN PLACE (the contract says: return new values) and returns it."""

    type = "test_flipper"
    reads = (RETRIEVED,)
    writes = (RERANKED,)

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        hits = state[RETRIEVED]
        hits.reverse()
        return {RERANKED: hits}


class Source(Node[NodeParams]):
    type = "test_source"
    reads = (QUESTION,)
    writes = (RETRIEVED,)

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        return {RETRIEVED: [Hit("a#0", "a", 2.0), Hit("b#0", "b", 1.0)]}


def test_a_read_value_changed_in_place_fails_the_query_and_cannot_leak_through_sharing():
    # before: the flip silently rewrote 'retrieved' of its own query, and with sharing on the next variant
    # reused the flipped ranking (share and --no-share disagreed, no error anywhere)
    from evalkit.graph.memo import WorkMemo, node_identity

    def graph(memo: WorkMemo | None, flip: bool) -> Graph:
        nodes: dict[str, Node[Any]] = {"s": Source("s", NodeParams())}
        edges = {START: "s", "s": END}
        if flip:
            nodes["f"] = Flipper("f", NodeParams())
            edges = {START: "s", "s": "f", "f": END}
        for n in nodes.values():
            n.identity = node_identity(n.type, n.params, {})
        return Graph("g", nodes, edges, memo=memo)

    seen = {}
    for memo in (None, WorkMemo()):
        flipped = graph(memo, True).run(initial_state("q", "?", "en"))
        assert flipped.failed and flipped.error["type"] == "GraphError"
        assert "node 'f' (test_flipper) changed state field 'retrieved' in place" in flipped.error["message"]
        plain = graph(memo, False).run(initial_state("q", "?", "en"))
        seen[memo is None] = [h.doc_id for h in plain.state[RETRIEVED]]
    assert seen[True] == seen[False] == ["a", "b"]
