"""The ``fast`` extractor's language rules: a Latin-script chunker and jieba POS patterns.

``english(text, ...)`` finds capitalised multi-word names (with connectors such as
"of" and legal suffixes such as "Pte. Ltd."), acronyms, code-like tokens (``LX-200
Pro``, ``E-4012``, ``retry.max_attempts``) and lower-case noun compounds, using word
lists instead of a trained tagger (no downloads). ``chinese(text, ...)`` reads
``jieba.posseg`` tags: ``nr``/``ns``/``nt``/``nz`` proper nouns, runs of nouns
(compounds of up to three tokens) and company names ending in a legal suffix.
Both return ``(surface, label, sentence)`` triples; ``evalkit.index.entities`` turns
them into normalised mentions.
"""
from __future__ import annotations

import logging
import re
from functools import lru_cache
from typing import Any

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
HAS_CJK = re.compile(f"[{_CJK}]")
LEGAL_EN = frozenset("inc incorporated corp corporation co company ltd limited llc plc pte gmbh ag bv".split())
LEGAL_ZH = ("股份有限公司", "有限责任公司", "有限公司", "集团公司", "集团", "公司")


_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9&'’._/+-]*[A-Za-z0-9+]|[A-Za-z0-9&]")
_UNIT = re.compile(r"^\d+(?:[.,]\d+)?[a-zA-Z]{1,4}$")
_CODE = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9]+(?:[-_./][A-Za-z0-9]+)*$|^[A-Z]{2,}-[A-Za-z0-9]+$")
_FIELD = re.compile(r"^[a-z][a-z0-9]*(?:[._][a-z0-9]+)+$")
_ACRONYM = re.compile(r"^[A-Z][A-Z0-9&]+$")
_LEGAL_GAP = re.compile(r"^[.,]{0,2}\s+$")
_TITLE = re.compile(r"^[A-Z][a-z'’-]*$")
_CAP = re.compile(r"^[A-Z][A-Za-z'’&-]*$|^[a-z]+[A-Z][A-Za-z]*$")
PRODUCT_SUFFIXES = frozenset("Pro Plus Max Mini Lite Ultra Air SE".split())
CONNECTORS = frozenset({"of", "&", "de", "von", "van", "da", "del", "la"})
FUNCTION_WORDS = frozenset("""
a an the this that these those there here it its it's they them their theirs we us our you your he him his she her
i me my mine who whom whose which what when where why how whether if then than so as because while although though
and or but nor not no yes either neither both each every all any some many much more most few less least other
another such same own only also just even still yet already again ever never always often sometimes very too quite
of in on at by for from to into onto upon with without within about above below over under between among through
during before after since until till against toward towards across along around behind beyond near off out up down
is am are was were be been being has have had having do does did done can could may might must shall should will
would per via vs etc e.g i.e one two three four five six seven eight nine ten first second third new old
""".split())
COMMON_VERBS = frozenset("""
make makes made making use uses used using ship ships shipped supply supplies supplied supplying provide provides
provided include includes included including get gets got give gives given go goes went take takes took taken see
sees saw seen know knows knew known say says said tell tells told ask asks asked need needs needed want wants wanted
allow allows allowed require requires required compete competes competed sell sells sold buy buys bought run runs
ran leads led hold holds held keep keeps kept submit submitted set sets apply applies applied start starts
started become becomes became find finds found call calls called work works worked play plays played born based
located founded released directed written starring known named serves served produced
""".split())
STOP_CAPS = frozenset("""
i a an the this that these those it he she they we you my our your his her their if when where while for in on at
by to of and or but not no yes note notes january february march april may june july august september october
november december monday tuesday wednesday thursday friday saturday sunday
""".split())


