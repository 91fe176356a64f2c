"""Cutting documents into retrievable passages.

Three methods, chosen by a graph config's ``chunking`` block:

- ``document``: one passage per document (good for short abstracts such as SciFact).
- ``fixed``: windows of ``size`` characters overlapping by ``overlap``; a window's end
  moves back to the nearest sentence or word boundary in its last fifth, so Chinese and
  English text is not cut mid-word where it can be avoided.
- ``parent_child``: ``parent_size`` windows (no overlap) each cut into ``child_size``
  children (overlap ``child_overlap``). Retrieval scores children and hands back their
  parent passage.

Sizes are in characters: a unit that means the same for Chinese and English text.
Passage ids are ``DOC#i`` (fixed), ``DOC#pI`` (parents) and ``DOC#pI.J`` (children),
so every passage maps back to its document.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from evalkit.records import Chunk

METHODS = ("document", "fixed", "parent_child")
_PARAMS = {
    "document": {"method", "prepend_title"},
    "fixed": {"method", "size", "overlap", "prepend_title"},
    "parent_child": {"method", "parent_size", "child_size", "child_overlap", "prepend_title"},
}
# What a config that names only the method gets (``chunking: {method: parent_child}``).
DEFAULTS: dict[str, dict[str, Any]] = {
    "document": {"prepend_title": True},
    "fixed": {"size": 400, "overlap": 80, "prepend_title": True},
    "parent_child": {"parent_size": 1200, "child_size": 300, "child_overlap": 50, "prepend_title": True},
}


def with_defaults(cfg: dict[str, Any] | None) -> dict[str, Any]:
    """A chunking block completed with its method's defaults (``fixed`` when none is named)."""
    cfg = dict(cfg or {})
    method = cfg.setdefault("method", "fixed")
    return {"method": method, **DEFAULTS.get(method, {}), **cfg}
_BOUNDARY = set("。！？；!?;\n") | {" ", "，", ",", "、", "\t"}


def check_chunking(cfg: dict[str, Any]) -> str | None:
    """Return a problem description for a bad chunking config, or None when it is valid."""
    from evalkit.errors import did_you_mean

    method = cfg.get("method")
    if method not in METHODS:
        return f"unknown chunking method '{method}'{did_you_mean(str(method), METHODS)}"
    for key in cfg:
        if key not in _PARAMS[method]:
            return f"unknown chunking parameter '{key}' for method '{method}'{did_you_mean(key, _PARAMS[method])}"
    if method == "fixed":
        size, overlap = cfg.get("size"), cfg.get("overlap", 0)
        if not _pos_int(size) or not isinstance(overlap, int) or not 0 <= overlap < size:
            return f"fixed chunking needs size > 0 and 0 <= overlap < size (got size={size}, overlap={overlap})"
    if method == "parent_child":
        p, c, o = cfg.get("parent_size"), cfg.get("child_size"), cfg.get("child_overlap", 0)
        if not (_pos_int(p) and _pos_int(c) and isinstance(o, int) and 0 <= o < c <= p):
            return ("parent_child chunking needs parent_size >= child_size > child_overlap >= 0 "
                    f"(got parent_size={p}, child_size={c}, child_overlap={o})")
    return None


def _pos_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def chunking_id(cfg: dict[str, Any]) -> str:
    """A stable identity of a chunking config (part of every index cache key)."""
    return hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class Passages:
    """The retrievable units of a corpus (``units``) and what retrieval hands back.

    ``units`` are the passages indexes are built over (fixed chunks, or children);
    ``parent_of`` maps a child to its parent for parent-child chunking; ``text`` gives
    the text of any passage id (unit or parent) with the title prepended when asked.
    """

    units: list[Chunk]
    parents: dict[str, Chunk]
    titles: dict[str, str]
    prepend_title: bool

    def parent_of(self, passage_id: str) -> str:
        unit = self._by_id.get(passage_id)
        return unit.parent_id if unit is not None and unit.parent_id else passage_id

    def text(self, passage_id: str) -> str:
        chunk = self.parents.get(passage_id) or self._by_id[passage_id]
        title = self.titles.get(chunk.doc_id, "")
        return f"{title}\n{chunk.text}" if self.prepend_title and title else chunk.text

    def unit_texts(self) -> list[str]:
        return [self.text(u.id) for u in self.units]

    def doc_of(self, passage_id: str) -> str:
        chunk = self.parents.get(passage_id) or self._by_id[passage_id]
        return chunk.doc_id

    def __post_init__(self) -> None:
        self._by_id = {u.id: u for u in self.units}


def chunk_corpus(corpus: Any, cfg: dict[str, Any]) -> Passages:
    """Cut every document of ``corpus`` as ``cfg`` says; deterministic for the same input."""
    method = cfg["method"]
    prepend = bool(cfg.get("prepend_title", True))
    units: list[Chunk] = []
    parents: dict[str, Chunk] = {}
    for doc in corpus.documents:
        if method == "document":
            units.append(Chunk(id=doc.id, doc_id=doc.id, text=doc.text, start=0, end=len(doc.text)))
        elif method == "fixed":
            for i, (s, e) in enumerate(split_spans(doc.text, cfg["size"], cfg.get("overlap", 0))):
                units.append(Chunk(id=f"{doc.id}#{i}", doc_id=doc.id, text=doc.text[s:e], start=s, end=e))
        else:
            for i, (ps, pe) in enumerate(split_spans(doc.text, cfg["parent_size"], 0)):
                pid = f"{doc.id}#p{i}"
                parents[pid] = Chunk(id=pid, doc_id=doc.id, text=doc.text[ps:pe], start=ps, end=pe)
                spans = split_spans(doc.text[ps:pe], cfg["child_size"], cfg.get("child_overlap", 0))
                for j, (s, e) in enumerate(spans):
                    units.append(Chunk(id=f"{pid}.{j}", doc_id=doc.id, text=doc.text[ps + s:ps + e],
                                       start=ps + s, end=ps + e, parent_id=pid))
    return Passages(units=units, parents=parents, titles={d.id: d.title for d in corpus.documents},
                    prepend_title=prepend)


def split_spans(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """Character spans of ``size`` overlapping by ``overlap``, ending on a boundary if one is near.

    Always returns at least one span, covers the whole text, and makes progress.
    """
    n = len(text)
    if n <= size:
        return [(0, n)]
    spans: list[tuple[int, int]] = []
    start = 0
    while start < n:
        end = min(start + size, n)
        if end < n:
            floor = start + max(1, (size * 4) // 5)
            cut = end
            while cut > floor and text[cut - 1] not in _BOUNDARY:
                cut -= 1
            if cut > floor:
                end = cut
        spans.append((start, end))
        if end >= n:
            break
        start = max(end - overlap, start + 1)
    return spans
