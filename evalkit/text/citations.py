"""Citation markers as people and models write them, and what they point to.

What it is for: one parser for every place that reads citations (the ``generate`` node,
claim splitting, the citation metrics, ``evalkit score``). Recognised markers:

- square brackets: ``[fin-004]``, ``[1]``, ``[1, 2]``, ``[a; b]``, ``[1][2]``, ``[1-3]``
  (a range of numbers), ``[^3]`` (footnote), ``[文档1]``, ``[来源：fin-004]``,
  ``[Doc 2]``, ``[source: fin-004]``;
- full-width brackets: ``【1】``, ``【fin-004、fin-013】``, ``【来源：员工手册】``, but only when
  the body is reference-shaped: a label (``来源：``, ``文档1``) or references without Chinese
  characters (numbers, ids). In Chinese documents 【…】 marks headings and tags
  (``【已废弃】``, ``【重要提示】``, ``【2024年修订】``): text an extractive generator copies from a
  passage is not a citation, and counting it made ``invalid_citation_rate`` 1.7-2.3% on the demo;
- a parenthesised source: ``（来源：fin-004）``, ``(Source: fin-004, fin-013)``,
  ``（参考：文档1、文档2）``, ``(see [1])``-style nesting is read as the inner marker;
  a numbered passage in parentheses without a colon: ``（文档3）``, ``(Doc 2)``;
- a bare ``文档3`` in running Chinese text ("见文档3", "根据文档2，...").

A marker holds one or more *references* (separated by ``,`` ``，`` ``;`` ``、`` or
spaces after a label). :func:`resolve` maps a reference to a passage of the evidence the
answer was written from: an exact passage id or document id first, then a number ``n``
(1-based position in the evidence as shown, what ``citation_style: numbered`` asks for).
A reference that resolves to nothing is *invalid*. Markdown links (``[text](url)``) and
bracketed words that contain spaces without a label (``[see below]``) are not markers.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Marker", "Resolved", "find_markers", "is_reference_body", "refs_in", "resolve", "resolve_all", "strip_markers"]

_LABEL = r"(?:文档|来源|参考|出处|引用|资料|doc(?:ument)?s?|sources?|refs?|references?|passages?|citations?)"
_REF = r"[\^]?[\w.:#/\-\u3400-\u9fff]{1,80}"
_SEP = r"\s*[,，;；、]\s*"
_LIST = rf"{_REF}(?:{_SEP}{_REF})*"
# [fin-004] [1, 2] [^3] [文档1] [来源：fin-004] [Doc 2] ... not followed by "(" (a Markdown link)
_SQUARE = rf"\[(?P<sq>(?:{_LABEL}\s*[:：]?\s*)?{_LIST})\](?!\()"
_FULL = rf"【(?P<fw>(?:{_LABEL}\s*[:：]?\s*)?{_LIST})】"
# (来源：fin-004) / （Source: a, b） / （参考：文档1、文档2）: a label is required inside parentheses
_PAREN = rf"[（(]\s*(?P<pa>{_LABEL}\s*[:：]\s*{_LIST})\s*[)）]"
# （文档3） / (Doc 2) / (文档1、文档2): a passage label glued or spaced to a number needs no colon
_NUMBERED = r"(?:文档|doc(?:ument)?|source|passage)\s*\d{1,3}"
_PAREN_NUMBERED = rf"[（(]\s*(?P<pn>{_NUMBERED}(?:{_SEP}{_NUMBERED})*)\s*[)）]"
# 见文档3 / 根据文档2: in a Chinese answer a bare 文档 + number names the passage shown at that place
# ("共有文档12份" counts documents: a measure word after the number is not a citation)
_BARE_ZH = r"(?P<bz>文档\d{1,3})(?![\dA-Za-z.\-份篇个页条张次份])"
MARKER = re.compile(rf"{_SQUARE}|{_FULL}|{_PAREN}|{_PAREN_NUMBERED}|{_BARE_ZH}", re.IGNORECASE)
# a label is taken off only when something separates it from the reference ("来源：fin-004",
# "Doc 2"): "doc-b" and "source-3" are ids. A label glued to a number ("文档1", "doc1") is kept
# whole and read as a number only when no passage or document has that id (resolve).
_LABEL_PREFIX = re.compile(rf"^{_LABEL}(?:\s*[:：]\s*|\s+)", re.IGNORECASE)
_GLUED = re.compile(rf"^{_LABEL}(?P<rest>\d[\d\s\-–~～]*)$", re.IGNORECASE)
_RANGE = re.compile(r"^(\d{1,3})\s*[-–~～]\s*(\d{1,3})$")
MAX_RANGE = 50


@dataclass(frozen=True)
class Marker:
    """One citation marker in a text: its span and the references it holds, as written."""

    start: int
    end: int
    refs: tuple[str, ...]


def refs_in(body: str) -> tuple[str, ...]:
    """The references inside one marker's brackets: labels removed, lists and ranges expanded."""
    out: list[str] = []
    for part in re.split(_SEP, body.strip()):
        part = part.strip()
        while _LABEL_PREFIX.match(part) and _LABEL_PREFIX.sub("", part, count=1):  # 参考：文档1
            part = _LABEL_PREFIX.sub("", part, count=1)
        part = part.lstrip("^").strip()
        if not part:
            continue
        glued = _GLUED.match(part)
        m = _RANGE.match(glued.group("rest").strip() if glued else part)
        if m and int(m.group(1)) < int(m.group(2)) <= int(m.group(1)) + MAX_RANGE:
            out += [str(n) for n in range(int(m.group(1)), int(m.group(2)) + 1)]
        else:
            out.append(part)
    return tuple(dict.fromkeys(out))


