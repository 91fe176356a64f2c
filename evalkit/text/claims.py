"""Split an answer into claims (sentences) and a claim into clauses, for Chinese and English.

A *claim* is one answer sentence: the unit a judge gives a verdict on. Sentences end at
Chinese 。！？； (and their ASCII forms ! ? in Chinese text), at line breaks, and at an
English ``.``/``!``/``?`` followed by white space, with care for what only looks like an
end: decimals (3.5), versions (v1.2), abbreviations (e.g., i.e., No. 5, Dr., Pte. Ltd.),
initials (J. K. Rowling) and codes (E-4012). Citation markers (every form
:mod:`evalkit.text.citations` reads: ``[fin-004]``, ``[1]``, ``【2】``, ``（来源：id）``...)
and leading list bullets (``-``, ``*``, ``1.``, ``(2)``) are removed; empty fragments are
dropped. :func:`cited_claims` keeps each claim's citation references: a marker belongs to
the sentence it ends (``... 750 元。[fin-004]`` cites for the sentence before it) or sits in.
Everything here is deterministic and model-free.

A *clause* is a part of a sentence between commas, semicolons, colons and contrast words
(but, though, 但, 不过...): the unit a polarity (negation) check compares.
"""
from __future__ import annotations

import re

from evalkit.text.citations import SCORE_ECHO, find_markers, strip_markers
from evalkit.text.memo import shared
from evalkit.text.wordlists import words

__all__ = ["cited_claims", "clause_spans", "split_claims", "split_clauses", "split_sentences", "strip_citations"]

_BULLET = re.compile(r"^\s*(?:[-*•·‣▪–—]+\s+|\d{1,3}[.)]\s+|\d{1,3}[、）]\s*|[（(]\d{1,3}[)）]\s*|[a-z][.)]\s+)")
_ZH_END = re.compile(r"[。！？；!?](?:[”’」』》）)\"']*)")
# ASCII sentence ends: [.!?] (plus closing quotes/brackets) followed by white space
_EN_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)")
_ABBREV = words("abbreviations")
_CONTRAST = r"(?:but|though|although|whereas|while|however|yet|except that)"
_CLAUSE_SPLIT = re.compile(
    rf"\s*[;:；：，]\s*(?:但是|但|不过|然而|而是|却)?|,\s+|\s+[-–—]\s+|\s+{_CONTRAST}\s+|(?<=[\u4e00-\u9fff])(?:但是|但|不过|然而|而是|却)"
)
_CJK = re.compile(r"[\u3400-\u9fff]")


def strip_citations(text: str) -> str:
    """Remove citation markers such as ``[fin-004]``, ``[1, 2]``, ``[^3]``, ``【1】``, ``（来源：x）``."""
    return strip_markers(text)


def _is_false_end(text: str, dot_at: int) -> bool:
    """Whether the ``.`` at ``dot_at`` ends an abbreviation or an initial rather than a sentence."""
    if text[dot_at] != ".":
        return False
    m = re.search(r"([A-Za-z][A-Za-z.]*)$", text[:dot_at])
    if not m:
        return False
    word = m.group(1).lower().rstrip(".")
    if word in _ABBREV:
        # "No. 5" is an abbreviation; "... answer is no. Next" is a sentence end
        if word == "no":
            return bool(re.match(r"\.\s*\d", text[dot_at:]))
        return True
    return len(m.group(1)) == 1 and m.group(1).isupper()  # an initial: "J. K. Rowling"


def split_sentences(text: str) -> list[str]:
    """Split text into sentences (no citation or bullet handling); keeps the end punctuation."""
    out: list[str] = []
    for line in re.split(r"[\r\n]+", text):
        start = 0
        ends = sorted({m.end() for m in _ZH_END.finditer(line)}
                      | {m.end() for m in _EN_END.finditer(line) if not _is_false_end(line, m.start())})
        for end in ends:
            piece = line[start:end].strip()
            if piece:
                out.append(piece)
            start = end
        tail = line[start:].strip()
        if tail:
            out.append(tail)
    return out


