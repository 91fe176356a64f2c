"""Markdown tables in document text: where they are, and how to cut one without splitting a row.

``chunking: {table: true}`` (:mod:`evalkit.index.chunking`) cuts a document into prose
segments, chunked as the method says, and table segments, each kept whole in chunks of its
own. A table is a GitHub-flavoured Markdown table: a header line and a delimiter line
(``| --- | --- |``) followed by row lines, every line starting with ``|`` (as ``evalkit import
docs`` writes tables from Word, HTML and Markdown files)::

    | 城市 | 住宿标准（元/晚） |
    | --- | --- |
    | 北京 | 600 |

A table larger than the chunk size is cut between rows, never inside one; each piece after
the first repeats the header and delimiter lines, so every piece says what its columns are.
A piece's ``start``/``end`` are the offsets of its own rows in the document (its text is the
header plus those rows). A single row larger than the size is kept whole.
"""
from __future__ import annotations

import re

from evalkit.index.splitters import CHARS, Measure

Span = tuple[int, int]
_DELIMITER = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _lines(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every line of ``text`` (end excludes the newline)."""
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


def table_spans(text: str) -> list[Span]:
    """``(start, end)`` of each Markdown table of ``text``: header, delimiter and every following ``|`` line."""
    lines = _lines(text)
    is_row = [text[s:e].lstrip().startswith("|") for s, e in lines]
    spans: list[Span] = []
    i = 0
    while i < len(lines) - 1:
        if is_row[i] and is_row[i + 1] and _DELIMITER.match(text[lines[i + 1][0]:lines[i + 1][1]]):
            j = i + 2
            while j < len(lines) and is_row[j]:
                j += 1
            spans.append((lines[i][0], lines[j - 1][1]))
            i = j
        else:
            i += 1
    return spans


def segments(text: str) -> list[tuple[Span, bool]]:
    """The text cut into ``((start, end), is_table)`` pieces, in order; prose pieces are trimmed of
    surrounding whitespace, and blank ones dropped."""
    out: list[tuple[Span, bool]] = []
    pos = 0
    for s, e in [*table_spans(text), (len(text), len(text))]:
        a, b = pos, s
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            out.append(((a, b), False))
        if e > s:
            out.append(((s, e), True))
        pos = e
    return out or [((0, len(text)), False)]


def table_pieces(text: str, span: Span, size: int, measure: Measure = CHARS,
                 within: Span | None = None) -> list[tuple[int, int, str]]:
    """The table at ``span`` of ``text`` as ``(start, end, piece text)`` pieces of at most ``size``, cut between rows.

    The first piece starts with the header lines; later ones repeat them before their rows.
    ``within`` (a parent piece's span) limits the rows cut to those inside it.
    """
    s, _ = span
    lo, hi = within or span
    rows = [(a + s, b + s) for a, b in _lines(text[span[0]:span[1]])]
    head = text[rows[0][0]:rows[1][1]]
    body = [r for r in rows[2:] if lo <= r[0] and r[1] <= hi]

    def piece(first: int, last: int) -> tuple[int, int, str]:
        return (first, last, text[first:last] if first == s else head + "\n" + text[first:last])

    if lo <= s:  # this part holds the header lines themselves
        first, last, has_rows = s, rows[1][1], False
    elif body:
        first, last, has_rows = body[0][0], body[0][1], False
    else:
        return []
    pieces: list[tuple[int, int, str]] = []
    for a, b in body:
        if has_rows and measure.size(piece(first, b)[2]) > size:
            pieces.append(piece(first, last))
            first = a
        last, has_rows = b, True
    pieces.append(piece(first, last))
    return pieces
