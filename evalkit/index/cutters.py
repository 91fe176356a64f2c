"""How one document is cut into passages, for each chunking method (:mod:`evalkit.index.chunking`).

:func:`cut_document` returns the document's retrievable units and, for ``parent_child``, its
parents. With ``table: true`` the text is first cut into prose and Markdown-table segments
(:func:`evalkit.index.tables.segments`): prose is cut by the method, a table into pieces of
its own between rows (:func:`evalkit.index.tables.table_pieces`). Ids number the pieces in
document order: ``DOC#i``, ``DOC#pI`` and ``DOC#pI.J``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalkit.index.splitters import (
    DEFAULT_SEPARATORS,
    Measure,
    recursive_spans,
    semantic_spans,
    window_spans,
)
from evalkit.index.tables import segments, table_pieces
from evalkit.records import Chunk, Document

Span = tuple[int, int]
Piece = tuple[int, int, str]  # start, end, text (a table piece's text repeats the header)
SentenceEncoder = Callable[[list[str]], Any] | None


def cut_document(doc: Document, cfg: dict[str, Any], measure: Measure,
                 encode: SentenceEncoder) -> tuple[list[Chunk], list[Chunk]]:
    """``(units, parents)`` of ``doc`` as the completed chunking block ``cfg`` says."""
    method = cfg["method"]
    if method == "document":
        return [Chunk(id=doc.id, doc_id=doc.id, text=doc.text, start=0, end=len(doc.text))], []
    if method == "parent_child":
        return _parent_child(doc, cfg, measure, encode)
    limit = cfg["max_size"] if method == "semantic" else cfg["size"]
    pieces = _pieces(doc.text, bool(cfg.get("table")), limit, measure, lambda t: _spans(t, cfg, measure, encode))
    return [Chunk(id=f"{doc.id}#{i}", doc_id=doc.id, text=t, start=s, end=e)
            for i, (s, e, t) in enumerate(pieces)], []


def _pieces(text: str, table: bool, limit: int, measure: Measure, spans_of: Callable[[str], list[Span]]) -> list[Piece]:
    """Pieces of ``text``: ``spans_of`` over the whole text, or (``table``) over prose segments with tables apart."""
    if not table:
        return [(s, e, text[s:e]) for s, e in spans_of(text)]
    out: list[Piece] = []
    for (s, e), is_table in segments(text):
        if is_table:
            out += table_pieces(text, (s, e), limit, measure)
        else:
            out += [(s + a, s + b, text[s + a:s + b]) for a, b in spans_of(text[s:e])]
    return out


def _parent_child(doc: Document, cfg: dict[str, Any], measure: Measure,
                  encode: SentenceEncoder) -> tuple[list[Chunk], list[Chunk]]:
    """Parents of ``parent_size`` (a table: row groups), each cut into children (a table parent: row groups)."""
    text = doc.text
    units: list[Chunk] = []
    parents: list[Chunk] = []
    table = bool(cfg.get("table"))
    segs = segments(text) if table else [((0, len(text)), False)]
    for (s, e), is_table in segs:
        if is_table:
            outer = table_pieces(text, (s, e), cfg["parent_size"], measure)
        else:
            outer = [(s + a, s + b, text[s + a:s + b])
                     for a, b in window_spans(text[s:e], cfg["parent_size"], 0, measure)]
        for ps, pe, ptext in outer:
            pid = f"{doc.id}#p{len(parents)}"
            parents.append(Chunk(id=pid, doc_id=doc.id, text=ptext, start=ps, end=pe))
            if is_table:
                children = table_pieces(text, (s, e), cfg["child_size"], measure, within=(ps, pe))
            else:
                children = [(ps + a, ps + b, text[ps + a:ps + b]) for a, b in _child_spans(ptext, cfg, measure, encode)]
            units += [Chunk(id=f"{pid}.{j}", doc_id=doc.id, text=t, start=a, end=b, parent_id=pid)
                      for j, (a, b, t) in enumerate(children)]
    return units, parents


def _child_spans(text: str, cfg: dict[str, Any], measure: Measure, encode: SentenceEncoder) -> list[Span]:
    """Children of one parent: fixed windows, or semantic groups of sentences (``child_method: semantic``)."""
    if cfg.get("child_method") == "semantic":
        return semantic_spans(text, encode, percentile=cfg.get("percentile"),  # type: ignore[arg-type]
                              threshold=cfg.get("threshold"), max_size=cfg["child_size"],
                              min_size=cfg["child_min_size"], separators=DEFAULT_SEPARATORS, measure=measure)
    return window_spans(text, cfg["child_size"], cfg.get("child_overlap", 0), measure)


def _spans(text: str, cfg: dict[str, Any], measure: Measure, encode: SentenceEncoder) -> list[Span]:
    method = cfg["method"]
    if method == "fixed":
        return window_spans(text, cfg["size"], cfg.get("overlap", 0), measure)
    if method == "recursive":
        return recursive_spans(text, cfg["size"], cfg.get("overlap", 0), cfg["separators"], measure)
    return semantic_spans(text, encode, percentile=cfg.get("percentile"),  # type: ignore[arg-type]
                          threshold=cfg.get("threshold"), max_size=cfg["max_size"], min_size=cfg["min_size"],
                          separators=cfg["separators"], measure=measure)
