"""Reach for names: whether a name a claim gives is stated by the evidence or the question in another form.

What it is for: :func:`evalkit.judges.reach.reach` asks it of every name (an entity atom) no
passage states as written. A name it finds (a word of it, its initials, most of its
characters) makes the claim ``unverified`` at worst, never ``unsupported``; a name it does not
find is absent, the positive evidence an ``unsupported`` verdict needs. What counts:

- Latin script: a word of the name of 3+ letters that is no title (2 for an acronym), a plural
  of it or a word of the same 6-letter stem ("compliant", "compliance");
- an all-capital name: the initials of consecutive evidence words ("NRW": non-revenue water; two
  letters only for two capitalised or hyphenated words, "GS": General Security);
- Chinese: all but two of its characters in a row, two at least (斯蒂夫 for 史蒂夫; not 银行 for
  中国人民银行);
- a unit read as a name ("kWh", "TEU") or a single letter ("Option B") is not looked for.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evalkit.text.lexicon import CJK
from evalkit.text.memo import shared
from evalkit.text.values import Atom, fold
from evalkit.text.wordlists import words

__all__ = ["reach_name"]

_TITLES = words("name_titles")
_PAIR = re.compile(r"\b([A-Z])[a-z]+[ -]([A-Z])[a-z]+\b|\b([a-z])[a-z]+-([a-z])[a-z]+\b")
_UNIT_NAME = re.compile(r"^(?:[kMGT]?Wh?|[mk]?L|TEU|FEU|kVA|MPa|kPa|dB|[kMG]?Hz|ppm|ppb|psi|rpm|mph|kph|Mbps|Gbps)$")


@dataclass(frozen=True)
class _NameIndex:
    """What a name is looked for in: the texts folded, without spaces, their words, 6-letter stems, initials."""

    compact: str
    words: frozenset[str]
    stems: frozenset[str]
    initials: str
    pairs: frozenset[str] = frozenset()  # initials of two capitalised or hyphenated words ("General Security": gs)


@shared(maxsize=5_000)
def _name_index(texts: tuple[str, ...]) -> _NameIndex:
    """The texts' :class:`_NameIndex` (read once for every name of every claim judged against them)."""
    folded = fold(" ".join(texts))
    words = frozenset(re.findall(r"[a-z\u00e0-\u024f]+|[0-9]+", folded))
    pairs = frozenset("".join(m).lower() for t in texts for m in _PAIR.findall(t))  # one of the two alternatives
    return _NameIndex(re.sub(r"\s", "", folded), words, frozenset(w[:6] for w in words if len(w) >= 6),
                      "".join(w[0] for w in re.findall(r"[a-z]+", folded)), pairs)


def _acronym(name: str, index: _NameIndex) -> bool:
    """Whether an all-capital name of three or more letters is the initials of consecutive evidence words
    ("NRW": non-revenue water), or one of two letters those of two capitalised or hyphenated words ("GS":
    General Security, "AF": acre-feet; any two consecutive words would fit two letters by chance)."""
    if re.fullmatch(r"[A-Z]{2}s?", name):
        return name.rstrip("s").lower() in index.pairs
    return bool(re.fullmatch(r"[A-Z]{3,6}s?", name)) and name.rstrip("s").lower() in index.initials


def reach_name(target: Atom, texts: Sequence[str]) -> str | None:
    index = _name_index(tuple(texts))
    if _UNIT_NAME.match(target.text.strip()):
        return f"{target.text.strip()} is a unit, not a name"
    if re.fullmatch(r"[A-Z]\.?", target.text.strip()):  # "Option B", "G/90": a label, not a name to look for
        return f"{target.text.strip()} is one letter: too short to be looked for as a name"
    if _acronym(target.text.strip(), index):
        return f"{target.text.strip()} is the initials of words in the evidence"
    if CJK.search(target.text):
        name = re.sub(r"[\s·]", "", target.text)
        if len(name) < 2:
            return f"{target.text.strip()} is one character: too short to be looked for as a name"
        n = max(2, len(name) - 2)  # 斯蒂夫 for 史蒂夫; not 银行 for 中国人民银行
        part = next((name[i:i + n] for i in range(len(name) - n + 1) if CJK.search(name[i:i + n])
                     and name[i:i + n] in index.compact), None)
        return f"'{part}' of {target.text.strip()} is in the evidence" if part else None

    def found(w: str) -> bool:  # the word, a plural, or a word of the same stem ("compliant", "compliance")
        return w in index.words or w.rstrip("s") in index.words or (len(w) >= 6 and w[:6] in index.stems)

    short = 2 if target.text.strip().isupper() else 3  # an acronym ("DB", "HF") may be two letters
    word = next((w for w in re.findall(r"[a-z\u00e0-\u024f]+|[0-9]+", fold(target.text))
                 if len(w) >= short and w not in _TITLES and found(w)), None)
    return f"'{word}' of {target.text.strip()} is in the evidence" if word else None
