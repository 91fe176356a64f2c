"""Atoms: the checkable facts of a text (numbers, durations, times, dates, codes, named
entities), extracted as VALUES, and the test of whether evidence states one.

What it is for: a claim is only as supported as its atoms. ``5,000`` and ``五千`` are
one number, ``2026/1/1`` and ``January 1, 2026`` one date, ``LX200`` and ``LX-200`` one
code, ``Kraków`` and ``Krakow`` one name. :func:`extract_atoms` reads a text once; an
:class:`AtomPool` holds the atoms and text of an evidence window for fast look-ups.

Codes: ``E-4012``, ``LX-200 Pro``, ``retry.max_attempts``, ``/auth/refresh``, e-mail
addresses. Entities: English capitalised spans (``Space Shuttle Discovery``) and all-caps
acronyms (``IT``, ``RESET``); a sentence's capitalised first word is not a name by itself
("Keep", "Hold", "Contact": a plain capitalised word alone, or before an acronym or code,
is left out; "East China", "Zhou Mingxuan" stay whole); Chinese jieba part-of-speech
names (nr, ns, nt, nz) merged across ``·``, capitalised Latin words in Chinese text
(``LanCloud``), and names in 《书名号》 or quotes. A day of the week is its own name, keyed
by the full day ("Tue–Sun"); a verb jieba tags as a person after a modal (须…付清) is none
(:mod:`evalkit.text.names`). A text is read as Chinese or English by
its dominant script (:func:`evalkit.text.claims.is_chinese`); English with a Chinese
name in it gets both.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from evalkit.text.claims import is_chinese
from evalkit.text.dates import DateValue, date_supported, find_dates
from evalkit.text.lexicon import CJK
from evalkit.text.memo import enabled
from evalkit.text.names import WEEKDAYS, weekdays_of, zh_verb_after_modal
from evalkit.text.postag import in_dictionary, posseg
from evalkit.text.quantities import (
    Quantity,
    bare_number_states,
    find_quantities,
    find_times,
    implied_units,
    quantities_match,
)
from evalkit.text.wordlists import phrases, words

__all__ = ["Atom", "AtomPool", "extract_atoms", "fold", "is_name_fragment", "mask_atoms", "name_forms"]


@dataclass(frozen=True)
class Atom:
    """One checkable fact of a text. ``key`` is its normalised form (what gets compared)."""

    kind: str                       # number | duration | time | date | code | entity
    text: str                       # as written
    key: str
    start: int = 0
    end: int = 0
    quantity: Quantity | None = None
    dates: tuple[DateValue, ...] = ()
    parts: tuple[str, ...] = ()     # a merged Chinese name's jieba words (哈勃 + 望远镜); of an English name
    #                                 that opens a sentence, its words after the first (Contact | Maria Gomez)

    def describe(self) -> str:
        """How a reason names it: ``number 5,000``, ``date 2026-03-01``, ``entity 'Backblaze'``."""
        if self.kind in ("entity", "code"):
            return f"{self.kind} '{self.text.strip()}'"
        return f"{self.kind} {self.text.strip()}"


_ACCENTED = re.compile(r"[\u00C0-\u024F\u1E00-\u1EFF]")


def fold(text: str) -> str:
    """Lower-case, strip accents (Kraków -> krakow), full-width -> ASCII, drop "'s"."""
    text = unicodedata.normalize("NFKC", text)
    if _ACCENTED.search(text):
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return re.sub(r"['’]s\b", "", text.lower())


def _code_key(s: str) -> str:
    return re.sub(r"[-_.\s]", "", fold(s))


# --- codes ------------------------------------------------------------------------------------
_CODE = re.compile(
    r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"                        # e-mail
    # /auth/refresh; not a rate's unit after a value ("20¢/kWh", "€0.30/kWh", "5%/yr")
    r"|(?<![A-Za-z0-9_/¢€£¥$%])/[A-Za-z][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_.-]+)*"
    r"|(?<![A-Za-z0-9_.])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?![A-Za-z0-9_])"  # retry.max_attempts
    r"|(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+"                  # created_at
    r"|(?<![A-Za-z0-9_-])(?=[A-Za-z0-9-]*[A-Za-z])(?=[A-Za-z0-9-]*\d)[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?:\.\d+)*"
    r"(?:\s(?:Pro|Max|Plus|Ultra|Lite|Mini|Air|SE)\b)?")                          # E-4012, LX-200 Pro, v1.2
_NOT_CODE = re.compile(
    r"^(?:q[1-4]|h[12]|fy\d{2}(?:\d{2})?|\d+(?:\.\d+)?(?:k|m|bn|b|mn|gb|tb|mb|kb|mah|w|kw|km|kg|cm|mm|ms|s|h|hr|hrs|min|mins|d|"
    r"st|nd|rd|th|am|pm|x|g|t|v|c|ml|l|yr|yrs|wk|wks|pct)|[a-z]{1,2}\.[a-z]{1,2}(?:\.[a-z]{1,2})*"
    # a hyphenated quantity ("2-year warranty", "30-day window", "500-MB limit"): a value, not a code
    r"|\d+(?:\.\d+)?-(?:years?|months?|weeks?|days?|hours?|minutes?|mins?|seconds?|secs?|milliseconds?|"
    r"km|kg|mb|gb|tb|kw|mah|watts?|metres?|meters?|kilometres?|kilometers?|kilograms?|percent))$", re.IGNORECASE)
# a range of two dates with its dash evened out ("1 Jun-15 Sep"): two dates, not the code "Jun-15"
_DATE_RANGE = re.compile(r"(?<=\d\s)(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*-\d{1,2}(?=\s+[A-Za-z]{3})",
                         re.IGNORECASE)


# words and numbers joined by hyphens, all lower case ("pre-1950", "10-point", "twice-per-7-days", "tier-1"):
# a phrase with numbers in it, not an identifier (those carry capitals or mix letters and digits: E-4012, v1.2)
WORDS_AND_NUMBERS = re.compile(r"(?=.*[a-z])(?=.*\d)(?:[a-z]{2,}|\d+(?:\.\d+)?)(?:-(?:[a-z]{2,}|\d+(?:\.\d+)?))+")
# an area or volume unit written without its superscript after a number ("253.6 m2", "40 ft3")
_UNIT_POWER = re.compile(r"(?<=\d)\s?(?:[kcm]?m|ft|in|yd)[23](?![A-Za-z0-9])")


def _codes(text: str) -> list[Atom]:
    out = []
    for m in _CODE.finditer(text):
        s = m.group(0).rstrip(".")
        if m.start() and _UNIT_POWER.match(text, m.start() - 1):
            continue
        if _NOT_CODE.match(s) or _DATE_RANGE.match(text, m.start()) or ("." in s and "_" not in s and "@" not in s and "/" not in s
                                  and not re.search(r"\d", s) and max(len(p) for p in s.split(".")) < 3):
            continue
        out.append(Atom("code", s, _code_key(s), m.start(), m.start() + len(s)))
    return out


# --- entities ---------------------------------------------------------------------------------
# words that are no names, unit words, connectives inside names, generic Chinese places: data/*.txt
COMMON = words("en_common")
_CURRENCY_UNITS = words("en_unit_words")
_CONNECT = words("name_connectives")
_EN_WORD = re.compile(r"[A-Za-z\u00C0-\u024F][A-Za-z\u00C0-\u024F'’&.-]*[A-Za-z\u00C0-\u024F]|[A-Z]")
_ZH_NAME_TAGS = frozenset({"nr", "nrt", "nrfg", "ns", "nt", "nz", "eng"})
_ZH_GENERIC = words("zh_generic_places")
_ZH_NAME_BREAKERS = words("zh_name_breakers")
_ZH_SURNAMES = words("zh_surnames")
_ZH_NON_INITIALS = words("zh_name_non_initials")
_QUOTED = re.compile(r"《([^《》]{1,30})》|“([^“”]{1,20})”|「([^「」]{1,20})」|『([^『』]{1,20})』")


def _plain_title(tok: str) -> bool:
    """A plain capitalised word ("Keep", "Zhou"): one capital, then lower-case letters only."""
    return len(tok) > 1 and tok[0].isupper() and tok[1:].replace("'", "").replace("’", "").islower() \
        and tok[1:].replace("'", "").replace("’", "").isalpha()


# what makes an adjective or demonym of a place name: Europe/European, China/Chinese, Italy/Italian
_NAME_SUFFIXES = ("ian", "ean", "ese", "ish", "an", "ic", "n", "i")


def name_forms(word: str) -> set[str]:
    """The adjective forms of a name word and the name of an adjective (europe <-> european).

    A name stem (the word, or the word without its final vowel) of four letters or more
    plus a demonym suffix: "European sales rose 6%" states Europe's sales. Irregular forms
    (France/French) are not derived.
    """
    stems = {word} | ({word[:-1]} if word[-1:] in "aeiouy" else set())
    out = {s + x for s in stems if len(s) >= 4 for x in ("",) + _NAME_SUFFIXES}  # Germany/German
    for x in _NAME_SUFFIXES:
        base = word[:-len(x)]
        if word.endswith(x) and len(base) >= 4:
            out |= {base} | {base + v for v in "aeoy"}
    out.discard(word)
    return out


FRAGMENT_WORDS = 4  # words a whole answer of names has at most ("University of New South Wales" has five: a sentence)
_PLACEHOLDERS = frozenset(p.lower() for p in phrases("no_value_placeholders"))
_FRAGMENT_EDGE = re.compile(r"^[\s\"'“”‘’(]+|[\s\"'“”‘’).!]+$")


def is_name_fragment(text: str) -> bool:
    """Whether a whole answer is a fragment of names, not a sentence ("Brisbane", "Columbus, Ohio"): at most
    :data:`FRAGMENT_WORDS` words, each capitalised or a connective ("of", "de"), the first not a common word
    ("Yes") or a placeholder ("Unknown"), no acronym ("Contact IT"), no other mark than , ' & . - (a heading has
    ":", "*" or "#"). Its first word is then no sentence-initial capital: a one-word answer "Brisbane" is a name
    (``extract_atoms(fragment=True)``). Only a whole answer: "Partly." before "The match applies ..." opens a
    sentence."""
    core = _FRAGMENT_EDGE.sub("", text)
    toks = _EN_WORD.findall(core)
    if not toks or len(toks) > FRAGMENT_WORDS or ":" in core or re.search(r"[^\w\s,'’&.-]", core) \
            or core.lower() in _PLACEHOLDERS or toks[0].lower() in COMMON | _PLACEHOLDERS:
        return False
    return all(_plain_title(t) or t.lower() in _CONNECT for t in toks) and len(toks) == len(core.replace(",", " ").split())


def _en_entities(text: str, fragment: bool = False) -> list[Atom]:
    words = list(_EN_WORD.finditer(text))
    out: list[Atom] = []
    group: list[re.Match[str]] = []

    def flush() -> None:
        while group and group[0].group(0).lower() in _CONNECT | COMMON:
            group.pop(0)
        while group and group[-1].group(0).lower() in _CONNECT:
            group.pop()
        if not group:
            return
        if len(group) == 1 and len(group[0].group(0)) == 1 and group[0].start() and (
                text[group[0].start() - 1].isdigit() or text[group[0].start() - 1] == MASK):
            return  # the G of 5G, the K of 4K: part of a number, not a name
        first = group[0]
        initial = not fragment and not re.search(r"[A-Za-z0-9]", text[:first.start()])
        toks = [g.group(0) for g in group]
        if len(toks) == 1 and (toks[0].lower() in _CURRENCY_UNITS or (initial and toks[0].lower() in COMMON)):
            return
        if initial and _plain_title(toks[0]):
            # a sentence's first word is capitalised whatever it is ("Keep", "Hold", "Contact", "Fathers"):
            # alone it is not a name; before an acronym or code ("Hold RESET", "Contact IT") it is not part of one
            if len(toks) == 1:
                return
            if not _plain_title(toks[1]):
                group.pop(0)
                first = group[0]
            elif len(toks) >= 3:  # "Contact Maria Gomez", "Visit Acme Labs": the name may not include the first word
                s = text[first.start():group[-1].end()]
                rest = tuple(fold(g.group(0)) for g in group[1:])
                out.append(Atom("entity", s, fold(s), first.start(), group[-1].end(), parts=rest))
                return
        s = text[first.start():group[-1].end()]
        out.append(Atom("entity", s, fold(s), first.start(), group[-1].end()))

    for i, w in enumerate(words):
        tok = w.group(0)
        acronym = tok.isupper() and len(tok) > 1 and tok.isalpha()
        cap = tok[0].isupper() or acronym
        gap = text[words[i - 1].end():w.start()] if i else ""
        joinable = group and re.fullmatch(r"\s+", gap) is not None
        days = weekdays_of(tok, bool(out and out[-1].key in WEEKDAYS and re.fullmatch(r"\s*[-–—]\s*", gap))) \
            if cap else None
        if days:  # "Tue–Sun", "Regular Mondays": days of the week, each its own atom, not part of a name
            flush()
            group.clear()
            out.extend(Atom("entity", tok[a:b], d, w.start() + a, w.start() + b) for a, b, d in days)
            continue
        if cap and (tok.lower() not in COMMON | _CURRENCY_UNITS or (acronym and tok.lower() not in _CURRENCY_UNITS)):
            if not joinable:
                flush()
                group.clear()
            group.append(w)
        elif tok.lower() in _CONNECT and joinable:
            group.append(w)
        else:
            flush()
            group.clear()
    flush()
    return out


_ZH_PERSONAL = re.compile(r"[您你我]")
_ZH_POINTING = frozenset("这那哪每某该此各本其")


def _zh_counted(words: Sequence[tuple[str, str]], k: int) -> bool:
    """Whether word ``k`` opens with 每 or follows a demonstrative (这, 每, 该...) or an amount (3,000元, 两)."""
    word, prev = words[k][0], (words[k - 1] if k else ("", "x"))
    return word[0] == "每" or prev[0] in _ZH_POINTING or prev[1] == "m" or bool(re.search(r"\d$", prev[0]))


def _beside_dot(words: Sequence[tuple[str, str]], k: int) -> bool:
    """Whether word ``k`` stands beside a ``·`` (part of a transliterated name: 德劳帕迪·穆尔穆)."""
    return any(0 <= i < len(words) and words[i][0] == "·" for i in (k - 1, k + 1))


def _before_noun(words: Sequence[tuple[str, str]], k: int) -> bool:
    """Whether word ``k`` stands before a noun or an abbreviation (汀岚 of 汀岚通信: a brand before its trade)."""
    return k + 1 < len(words) and (words[k + 1][1].startswith("n") or words[k + 1][1] == "j")


def _zh_entities(text: str) -> list[Atom]:
    out: list[Atom] = []
    for m in _QUOTED.finditer(text):
        # the span inside the marks: a quoted span around a number (“满1年不满10年”) is re-read as
        # written from it, and is then looked for in the evidence text without the marks
        g = next(k for k in range(1, 5) if m.group(k))
        name = m.group(g)
        out.append(Atom("entity", name, fold(name).replace(" ", ""), m.start(g), m.end(g)))
    pos, cur, cur_start = 0, "", 0
    parts: list[str] = []
    words = posseg(text)
    for k, (word, flag) in enumerate(words + (("", "x"),)):
        start = text.find(word, pos) if word else len(text)
        pos = start + len(word)
        # an English word inside Chinese text is a name when it looks like one (LanCloud, FlowPay, OFD),
        # not a lower-case term (admin, yaml)
        name_like = (flag in _ZH_NAME_TAGS and word not in _ZH_GENERIC and word.strip()
                     and not (flag == "eng" and (len(word) < 2 or word.lower() in _CURRENCY_UNITS
                                                 or not (word[0].isupper() or re.search(r"\d", word))))
                     and not (flag == "nr" and zh_verb_after_modal(words, k))  # 须在5日前付清: a verb
                     and not _ZH_PERSONAL.search(word)  # 建议您, tagged nr: a personal pronoun is no name
                     # 费由…支付: a noun and a preposition the tagger's model joined; not 成都, a word of its dictionary
                     and not (len(word) == 2 and word[1] in _ZH_NAME_BREAKERS and not in_dictionary(word))
                     # 连休 (连休一周), 换卡 (换卡要…): a verb and its object the tagger took for a two-character person
                     # name; a given name the model joins follows a surname (张伟), and a brand a noun (汀岚通信)
                     and not (flag.startswith("nr") and len(word) == 2 and word[0] not in _ZH_SURNAMES
                              and (flag == "nrt" or not in_dictionary(word)) and not _beside_dot(words, k)
                              and not _before_noun(words, k))
                     and not (len(word) == 2 and word[0] in _ZH_NON_INITIALS)  # 最省, 约省: an adverb and its verb
                     # 这张卡 (this card), 每箱 (per box), 3,000元卡享: a measure word the tagger joined to the next
                     # word after a demonstrative or an amount, not a name
                     and not (len(word) == 2 and CJK.match(word) and _zh_counted(words, k)))
        if name_like or (word == "·" and cur):
            if not cur:
                cur_start, parts = start, []
            cur += word
            parts.append(word)
            continue
        if cur and not cur.endswith("·"):
            keys = tuple(fold(p) for p in parts if p != "·") if "·" not in cur and len(parts) > 1 else ()
            out.append(Atom("entity", cur, fold(cur).replace(" ", ""), cur_start, cur_start + len(cur), parts=keys))
        cur = ""
    return out


# --- all atoms --------------------------------------------------------------------------------
MASK = "|"


def mask_atoms(text: str, atoms: list[Atom] | tuple[Atom, ...], keep_entities: bool = True) -> str:
    """``text`` with the atoms' spans replaced by ``|`` (entities kept by default: they are words too).

    The mask is not white space, so words on either side of a masked atom never join into
    one name ("SOC 2 Type II" gives "SOC" and "Type II").
    """
    chars = list(text)
    for a in atoms:
        if keep_entities and a.kind == "entity":
            continue
        for i in range(a.start, min(a.end, len(chars))):
            if not chars[i].isspace():
                chars[i] = MASK
    return "".join(chars)


@lru_cache(maxsize=200_000)
def extract_atoms(text: str, entities: bool = True, fragment: bool = False) -> tuple[Atom, ...]:
    """All atoms of a text, each span read once: codes, then dates, times, quantities, entities.

    ``entities=False`` skips names (for evidence: a claim's name is looked for in the
    evidence *text*, so evidence needs no part-of-speech tagging, the slow part in Chinese).
    With the sharing on (:mod:`evalkit.text.memo`), the names are added to the cached atoms of
    ``entities=False``: an extractive answer's claims are evidence sentences, read already. The same
    atoms in the same order: the names are found on the same masked text, and a stable sort of the
    sorted atoms keeps their order. ``fragment``: ``text`` is a whole answer of names (:func:`is_name_fragment`),
    whose first word is no sentence-initial capital.
    """
    if entities and enabled():
        return _with_entities(text, list(extract_atoms(text, False)), fragment)
    atoms: list[Atom] = _codes(text)
    masked = mask_atoms(text, atoms)
    for d in find_dates(masked):
        atoms.append(Atom("date", d.text, "|".join(str(v) for v in d.values), d.start, d.end, dates=d.values))
    masked = mask_atoms(text, atoms)
    for q in find_times(masked):
        atoms.append(Atom("time", q.text, f"{int(q.value) // 60}:{int(q.value) % 60:02d}", q.start, q.end, q))
    masked = mask_atoms(text, atoms)
    for q in find_quantities(masked):
        key = f"{q.value:g}{q.unit or ''}" if q.kind == "number" else f"{q.value:g}s"
        atoms.append(Atom(q.kind, q.text, key, q.start, q.end, q))
    if not entities:
        return tuple(sorted(atoms, key=lambda a: (a.start, a.end)))
    return _with_entities(text, atoms, fragment)


def _with_entities(text: str, atoms: list[Atom], fragment: bool = False) -> tuple[Atom, ...]:
    """``atoms`` (the codes, dates, times and quantities of ``text``) and the names of ``text``, sorted by span."""
    masked = mask_atoms(text, atoms)
    if not CJK.search(text):
        found = _en_entities(masked, fragment and is_name_fragment(text))
    elif is_chinese(text):
        found = _zh_entities(masked)
    else:  # English with a Chinese name in it ("its lead is Zhou Mingxuan (周明轩)")
        found = _en_entities(masked) + [e for e in _zh_entities(masked) if CJK.search(e.text)]
    for e in sorted(found, key=lambda a: a.start):
        if MASK in e.text:  # a name around another atom (差旅费报销制度（2026版）): keep it as written
            written = text[e.start:e.end]
            key = fold(written).replace(" ", "") if CJK.search(written) else fold(written)
            e = Atom("entity", written, key, e.start, e.end, parts=tuple(p for p in e.parts if MASK not in p))
        if not any(a.kind == "entity" and a.start < e.end and e.start < a.end for a in atoms):
            atoms.append(e)  # 《红楼梦》 is found twice: as a title and by jieba
    return tuple(sorted(atoms, key=lambda a: (a.start, a.end)))


@dataclass
class AtomPool:
    """The atoms and text of some evidence (a window of sentences, or a question), for look-ups."""

    atoms: list[Atom] = field(default_factory=list)
    text: str = ""

    def __post_init__(self) -> None:
        self.folded = fold(self.text)
        self.compact = re.sub(r"[\s\-_.·]", "", self.folded)
        self.words = frozenset(re.findall(r"[a-z0-9\u00e0-\u024f]+", self.folded))
        self.codes = {a.key for a in self.atoms if a.kind == "code"}
        self.units = implied_units(self.text)  # units named for bare numbers (backoff_ms, 单位为秒)
        self.by_kind: dict[str, list[Atom]] = {}
        for a in self.atoms:
            self.by_kind.setdefault(a.kind, []).append(a)

    def supports(self, atom: Atom) -> bool:
        """Whether this evidence states ``atom`` (as a value; see the module docstring)."""
        if atom.kind == "code":
            return atom.key in self.codes or (len(atom.key) >= 3 and atom.key in self.compact)
        if atom.kind == "entity":
            return self._has_entity(atom)
        if atom.kind == "date":
            for e in self.by_kind.get("date", []):
                if any(date_supported(c, v) for c in atom.dates for v in e.dates):
                    return True
            years = [c.year for c in atom.dates if c.year and c.month is None and c.quarter is None]
            return any(q.quantity and q.quantity.value in years for q in self.by_kind.get("number", []))
        q = atom.quantity
        assert q is not None
        for kind in ("number", "duration", "time"):
            for e in self.by_kind.get(kind, []):
                if e.quantity is not None and quantities_match(q, e.quantity):
                    return True
        if self.units and (q.kind == "duration" or q.unit) and any(
                e.quantity is not None and bare_number_states(q, e.quantity, self.units)
                for e in self.by_kind.get("number", [])):
            return True
        if q.kind == "number" and q.unit is None and q.value == int(q.value):  # a year written as a number
            return any(v.year == q.value for e in self.by_kind.get("date", []) for v in e.dates)
        return False

    def _has_entity(self, atom: Atom) -> bool:
        key = atom.key
        if CJK.search(key):
            k = re.sub(r"[\s·]", "", key)
            if k in self.compact:
                return True
            stripped = re.sub(r"(?:省|市|县|区|州|股份有限公司|有限公司|公司|集团)$", "", k)
            if len(stripped) >= 2 and stripped in self.compact:
                return True
            # jieba sometimes glues a preposition to a name (由澄屏, 在上海): the name without it
            bare = re.sub(r"^[由在从向被给和与对把将经]", "", k)
            if bare != k and len(bare) >= 2 and bare in self.compact:
                return True
            # a merged name (哈勃 + 望远镜): every word of it is there
            return bool(atom.parts) and all(re.sub(r"\s", "", p) in self.compact for p in atom.parts)
        def stated(k: str) -> bool:
            toks = [t for t in re.findall(r"[a-z0-9\u00e0-\u024f]+", k) if t not in _CONNECT]
            return bool(toks) and all(t in self.words or t.rstrip("s") in self.words or t + "s" in self.words
                                      or any(f in self.words for f in name_forms(t)) for t in toks)
        # parts of an English name: the words after a sentence-initial capitalised word (Contact ...)
        return stated(key) or (bool(atom.parts) and stated(" ".join(atom.parts)))

    def nearest(self, atom: Atom, limit: int = 3) -> list[str]:
        """Atoms of the same kind in this evidence (to say what the evidence has instead)."""
        kinds = ("number", "duration") if atom.kind in ("number", "duration") else (atom.kind,)
        pool = self.atoms
        if atom.kind == "entity" and not self.by_kind.get("entity"):
            pool = [a for a in extract_atoms(self.text) if a.kind == "entity"]  # names: only when asked
        seen = dict.fromkeys(a.text.strip() for a in pool if a.kind in kinds)
        return list(seen)[:limit]