def _has_content(piece: str) -> bool:
    return bool(re.search(r"[A-Za-z0-9\u3400-\u9fff]", piece))


def split_claims(answer: str) -> list[str]:
    """The claims of an answer: its sentences, without citation markers, bullets or empty pieces.

    >>> split_claims("Revenue was $3.5 million [fin-004]. It grew 12%.")
    ['Revenue was $3.5 million.', 'It grew 12%.']
    """
    return [c for c, _ in cited_claims(answer)]


_PLACEHOLDER = "\u2063"  # INVISIBLE SEPARATOR: stands for a marker while sentences are split


def cited_claims(answer: str) -> list[tuple[str, tuple[str, ...]]]:
    """The claims of an answer (as :func:`split_claims`), each with the references it cites.

    A marker belongs to the sentence it sits in or ends; a marker at the start of a
    sentence (``。[1] Next``) belongs to the sentence before it. References are as
    written (``"fin-004"``, ``"1"``); :func:`evalkit.text.citations.resolve` maps them.

    >>> cited_claims("上限 750 元。[fin-004] 超标自付 [2]。")
    [('上限 750 元。', ('fin-004',)), ('超标自付。', ('2',))]
    """
    return list(_cited_claims(answer))


@shared(maxsize=20_000)
def _cited_claims(answer: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """:func:`cited_claims`, once per answer text (the judge splits an answer, the citation check again)."""
    out: list[tuple[str, list[str]]] = []
    for raw_line in re.split(r"[\r\n]+", SCORE_ECHO.sub("", answer)):  # a score echoed from the prompt is no claim
        markers = find_markers(raw_line)
        refs_of: list[tuple[str, ...]] = [m.refs for m in markers]
        line, last = [], 0
        for mk in markers:  # each marker becomes one placeholder character, so sentences split as before
            line.append(raw_line[last:mk.start].rstrip(" \t"))
            line.append(_PLACEHOLDER)
            last = mk.end
        line.append(raw_line[last:])
        text = _BULLET.sub("", "".join(line), count=1).strip()
        k = 0
        for sent in split_sentences(text):
            lead = len(sent) - len(sent.lstrip(_PLACEHOLDER + " "))
            n_lead = sent[:lead].count(_PLACEHOLDER)
            if n_lead and out:  # markers opening a sentence cite for the sentence before it
                out[-1][1].extend(r for refs in refs_of[k:k + n_lead] for r in refs)
            n = sent.count(_PLACEHOLDER)
            mine = [r for refs in refs_of[k + n_lead:k + n] for r in refs]
            k += n
            body = re.sub(r"\s+([.!?。！？；,，])", r"\1", sent.replace(_PLACEHOLDER, "")).strip()
            if _has_content(body):
                out.append((body, mine))
            elif mine and out:
                out[-1][1].extend(mine)
    return tuple((c, tuple(dict.fromkeys(refs))) for c, refs in out)


def split_clauses(sentence: str) -> list[str]:
    """Clauses of one sentence (split at , ; : and contrast words), for polarity checks."""
    return [sentence[a:b] for a, b in clause_spans(sentence)]


def clause_spans(sentence: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each clause of :func:`split_clauses` in ``sentence`` (stripped, with content)."""
    body_end = len(re.sub(r"[。！？!?.]+\s*$", "", sentence))
    cuts = [(m.start(), m.end()) for m in _CLAUSE_SPLIT.finditer(sentence, 0, body_end)]
    starts = [0] + [e for _, e in cuts]
    ends = [s for s, _ in cuts] + [body_end]
    out = []
    for a, b in zip(starts, ends):
        piece = sentence[a:b]
        if piece.strip() and _has_content(piece):
            lead = len(piece) - len(piece.lstrip())
            out.append((a + lead, a + len(piece.rstrip())))
    return out


@shared(maxsize=100_000)
def is_chinese(text: str, share: float = 0.2) -> bool:
    """True when CJK characters make up at least ``share`` of the letters and characters."""
    letters = re.findall(r"[A-Za-z\u3400-\u9fff]", text)
    return bool(letters) and sum(1 for c in letters if _CJK.match(c)) / len(letters) >= share
