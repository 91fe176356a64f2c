"""Which corpus document a passage text was cut from, for contexts that come without ids.

A ragas ``EvaluationDataset`` (and many answers files) carries the retrieved passages as
texts only. Against an eval set, each such text is looked up in the eval set's corpus:
a passage cut by any chunking is a piece of one document's text, optionally preceded by
that document's title on its own line (``prepend_title``, evalkit's default). The lookup
compares texts with whitespace runs collapsed to one space, so re-wrapped text matches.

A text found in exactly one document gets that document's id; a text found in none, or
in several (duplicated documents, a boilerplate sentence), gets none, and the caller
falls back to the content id (``ctx-``...), as before. Cost: one substring search over the
corpus per context (a few milliseconds per megabyte of corpus).
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Any

SEPARATOR = "\x00"  # between documents in the search text: no passage contains it, so no match spans two


def collapse(text: str) -> str:
    """``text`` with every run of whitespace as one space, trimmed (the form texts are compared in)."""
    return " ".join(text.split())


class CorpusLocator:
    """Finds the one document of a corpus whose text contains a passage (see the module docstring)."""

    def __init__(self, corpus: Any) -> None:
        self._ids: list[str] = []
        self._titles: list[str] = []
        self._starts: list[int] = []
        parts, at = [], 0
        for doc in corpus.documents:
            text = collapse(doc.text)
            self._ids.append(doc.id)
            self._titles.append(collapse(doc.title or ""))
            self._starts.append(at)
            parts.append(text)
            at += len(text) + len(SEPARATOR)
        self._haystack = SEPARATOR.join(parts)

    def doc_of(self, text: str) -> str | None:
        """The id of the one document ``text`` was cut from (with or without its title line), else None."""
        whole = collapse(text)
        if not whole:
            return None
        found = self._containing(whole)
        head, sep, rest = text.strip().partition("\n")
        if sep and collapse(rest):  # "title\npassage" as a chunking with prepend_title writes it
            title = collapse(head)
            found |= {i for i in self._containing(collapse(rest)) if self._titles[i] == title}
        return self._ids[found.pop()] if len(found) == 1 else None

    def _containing(self, needle: str) -> set[int]:
        """Indexes of the documents containing ``needle`` (stops at two: more is as ambiguous as two)."""
        out: set[int] = set()
        pos = self._haystack.find(needle)
        while pos >= 0 and len(out) < 2:
            i = bisect_right(self._starts, pos) - 1
            out.add(i)
            nxt = self._starts[i + 1] if i + 1 < len(self._starts) else len(self._haystack)
            pos = self._haystack.find(needle, nxt)
        return out
