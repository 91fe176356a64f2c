"""State field types are real Python types, checked on every write when EVALKIT_CHECK_STATE asks for it."""
from __future__ import annotations

from typing import Any

import pytest

from evalkit.graph import END, START, Graph, Node, initial_state
from evalkit.graph.schema import FIELDS, declare_field, describe, fields_markdown
from evalkit.graph.typecheck import CHECK_ENV, checks_on, conforms, mismatches, type_text
from evalkit.records import Hit

declare_field("tc_score", float, "test: a score")
declare_field("tc_ranking", list[Hit], "test: a ranking")
declare_field("tc_log", list[dict], "test: one dict appended per write", "append")

HIT = Hit("d1#0", "d1", 0.5)


@pytest.mark.parametrize(("value", "tp", "ok"), [
    ("a", str, True), (None, str, False), (None, str | None, True), ("a", str | None, True), (3, str | None, False),
    (1, float, True),  # as in mypy: an int where a float is declared
    (1.5, int, False), (True, bool, True), ({"a": 1}, dict, True), ([1], dict, False),
    ([HIT, HIT], list[Hit], True), ([HIT, "d2"], list[Hit], False), ((HIT,), list[Hit], False),
    ({"bm25": [HIT]}, dict[str, list[Hit]], True), ({"bm25": [None]}, dict[str, list[Hit]], False),
    ({1: [HIT]}, dict[str, list[Hit]], False), ([["q1", "q2"], []], list[list[str]], True),
    ([{"x": object()}], list[dict], True), (object(), Any, True), ((1, 2), tuple[int, ...], True),
    (("a", 2), tuple[str, int], True), (("a",), tuple[str, int], False),
])
def test_conforms(value, tp, ok):
    assert conforms(value, tp) is ok


def test_types_read_as_declared_in_docs_and_errors():
    assert [type_text(t) for t in (list[Hit], str | None, dict[str, Any], list[list[str]], dict, float | None)] == \
        ["list[Hit]", "str | None", "dict[str, Any]", "list[list[str]]", "dict", "float | None"]
    assert describe("retrieved").startswith("retrieved (list[Hit], replace): ")
    assert "| `rerank_top1` | `float or None` | replace |" in fields_markdown()


def test_a_type_given_as_a_string_is_refused_with_the_fix():
    with pytest.raises(TypeError, match=r"'tc_old'.*not a Python type.*list\[Hit\].*not as a string"):
        declare_field("tc_old", "list[Hit]", "declared the old way")
    assert "tc_old" not in FIELDS


def test_mismatches_name_field_declared_type_and_what_came():
    declared = {"tc_score": (float, False), "tc_ranking": (list[Hit], False), "tc_log": (list[dict], True)}
    assert mismatches({"tc_score": 0.3, "tc_ranking": [HIT], "tc_log": {"kind": "timeout"}}, declared) == []
    assert mismatches({"tc_score": "0.3", "tc_ranking": [HIT, "d9"], "tc_log": [{}]}, declared) == [
        "'tc_score' is declared float, got str '0.3'",
        "'tc_ranking' is declared list[Hit], got list of Hit, str",
        "'tc_log' is declared dict (one appended item), got list of dict"]


class WritesAString(Node):
    """Writes a score as text: the kind of slip the check exists for."""

    type = "test_tc_string_score"
    writes = ("tc_score",)

    def run(self, state):
        return {"tc_score": "0.91"}


def _graph(check: bool) -> Graph:
    return Graph("g", {"w": WritesAString("w", WritesAString.Params())}, {START: "w", "w": END}, check_types=check)


def test_the_engine_fails_a_write_of_the_wrong_type_naming_node_and_field():
    out = _graph(True).run(initial_state("q1", "what?", "en"))
    assert out.failed and out.error["type"] == "GraphError" and out.error["node"] == "w"
    assert out.error["message"].startswith("node 'w' (test_tc_string_score) wrote a value of the wrong type: "
                                           "'tc_score' is declared float, got str '0.91'")
    unchecked = _graph(False).run(initial_state("q1", "what?", "en"))  # off: the value goes through as written
    assert not unchecked.failed and unchecked.state["tc_score"] == "0.91"


def test_the_initial_state_is_checked_too():
    bad = {**initial_state("q1", "what?", "en"), "attempt": "0"}
    with pytest.raises(Exception, match="initial state holds a value of the wrong type: 'attempt' is declared int"):
        _graph(True).run(bad)


def test_the_switch_is_off_by_default_and_on_in_the_tests(monkeypatch):
    assert checks_on()  # tests/conftest.py turns it on for the whole suite
    assert Graph("g", {}, {START: END}).check_types
    monkeypatch.delenv(CHECK_ENV)
    assert not checks_on() and not Graph("g", {}, {START: END}).check_types
    for value, on in (("0", False), ("", False), ("1", True), ("true", True), ("yes", True)):
        monkeypatch.setenv(CHECK_ENV, value)
        assert checks_on() is on
