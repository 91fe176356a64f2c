"""Markdown for imported documents: tables as rows, Word heading styles, HTML blocks.

A table becomes GitHub-flavoured Markdown rows (the first row is the header)::

    | 城市 | 住宿标准（元/晚） |
    | --- | --- |
    | 北京 | 600 |

so that ``chunking: {table: true}`` (:mod:`evalkit.index.tables`) finds it and keeps it
whole, and a reader (or an LLM) sees which value belongs to which column.
"""
from __future__ import annotations

import re
from typing import Any

_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_LEAFS = {"p", "pre", "blockquote", "dt", "dd", "caption", "figcaption", "address"}
_SKIP = {"script", "style", "noscript", "template", "svg", "form", "button", "nav", "footer"}
_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.I)


def cell(text: str) -> str:
    """One table cell on one line: whitespace collapsed, ``|`` escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def table(rows: list[list[str]]) -> str:
    """Rows of cells as a Markdown table (first row the header; short rows padded with empty cells)."""
    width = max(len(r) for r in rows)
    padded = [[cell(c) for c in r] + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(r) + " |" for r in padded[1:]]
    return "\n".join(lines)


def heading_level(style: str) -> int:
    """1-6 for a Word ``Heading N`` paragraph style (0 for any other style)."""
    m = _HEADING_STYLE.match(style.strip())
    return min(int(m.group(1)), 6) if m and int(m.group(1)) > 0 else 0


def from_html(root: Any) -> tuple[str, str]:
    """Markdown text of an lxml element tree, and the text of its first ``<h1>``."""
    blocks: list[str] = []
    _walk(root, blocks)
    h1 = next((_text(e) for e in root.iter("h1")), "")
    text = "\n\n".join(b for b in blocks if b.strip())
    return text, h1


def _text(el: Any) -> str:
    return " ".join(el.text_content().split())


def _has_blocks(el: Any) -> bool:
    return any(isinstance(d.tag, str) and (d.tag in _LEAFS or d.tag in _HEADINGS or d.tag in ("table", "ul", "ol",
                                                                                              "li", "div"))
               for d in el.iterdescendants())


def _walk(el: Any, out: list[str]) -> None:
    tag = el.tag if isinstance(el.tag, str) else ""
    if tag in _SKIP or not tag:
        return
    if tag == "table":
        rows = [[_text(c) for c in tr if isinstance(c.tag, str) and c.tag in ("td", "th")] for tr in el.iter("tr")]
        rows = [r for r in rows if r]
        if rows:
            out.append(table(rows))
        return
    if tag in _HEADINGS:
        out.append(f"{'#' * _HEADINGS[tag]} {_text(el)}")
        return
    if (tag in _LEAFS or tag == "li") and not _has_blocks(el):
        text = el.text_content().strip() if tag == "pre" else _text(el)
        out.append(f"- {text}" if tag == "li" else text)
        return
    if el.text and el.text.strip():
        out.append(" ".join(el.text.split()))
    for child in el:
        _walk(child, out)
        if child.tail and child.tail.strip():
            out.append(" ".join(child.tail.split()))