def english(text: str, sentence: int, at_start: bool, compounds: bool) -> list[tuple[str, str, int]]:
    """(surface, label, sentence) for names, acronyms, codes and noun compounds in a Latin run."""
    toks = [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]

    def joined(j: int) -> bool:  # token j follows token j-1 with only a space between them
        return text[toks[j - 1][2]:toks[j][1]].isspace()

    out: list[tuple[str, str, int]] = []
    i = 0
    while i < len(toks):
        word, s, e = toks[i]
        if _FIELD.match(word) and len(word) >= 5:
            out.append((word, "code", sentence))
            i += 1
        elif _CODE.match(word) and not _UNIT.match(word):
            j = i + 1
            while j < len(toks) and joined(j) and (toks[j][0] in PRODUCT_SUFFIXES or (
                    toks[j][0].isdigit() and len(toks[j][0]) <= 2 and word[-1].isalpha())):
                j += 1
            out.append((text[s:toks[j - 1][2]], "code", sentence))
            i = j
        elif _CAP.match(word) or _ACRONYM.match(word):
            j = i + 1
            while j < len(toks):
                nxt = toks[j][0]
                gap = text[toks[j - 1][2]:toks[j][1]]
                if nxt.lower() in LEGAL_EN and nxt[0].isupper() and _LEGAL_GAP.match(gap):
                    j += 1
                elif not gap.isspace():
                    break
                elif _CAP.match(nxt) or _ACRONYM.match(nxt):
                    j += 1
                elif (nxt.lower() in CONNECTORS and j + 1 < len(toks) and _CAP.match(toks[j + 1][0])
                      and joined(j + 1)):
                    j += 2
                else:
                    break
            span, first = toks[i:j], at_start and i == 0
            while span and span[0][0].lower() in FUNCTION_WORDS | STOP_CAPS and not _ACRONYM.match(span[0][0]):
                span, first = span[1:], False
            end = toks[j - 1][2]
            # "Supplier Profile: ..." is a field label, "Orvanta Semiconductor Pte. Ltd.: 81" is not
            label_colon = (text[end:end + 2].lstrip().startswith((":", "：")) and len(span) <= 2
                           and not any(t[0].lower() in LEGAL_EN for t in span))
            if span and not label_colon:
                surface = text[span[0][1]:span[-1][2]]
                single = len(span) == 1
                if single and _ACRONYM.match(surface):
                    out.append((surface, "acronym", sentence))
                elif single and surface.lower() in STOP_CAPS:
                    pass
                elif single and first and _TITLE.match(surface):
                    out.append((surface, "initial", sentence))  # kept only if the name recurs elsewhere
                else:
                    out.append((surface, "name", sentence))
            i = j
        elif compounds and _content(word):
            j = i + 1
            while j < len(toks) and _content(toks[j][0]) and joined(j):
                j += 1
            if j - i >= 2:
                span = toks[max(i, j - 3):j]
                out.append((text[span[0][1]:span[-1][2]], "compound", sentence))
            i = j
        else:
            i += 1
    return out


def _content(word: str) -> bool:
    return (word.isalpha() and word.islower() and len(word) >= 3 and word not in FUNCTION_WORDS
            and word not in COMMON_VERBS and not word.endswith("ly"))


NAMED_TAGS = {"nr": "person", "nrt": "person", "nrfg": "person", "nrf": "person", "ns": "place",
              "nt": "org", "nz": "proper"}
NOUN_TAGS = frozenset({"n", "nr", "nrt", "nrfg", "nrf", "ns", "nt", "nz", "j", "b", "g"})
ZH_STOP = frozenset({"城市", "地区", "国家", "全国", "各地", "本地", "当地", "国内", "海外"})


@lru_cache(maxsize=1)
def _posseg() -> Any:
    """jieba's default POS tokenizer (shares the dictionary BM25 loads; nothing is added to it)."""
    import jieba
    import jieba.posseg as pseg

    jieba.setLogLevel(logging.WARNING)
    return pseg.dt


def chinese(text: str, sentence: int, compounds: bool) -> list[tuple[str, str, int]]:
    """(surface, label, sentence) for proper nouns, company names and noun compounds."""
    toks = [(w.word, w.flag) for w in _posseg().cut(text)]
    out: list[tuple[str, str, int]] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) >= 2 and compounds and run[-1] != "b":
            words = run_words[-3:]
            if sum(len(w) for w in words) <= 12:
                out.append(("".join(words), "compound", sentence))
        run.clear()
        run_words.clear()

    run_words: list[str] = []
    i = 0
    while i < len(toks):
        word, flag = toks[i]
        if word in LEGAL_ZH and run_words:  # company name: the noun run plus its legal suffix
            out.append(("".join(run_words[-4:]) + word, "org", sentence))
            run.clear()
            run_words.clear()
            i += 1
            continue
        if (word in ("（", "(") and run_words and i + 3 < len(toks) and toks[i + 2][0] in ("）", ")")
                and toks[i + 3][0] in LEGAL_ZH):
            out.append(("".join(run_words[-4:]) + word + toks[i + 1][0] + toks[i + 2][0] + toks[i + 3][0],
                        "org", sentence))
            run.clear()
            run_words.clear()
            i += 4
            continue
        if flag in NAMED_TAGS and len(word) >= 2 and HAS_CJK.search(word) and word not in ZH_STOP:
            out.append((word, NAMED_TAGS[flag], sentence))
        if flag in NOUN_TAGS and HAS_CJK.fullmatch(word[:1]) and HAS_CJK.search(word):
            run.append(flag)
            run_words.append(word)
        else:
            flush()
        i += 1
    flush()
    return out
