"""Reference tables of node types, written from the code: role, contract, and every parameter.

``docs/nodes.md`` embeds :func:`node_reference` for each registered node type between
``<!-- generated: node TYPE -->`` and ``<!-- end generated -->``; a test regenerates every
block and fails when the page is stale, so the page always says what the params models
say (their field descriptions are the documentation). Nested models (a channel, a fusion,
an LLM spec) get a table of their own, once, under the node that first uses them.
"""
from __future__ import annotations

import json
import re
import types
import typing
from typing import Any

from pydantic import BaseModel

from evalkit.graph.node import node_types

MAX_DEFAULT = 48  # longer defaults (prompts, rule lists) are summarised


def type_name(annotation: Any) -> str:
    """A short readable name of a field's type: ``int``, ``a | b``, ``list of str``, ``Dedupe or null``."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        names = [type_name(a) for a in args if a is not type(None)]
        return " or ".join(names) + (" or null" if type(None) in args else "")
    if origin in (list, tuple):
        return f"list of {type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"map {type_name(args[0])} -> {type_name(args[1])}" if args else "map"
    return getattr(annotation, "__name__", str(annotation))


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_defaults=True)
        if not value:
            return "(defaults)"
    if isinstance(value, list) and value and all(isinstance(v, BaseModel) for v in value):
        return f"built-in ({len(value)})"
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > MAX_DEFAULT:
        return f"built-in ({len(value)})" if isinstance(value, (list, dict)) else "built-in text"
    return f"`{text}`"


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    found = []
    for a in (annotation, *typing.get_args(annotation)):
        for b in (a, *typing.get_args(a)):
            if isinstance(b, type) and issubclass(b, BaseModel) and b not in found:
                found.append(b)
    return found


def params_tables(model: type[BaseModel], title: str = "params", seen: set[type] | None = None) -> str:
    """Markdown: one table for ``model`` (parameter, type, default, meaning), then one per nested model."""
    seen = set() if seen is None else seen
    seen.add(model)
    rows = [f"**{title}**", "", "| parameter | type | default | meaning |", "|---|---|---|---|"]
    nested: list[type[BaseModel]] = []
    for name, f in model.model_fields.items():
        desc = (f.description or "").replace("|", "\\|")
        rows.append(f"| `{name}` | {type_name(f.annotation)} | {_default(f)} | {desc} |")
        nested += [m for m in _models_in(f.annotation) if m not in seen and m not in nested]
    out = "\n".join(rows) + "\n"
    for m in nested:
        if m not in seen:
            doc = (m.__doc__ or "").strip().split("\n")[0]
            out += "\n" + params_tables(m, f"{m.__name__}{': ' + doc if doc else ''}", seen)
    return out


def node_reference(node_type: str, seen: set[type] | None = None) -> str:
    """Role, declared reads and writes, and the params tables of one node type.

    The reads and writes are the class declarations; a node whose contract depends on its params
    (``evidence_from``, ``field``, ``fuse_with``) says how in its section of docs/nodes.md."""
    cls = node_types()[node_type]

    def fields(xs: tuple[str, ...]) -> str:
        return ", ".join(f"`{x}`" for x in xs) or "-"

    head = (f"role `{cls.role.value}`; reads {fields(cls.reads)}"
            + (f" (optional: {fields(cls.optional_reads)})" if cls.optional_reads else "")
            + f"; writes {fields(cls.writes)}"
            + (f" (sometimes: {fields(cls.optional_writes)})" if cls.optional_writes else "") + "\n\n")
    return head + params_tables(cls.Params, "params", seen)


_BLOCK = r"(<!-- generated: node (?P<type>[a-z_]+) -->\n)(?P<body>.*?)(<!-- end generated -->)"


def render_page(text: str) -> str:
    """``text`` with every ``<!-- generated: node TYPE -->`` block rewritten from the code, in page order
    (a nested settings table appears once, at its first use on the page)."""
    seen: set[type] = set()
    return re.sub(_BLOCK, lambda m: m.group(1) + node_reference(m.group("type"), seen) + m.group(4), text,
                  flags=re.DOTALL)


if __name__ == "__main__":  # python -m evalkit.nodes.reference docs/nodes.md  (rewrites the generated blocks)
    import sys
    from pathlib import Path

    for name in sys.argv[1:]:
        page = Path(name)
        page.write_text(render_page(page.read_text(encoding="utf-8")), encoding="utf-8")
