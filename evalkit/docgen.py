"""Generated blocks of the Markdown reference pages: the one place that finds and rewrites them.

A page holds ``<!-- generated: NAME -->`` ... ``<!-- end generated -->``; a generator
(``evalkit.commands.reference``, ``evalkit.metrics.reference``) renders what goes between,
and a test checks the page equals its re-rendering, so a reference page cannot drift.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["replace_block", "rewrite_pages"]


def replace_block(text: str, name: str, content: str) -> str:
    """``text`` with the body of its ``<!-- generated: NAME -->`` block replaced by ``content``."""
    pattern = rf"(<!-- generated: {re.escape(name)} -->\n)(.*?)(<!-- end generated -->)"
    if not re.search(pattern, text, flags=re.DOTALL):
        raise ValueError(f"the page has no '<!-- generated: {name} -->' ... '<!-- end generated -->' block")
    return re.sub(pattern, lambda m: m.group(1) + content + m.group(3), text, flags=re.DOTALL)


def rewrite_pages(paths: Iterable[str], render: Callable[[str], str]) -> None:
    """Rewrite each page with ``render(its text)`` (the generators' ``python -m`` entry point)."""
    for name in paths:
        page = Path(name)
        page.write_text(render(page.read_text(encoding="utf-8")), encoding="utf-8")
