"""Where to cut a document: fixed windows, recursive separators, semantic breakpoints.

Every splitter returns ``(start, end)`` character spans of the original text, so a chunk
is always an exact slice of its document. Sizes are measured by a :class:`Measure`:
characters (``unit: chars``), or the tokens of an embedder's tokenizer (``unit: tokens``,
``evalkit.index.tokens``), so a "512 tokens, 128 overlap" config means what it says for the
model that encodes the chunks. A chunk never measures more than its size (a single
character longer than the size in tokens is the only exception: it is kept whole).

- :func:`window_spans` (``fixed``): windows of ``size`` overlapping by ``overlap``; a
  window's end moves back to the nearest sentence or word boundary in its last fifth.
- :func:`recursive_spans` (``recursive``): split at the first separator of the list that
  occurs (paragraphs, lines, sentence ends, commas, spaces by default), split pieces that
  are still too long at the next separators, hard-cut what no separator splits, then merge
  consecutive pieces up to ``size`` with up to ``overlap`` of the previous chunk's trailing
  pieces repeated (LangChain's RecursiveCharacterTextSplitter, with separators kept at the
  end of their piece so Chinese punctuation stays with its sentence).
- :func:`semantic_spans` (``semantic``): embed every sentence, and start a new chunk where
  the cosine similarity of adjacent sentences drops: below ``threshold``, or (``percentile``)
  where the distance ``1 - cos`` is above that percentile of the document's distances.
  Chunks above ``max_size`` are split recursively; chunks below ``min_size`` are merged
  into a neighbour when the result fits ``max_size``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from evalkit.index.tokens import TokenCounter
from evalkit.text.sentences import sentence_spans

Span = tuple[int, int]
_BOUNDARY = set("。！？；!?;\n") | {" ", "，", ",", "、", "\t"}
DEFAULT_SEPARATORS: tuple[str, ...] = ("\n\n", "\n", "。", "！", "？", "；", ". ", "! ", "? ", "; ", "，", ", ",
                                       "、", " ", "")


class Measure:
    """How chunk sizes are counted: characters (no counter), or an embedder's tokens."""

    def __init__(self, counter: TokenCounter | None = None):
        self.counter = counter

    def size(self, text: str) -> int:
        return len(text) if self.counter is None else self.counter.count(text)

    def end_within(self, text: str, start: int, n: int, stop: int | None = None) -> int:
        """The largest ``end <= stop`` with ``size(text[start:end]) <= n`` (at least ``start + 1``)."""
        stop = len(text) if stop is None else stop
        if self.counter is None:
            return min(start + max(n, 1), stop)
        return self.counter.prefix_chars(text[:stop], n, start)

    def start_within(self, text: str, end: int, n: int, lo: int) -> int:
        """The smallest ``start >= lo`` with ``size(text[start:end]) <= n`` (the overlap's start)."""
        if self.counter is None:
            return max(end - n, lo)
        a, b = lo, end  # size(text[end:end]) = 0 <= n, so b qualifies
        while a < b:
            mid = (a + b) // 2
            if self.size(text[mid:end]) <= n:
                b = mid
            else:
                a = mid + 1
        return a


CHARS = Measure()


