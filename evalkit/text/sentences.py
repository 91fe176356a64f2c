"""Sentence boundaries with character offsets, for Chinese and English knowledge-base text.

A sentence ends at Chinese 。！？； (plus closing quotes and brackets); at . ! ? followed by
whitespace, a CJK character or the end of the text; and at every line break (knowledge-base
documents put one item per line: "Default: 3", a title line, a table row). ``3.5``,
``v1.2``, ``e.g.`` and list numbers such as ``1.`` do not end a sentence.

:func:`sentence_spans` gives ``(start, end)`` offsets (leading and trailing whitespace
trimmed), so chunkers can cut the original text and compressors can report what they cut;
the extractive generator uses the same boundaries (``evalkit.llm.extractive``).
"""
from __future__ import annotations

import re

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_END = re.compile(rf"[。！？；]+[”’」』）)\"']*|[.!?]+[”’\"')\]]*(?=\s|$|[{_CJK}])"
                  r"|\n\s*")
_ABBREV = frozenset(("e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "prof", "fig", "no", "approx", "cf", "al"))
_LAST_WORD = re.compile(r"([A-Za-z][A-Za-z.]*)\.$")
_LIST_NUMBER = re.compile(r"^\s*(?:\d{1,3}|[A-Za-z])\.$")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each non-blank sentence of ``text``, in order, whitespace trimmed."""
    raw: list[tuple[int, int]] = []
    start = 0
    for m in _END.finditer(text):
        piece = text[start:m.end()]
        if m.group(0).startswith("."):
            word = _LAST_WORD.search(piece)
            if _LIST_NUMBER.match(piece) or (word and word.group(1).lower() in _ABBREV):
                continue  # "1." of a list, "e.g.": not the end of a sentence
        raw.append((start, m.end()))
        start = m.end()
    raw.append((start, len(text)))
    out = []
    for s, e in raw:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return out


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` in order, whitespace collapsed, empty ones dropped."""
    return [" ".join(text[s:e].split()) for s, e in sentence_spans(text)]