_CJK = re.compile(r"[\u3400-\u9fff]")


def is_reference_body(body: str) -> bool:
    """Whether the inside of a 【…】 is a citation rather than a heading or tag of Chinese text:
    it starts with a label and a colon or number (``来源：员工手册``, ``文档1``) or no reference holds a Chinese character
    (``1``, ``fin-004、fin-013``). ``已废弃``, ``重要提示``, ``2024年修订`` are corpus typography."""
    body = body.strip()
    if re.match(rf"^{_LABEL}\s*(?:[:：]|\d)", body, re.IGNORECASE):  # not 【参考资料】: a label word alone
        return True
    return not any(_CJK.search(ref) for ref in refs_in(body))


def find_markers(text: str) -> list[Marker]:
    """Every citation marker of ``text`` in order (see the module docstring for the forms)."""
    out = []
    for m in MARKER.finditer(text):
        if m.group("fw") and not is_reference_body(m.group("fw")):
            continue  # 【已废弃】: a tag copied from a passage, not a citation
        body = m.group("sq") or m.group("fw") or m.group("pa") or m.group("pn") or m.group("bz") or ""
        refs = refs_in(body)
        if refs:
            out.append(Marker(m.start(), m.end(), refs))
    return out


# the retrieval score the generate node's prompt shows in each passage header ("[doc-1] (score 0.912)"), which a
# model echoes beside its citation: prompt framing, not a claim about the world (nodes/generate.py)
SCORE_ECHO = re.compile(r"\s*[(（]\s*(?:relevance\s+|retrieval\s+)?score\s*[:=：]?\s*\d*\.\d+"
                        r"(?:\s*[,，]\s*reference\s+only)?\s*[)）]", re.IGNORECASE)


def strip_markers(text: str) -> str:
    """``text`` without its citation markers (and the white space before each), nor the retrieval scores a model
    echoed from the prompt's passage headers (:data:`SCORE_ECHO`)."""
    out, last = [], 0
    for mk in find_markers(text):
        out.append(text[last:mk.start].rstrip(" \t"))
        last = mk.end
    out.append(text[last:])
    return SCORE_ECHO.sub("", "".join(out))


@dataclass(frozen=True)
class Resolved:
    """A reference and the passage it points to (``index`` in the evidence, 0-based), or None."""

    ref: str
    index: int | None
    passage_id: str | None = None
    doc_id: str | None = None

    @property
    def valid(self) -> bool:
        return self.index is not None


def resolve(ref: str, evidence: Sequence[tuple[str, str]]) -> Resolved:
    """Which passage of ``evidence`` = [(passage id, document id), ...] a reference names.

    An exact passage id, then an exact document id (its first passage), then a number n
    in 1..len(evidence) (the n-th passage as shown; also written glued to a label, ``文档2``).
    Anything else is invalid.
    """
    for i, (pid, _doc) in enumerate(evidence):
        if ref == pid:
            return Resolved(ref, i, pid, evidence[i][1])
    for i, (pid, doc) in enumerate(evidence):
        if ref == doc:
            return Resolved(ref, i, pid, doc)
    glued = _GLUED.match(ref)
    number = glued.group("rest").strip() if glued else ref
    if number.isdigit() and 1 <= int(number) <= len(evidence):
        i = int(number) - 1
        return Resolved(ref, i, evidence[i][0], evidence[i][1])
    return Resolved(ref, None)


def resolve_all(refs: Sequence[str], evidence: Sequence[tuple[str, str]]) -> list[Resolved]:
    """:func:`resolve` for each reference, in order, without repeats."""
    return [resolve(r, evidence) for r in dict.fromkeys(refs)]