def window_spans(text: str, size: int, overlap: int, measure: Measure = CHARS) -> list[Span]:
    """Spans of ``size`` overlapping by ``overlap``, ending on a boundary if one is near.

    Always returns at least one span, covers the whole text, and makes progress.
    """
    n = len(text)
    if measure.size(text) <= size:
        return [(0, n)]
    spans: list[Span] = []
    start = 0
    while start < n:
        end = measure.end_within(text, start, size)
        if end < n:
            floor = start + max(1, ((end - start) * 4) // 5)
            cut = end
            while cut > floor and text[cut - 1] not in _BOUNDARY:
                cut -= 1
            if cut > floor:
                end = cut
        spans.append((start, end))
        if end >= n:
            break
        start = max(measure.start_within(text, end, overlap, start + 1), start + 1)
    return spans


def _trim(text: str, span: Span) -> Span | None:
    s, e = span
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return (s, e) if e > s else None


def _pieces(text: str, s: int, e: int, separators: Sequence[str], size: int, measure: Measure) -> list[Span]:
    """Spans of ``text[s:e]`` no longer than ``size``, cut at the first separator that occurs (recursively)."""
    if measure.size(text[s:e]) <= size:
        return [(s, e)]
    for i, sep in enumerate(separators):
        if sep == "" or text.find(sep, s, e) == -1:
            continue
        parts, start = [], s
        pos = text.find(sep, s, e)
        while pos != -1:
            cut = min(pos + len(sep), e)
            if cut > start:
                parts.append((start, cut))  # the separator stays at the end of its piece
            start = cut
            pos = text.find(sep, start, e)
        if start < e:
            parts.append((start, e))
        rest = separators[i + 1:]
        return [p for a, b in parts for p in _pieces(text, a, b, rest, size, measure)]
    out, start = [], s  # no separator splits it: hard windows
    while start < e:
        end = measure.end_within(text, start, size, e)
        out.append((start, end))
        start = end
    return out


def recursive_spans(text: str, size: int, overlap: int, separators: Sequence[str] = DEFAULT_SEPARATORS,
                    measure: Measure = CHARS) -> list[Span]:
    """Chunks of at most ``size`` cut at separators, with up to ``overlap`` repeated (see the module docstring)."""
    chunks: list[Span] = []
    current: list[Span] = []
    for piece in _pieces(text, 0, len(text), separators, size, measure):
        if current and measure.size(text[current[0][0]:piece[1]]) > size:
            chunks.append((current[0][0], current[-1][1]))
            while current and (measure.size(text[current[0][0]:current[-1][1]]) > overlap
                               or measure.size(text[current[0][0]:piece[1]]) > size):
                current.pop(0)
        current.append(piece)
    if current:
        chunks.append((current[0][0], current[-1][1]))
    trimmed = [t for c in chunks if (t := _trim(text, c)) is not None]
    return trimmed or [(0, len(text))]


def semantic_spans(text: str, encode: Callable[[list[str]], np.ndarray], *, percentile: float | None = None,
                   threshold: float | None = None, max_size: int, min_size: int,
                   separators: Sequence[str] = DEFAULT_SEPARATORS, measure: Measure = CHARS) -> list[Span]:
    """Chunks that end where adjacent sentences' embedding similarity drops (see the module docstring).

    ``encode(sentences)`` returns L2-normalised vectors (an embedder's ``encode_passages``).
    Exactly one of ``percentile`` (0-100) and ``threshold`` (a cosine) is given.
    """
    if (percentile is None) == (threshold is None):
        raise ValueError("give exactly one of percentile and threshold")
    sentences = sentence_spans(text)
    if not sentences:
        return [(0, len(text))]
    breaks: set[int] = set()  # a chunk ends after sentence i
    if len(sentences) > 1:
        vecs = np.asarray(encode([text[s:e] for s, e in sentences]), dtype=np.float64)
        sims = np.einsum("ij,ij->i", vecs[:-1], vecs[1:])
        if threshold is not None:
            breaks = {i for i, c in enumerate(sims) if c < threshold}
        elif percentile is not None:  # always, given exactly one of the two (checked above)
            cutoff = float(np.percentile(1.0 - sims, percentile))
            breaks = {i for i, d in enumerate(1.0 - sims) if d > cutoff}
    groups: list[Span] = []
    first = 0
    for i in range(len(sentences)):
        if i in breaks or i == len(sentences) - 1:
            groups.append((sentences[first][0], sentences[i][1]))
            first = i + 1
    groups = _merge_small(text, groups, min_size, max_size, measure)
    out: list[Span] = []
    for s, e in groups:
        if measure.size(text[s:e]) <= max_size:
            out.append((s, e))
        else:
            out += [(s + a, s + b) for a, b in recursive_spans(text[s:e], max_size, 0, separators, measure)]
    return out


def _merge_small(text: str, groups: list[Span], min_size: int, max_size: int, measure: Measure) -> list[Span]:
    """Merge each group smaller than ``min_size`` into the next (the last into the previous) when it fits."""
    out: list[Span] = []
    i = 0
    while i < len(groups):
        s, e = groups[i]
        while measure.size(text[s:e]) < min_size and i + 1 < len(groups) \
                and measure.size(text[s:groups[i + 1][1]]) <= max_size:
            i += 1
            e = groups[i][1]
        out.append((s, e))
        i += 1
    if len(out) > 1 and measure.size(text[out[-1][0]:out[-1][1]]) < min_size \
            and measure.size(text[out[-2][0]:out[-1][1]]) <= max_size:
        out[-2:] = [(out[-2][0], out[-1][1])]
    return out
