"""Markdown for imported documents: tables as rows, Word heading styles, HTML main content and blocks.

A table becomes GitHub-flavoured Markdown rows (the first row is the header)::

    | 城市 | 住宿标准（元/晚） |
    | --- | --- |
    | 北京 | 600 |

so that ``chunking: {table: true}`` (:mod:`evalkit.index.tables`) finds it and keeps it
whole, and a reader (or an LLM) sees which value belongs to which column.

The main content of a web page (:func:`main_content`): lxml_html_clean's ``Cleaner`` removes
scripts, styles, forms, frames, ``<nav>``, ``<aside>`` and ``<footer>``; the content is then
the largest ``<main>`` (or ``role="main"``), else the largest ``<article>``, else the body
without its ``<header>``; inside it, blocks whose class or id says navigation, menu, sidebar,
footer, comments, sharing or cookies (Readability's "unlikely candidate" rule) are dropped.
Readability's full scoring (readability-lxml) was tried first and dropped: its cleaning
removed a 3-row table of a policy page, the very rows a question asks about; trafilatura kept
the navigation and flattened the table on a short Chinese page (both measured on the pages
of ``tests/importers/test_docs_import.py``).
"""
from __future__ import annotations

import re
from typing import Any

_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_LEAFS = {"p", "pre", "blockquote", "dt", "dd", "caption", "figcaption", "address"}
_SKIP = {"script", "style", "noscript", "template", "svg", "button", "nav", "footer", "aside"}
_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.I)
_UNLIKELY = re.compile(r"nav|menu|footer|sidebar|breadcrumb|banner|cookie|share|social|comment|advert|popup|"
                       r"pagination|pager|masthead|toolbar|related", re.I)
_MAYBE = re.compile(r"article|body|column|main|content", re.I)  # Readability's "ok maybe it's a candidate"
_KILL = ("nav", "aside", "footer", "noscript", "template", "svg", "button")


def main_content(root: Any) -> Any:
    """The element of an lxml HTML document that holds its main content, boilerplate removed (module docstring)."""
    from lxml_html_clean import Cleaner

    cleaner = Cleaner(scripts=True, javascript=True, comments=True, style=True, inline_style=True, forms=True,
                      embedded=True, frames=True, meta=True, page_structure=False, processing_instructions=True,
                      kill_tags=_KILL, remove_unknown_tags=False, safe_attrs_only=False)
    root = cleaner.clean_html(root)
    node = None
    for xpath in ("//main | //*[@role='main']", "//article"):
        found = root.xpath(xpath)
        if found:
            node = max(found, key=lambda e: len(e.text_content()))
            break
    if node is None:
        node = root.find("body") if root.find("body") is not None else root
        for header in node.xpath(".//header"):
            header.drop_tree()
    for el in list(node.iterdescendants()):
        marks = f"{el.get('class', '')} {el.get('id', '')}" if isinstance(el.tag, str) else ""
        if marks.strip() and _UNLIKELY.search(marks) and not _MAYBE.search(marks) and el.getparent() is not None:
            el.drop_tree()
    return node


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
