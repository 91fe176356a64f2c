"""Words that look like names and are not: days of the week, and verbs jieba tags as names.

What it is for: :func:`evalkit.text.values.extract_atoms` reads capitalised English words
and jieba's name tags (nr, ns, ...) as names, and a name the evidence does not state makes
a claim unsupported. Two kinds of word pass those tests without being names:

- **Days of the week** ("Mondays", "Tue", "Tue–Sun", "Mon-Fri") are capitalised in English,
  and are written short or as a range in hours and timetables. A day is its own atom, its
  key the full day name, so "Tue–Sun" is stated by "Tuesday to Sunday" and "Wed" is not;
  a capitalised word before it ("Regular Mondays") is not part of a name with it.
- **A verb jieba's dictionary tags as a person name** (付清, "pay off": 付 is also a
  surname): a word tagged ``nr`` that ends its clause after a modal (须, 应, 需...), with no
  verb between them, is the verb the modal governs ("租金须在每月5日前付清"), not a person; a
  preposition's object stays a name (须经张伟批准).
"""
from __future__ import annotations

import re

from evalkit.text.wordlists import words

__all__ = ["WEEKDAYS", "weekdays_of", "zh_verb_after_modal"]

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# the short forms a timetable writes ("Mon", "Tues", "Thurs"); "Sun" and "Sat" only in a range
_SHORT = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "weds": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4}
_RANGE_ONLY = {"sat": 5, "sun": 6}
_DASH = re.compile(r"[-–—]")


def _day(word: str, in_range: bool) -> str | None:
    w = word.lower().rstrip(".")
    w = w[:-1] if w.endswith("s") and w[:-1] in WEEKDAYS else w  # "Mondays"
    if w in WEEKDAYS:
        return w
    k = _SHORT.get(w, _RANGE_ONLY.get(w) if in_range else None)
    return WEEKDAYS[k] if k is not None else None


def weekdays_of(token: str, in_range: bool = False) -> list[tuple[int, int, str]] | None:
    """The days of the week a capitalised token names, as ``(start, end, day)`` offsets into it
    ("Tue-Sun" -> [(0, 3, "tuesday"), (4, 7, "sunday")]), or None when it is not (only) days.
    ``in_range``: the token ends a range opened by the day before it ("Tue – Sun")."""
    parts = [(m.start(), m.end()) for m in re.finditer(r"[^-–—]+", token)]
    in_range = in_range or (len(parts) == 2 and bool(_DASH.search(token)))
    days = [(a, b, _day(token[a:b], in_range)) for a, b in parts]
    if not days or any(d is None for _, _, d in days) or len(days) > 2:
        return None
    return [(a, b, d) for a, b, d in days if d]


_ZH_MODALS = words("zh_modals_of_verbs")
_ZH_CLAUSE_MARK = re.compile(r"[，。；！？,;:：!?]")


def zh_verb_after_modal(words: tuple[tuple[str, str], ...], k: int) -> bool:
    """Whether jieba's word ``k`` (tagged as a person name) is the verb of a modal before it in its
    clause ("租金须在每月5日前付清": 须 ... 付清): it ends the clause (or takes an aspect particle,
    付清了), no verb and no clause mark stand between them, and it is no preposition's object (须经张伟
    批准, 将由王芳负责 keep their names)."""
    nxt = words[k + 1] if k + 1 < len(words) else ("", "x")
    if (k and words[k - 1][1] == "p") or not (nxt[0] == "" or _ZH_CLAUSE_MARK.fullmatch(nxt[0])
                                               or nxt[1] in ("ul", "uz", "ug")):
        return False
    for word, flag in reversed(words[:k]):
        if word in _ZH_MODALS:
            return True
        if flag.startswith("v") or _ZH_CLAUSE_MARK.fullmatch(word):
            return False
    return False
