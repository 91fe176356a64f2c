"""docs/nodes.md documents every registered node type, and its generated tables are the code's."""
from __future__ import annotations

import re
from pathlib import Path

from evalkit.graph.node import node_types
from evalkit.nodes.reference import node_reference, params_tables, render_page, type_name

PAGE = Path(__file__).resolve().parents[1] / "docs" / "nodes.md"


def builtin_types() -> list[str]:
    """The node types evalkit ships (other tests register node types of their own in the same session)."""
    return sorted(t for t, cls in node_types().items() if cls.__module__.startswith("evalkit."))


def test_every_node_type_has_a_section_and_a_current_table():
    text = PAGE.read_text(encoding="utf-8")
    documented = re.findall(r"<!-- generated: node ([a-z_]+) -->", text)
    assert sorted(documented) == builtin_types(), "a node type has no section in docs/nodes.md"
    assert render_page(text) == text, "docs/nodes.md is stale: run python -m evalkit.nodes.reference docs/nodes.md"


def test_every_parameter_of_every_node_has_a_description():
    for name in builtin_types():
        block = node_reference(name, set())
        empty = [row for row in block.splitlines() if row.startswith("| `") and row.rstrip().endswith("|  |")]
        assert not empty, (name, empty)


def test_tables_by_hand():
    from typing import Literal

    from pydantic import Field

    from evalkit.graph.node import NodeParams

    class Inner(NodeParams):
        """An inner setting."""

        x: int = Field(default=1, description="the x")

    class Outer(NodeParams):
        mode: Literal["a", "b"] = Field(default="a", description="a or b | c")
        inner: Inner | None = Field(default=None, description="nested")

    assert type_name(Literal["a", "b"]) == "a \\| b" and type_name(list[str]) == "list of str"
    assert params_tables(Outer) == (
        "**params**\n\n| parameter | type | default | meaning |\n|---|---|---|---|\n"
        "| `mode` | a \\| b | `\"a\"` | a or b \\| c |\n| `inner` | Inner or null | `null` | nested |\n\n"
        "**Inner: An inner setting.**\n\n| parameter | type | default | meaning |\n|---|---|---|---|\n"
        "| `x` | int | `1` | the x |\n")
