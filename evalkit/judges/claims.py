"""Split an answer into claims (sentences) and a claim into clauses, for Chinese and English.

A *claim* is one answer sentence: the unit a judge gives a verdict on. Sentences end at
Chinese 。！？； (and their ASCII forms ! ? in Chinese text), at line breaks, and at an
English ``.``/``!``/``?`` followed by white space, with care for what only looks like an
end: decimals (3.5), versions (v1.2), abbreviations (e.g., i.e., No. 5, Dr.), initials
(J. K. Rowling) and codes (E-4012). Citation markers (``[fin-004]``, ``[1]``, ``【2】``)
and leading list bullets (``-``, ``*``, ``1.``, ``(2)``) are removed; empty fragments are
dropped. Everything here is deterministic and model-free.

A *clause* is a part of a sentence between commas, semicolons, colons and contrast words
(but, though, 但, 不过...): the unit a polarity (negation) check compares.
"""
from __future__ import annotations

import re

__all__ = ["split_claims", "split_clauses", "split_sentences", "strip_citations"]

_CITATION = re.compile(r"\s*(?:\[\^?[\w.:#/-]+(?:\s*[,;]\s*[\w.:#/-]+)*\]|【[\w.:#/-]+(?:[,，]\s*[\w.:#/-]+)*】)")
_BULLET = re.compile(r"^\s*(?:[-*•·‣▪–—]+\s+|\d{1,3}[.)]\s+|\d{1,3}[、）]\s*|[（(]\d{1,3}[)）]\s*|[a-z][.)]\s+)")
_ZH_END = re.compile(r"[。！？；!?](?:[”’」』》）)\"']*)")
# ASCII sentence ends: [.!?] (plus closing quotes/brackets) followed by white space
_EN_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)")
def _words(text: str) -> frozenset[str]:
    """The white-space separated words of ``text`` (how word lists are written here)."""
    return frozenset(text.split())


_ABBREV = _words(
    "e.g i.e etc vs cf al no nos fig figs approx dept est inc ltd co corp mr mrs ms dr prof sr jr st "
    "jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k a.m p.m ph.d vol pp ca"
)
_CONTRAST = r"(?:but|though|although|whereas|while|however|yet|except that)"
_CLAUSE_SPLIT = re.compile(
    rf"\s*[;:；：，]\s*(?:但是|但|不过|然而|而是|却)?|,\s+|\s+[-–—]\s+|\s+{_CONTRAST}\s+|(?<=[\u4e00-\u9fff])(?:但是|但|不过|然而|而是|却)"
)
_CJK = re.compile(r"[\u3400-\u9fff]")


def strip_citations(text: str) -> str:
    """Remove citation markers such as ``[fin-004]``, ``[1, 2]``, ``[^3]`` and ``【1】``."""
    return _CITATION.sub("", text)


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
    claims: list[str] = []
    for line in re.split(r"[\r\n]+", strip_citations(answer)):
        line = _BULLET.sub("", line, count=1).strip()
        for sent in split_sentences(line):
            sent = re.sub(r"\s+([.!?。！？；,，])", r"\1", sent).strip()
            if _has_content(sent):
                claims.append(sent)
    return claims


def split_clauses(sentence: str) -> list[str]:
    """Clauses of one sentence (split at , ; : and contrast words), for polarity checks."""
    body = re.sub(r"[。！？!?.]+$", "", sentence.strip())
    parts = [p.strip() for p in _CLAUSE_SPLIT.split(body)]
    return [p for p in parts if p and _has_content(p)]


def is_chinese(text: str, share: float = 0.2) -> bool:
    """True when CJK characters make up at least ``share`` of the letters and characters."""
    letters = re.findall(r"[A-Za-z\u3400-\u9fff]", text)
    return bool(letters) and sum(1 for c in letters if _CJK.match(c)) / len(letters) >= share
