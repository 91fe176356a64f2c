"""Whether a clause has a subject of its own: a noun phrase or pronoun before its verb.

What it is for: :func:`evalkit.judges.grounding.segments` gives a clause that states values
but names nothing the previous clause's subject ("华南区更高：2,240 万元": the number is the
South region's). A clause that opens with its own subject is about that subject, not the
previous one: in "Anna Weber leads the project and the pilot runs for 6 weeks" the six
weeks are the pilot's, in "欧盟退货由都柏林仓库处理，退款在 14 天内发放" the fourteen days
are the refunds'. Its values are then not bound to the previous name; the grounding binds
them to the subject's own words instead, when the evidence states them
(:func:`evalkit.judges.grounding.ground_atoms`).

The rule reads only the words before the clause's verb, with closed word classes (no
tagger model is needed):

- **Chinese** (jieba part-of-speech tags): after time words, adverbs and conjunctions
  (目前, 同时), the first word is a pronoun (它, 其, 该), a noun (tags ``n*``: 销售额,
  试用期, 发货) whose noun phrase is followed by a predicate, not directly by a value (a
  label and its value, "目标 2,300 万元", has none), or a verb used as a noun, i.e. directly
  followed by a preposition or modal that opens a predicate (退款 **在** ..., 报销 **需在**
  ..., 审批 **需要** ...). A clause that opens with a verb, modal, preposition or
  comparison (同比增长 6%, 要在一年内休完, 为 1,270 万元, 比上季度高, 增长至) or with its
  value has none.
- **English**: after a leading coordinator (and, but, while...), the clause opens with a
  subject pronoun (it, they...), or a determiner / possessive (the, its, each...) followed
  by a noun and a verb (an auxiliary or modal, or a word ending in -s / -ed: "the pilot
  runs", "its case recharges"), or a plain noun followed by an auxiliary ("refunds are
  issued", "shipping is free") or a plural followed by a plain verb ("refunds take"). A
  verb phrase ("and has 25 seats"), an adverb ("and also costs"), a noun phrase without a
  verb ("an increase of 24%"), a relative pronoun ("the Team plan, which gets 600
  requests"; it stands for the name before) has none.

A plain noun before a plain verb is a subject only for a plural and a verb of a short
list ("refunds take 14 days", "licences expire after 1 year"): telling "refunds take"
from "costs $10" needs to know which words are verbs. Known limits: a verb phrase opened by
a plain noun outside these patterns ("... and service fees apply" is read, "customer data
goes to Dublin" is not); an attribute noun ("华南区表现最好，销售额为 2,240 万元", "Shenzhen
counts as tier 1, so the cap is CNY 750") is read as a subject of its own, so its value is
checked anywhere in the evidence, not with the name before.
"""
from __future__ import annotations

import re
from functools import lru_cache

from evalkit.text.claims import is_chinese
from evalkit.text.postag import posseg
from evalkit.text.wordlists import words

__all__ = ["asides", "only_time", "own_subject"]


# the word lists (modals, pronouns, determiners, verbs...) are data/*.txt, each file saying what for
# --- Chinese -------------------------------------------------------------------------------------
_NUMERAL = re.compile(r"[\d.,%，、：:；;（）()]+")
_ZH_MODALS = words("zh_modals")  # a modal opens a predicate, not a subject
_ZH_PRONOUNS = words("zh_pronouns")
_ZH_SKIP_TAGS = ("t", "c", "d", "x", "uj", "ul")  # time words, conjunctions, adverbs, marks, particles
_ZH_PREDICATE_OPENERS = words("zh_predicate_openers")


def _zh_own_subject(text: str) -> str | None:
    words = [(w, f) for w, f in posseg(text) if w.strip()]
    for k, (word, flag) in enumerate(words):
        nxt = words[k + 1] if k + 1 < len(words) else ("", "x")
        if _NUMERAL.fullmatch(word) or flag == "m" or word in _ZH_MODALS:
            return None  # the value or a modal comes first: "2,240 万元", "要在一年内休完"
        if word in _ZH_PRONOUNS and flag.startswith("r"):
            return word
        if flag.startswith("n"):
            # a noun phrase, then its predicate: "住宿费每晚上限为 800 元", not a label and its value
            # ("目标 2,300 万元", "典型 15 瓦") nor a mistagged verb and its object ("内置四根天线")
            end = next((j for j in range(k + 1, len(words)) if not words[j][1].startswith("n")), len(words))
            if end == len(words) or _NUMERAL.fullmatch(words[end][0]) or words[end][1] == "m":
                return None
            return "".join(w for w, _ in words[k:end])
        if flag.startswith("v"):  # a verb used as a noun: 退款在 ... 发放; not 增长至, 回款 3,150
            return word if nxt[0] in _ZH_PREDICATE_OPENERS else None
        if flag.startswith(_ZH_SKIP_TAGS) or (flag.startswith("r") and word.startswith("每")):
            continue  # 目前, 同时, 每年
        return None  # a preposition, comparison, adjective: no subject of its own
    return None


# --- English -------------------------------------------------------------------------------------
_EN_LEAD = words("en_clause_leads")
_EN_PRONOUNS = words("en_pronouns")
_EN_RELATIVE = words("en_relatives")  # "the Team plan, which gets ...": the one before
_EN_DETERMINERS = words("en_determiners")
_EN_AUX = words("en_auxiliaries")
_EN_PLAIN_VERBS = words("en_plain_verbs")
_EN_FUNCTION = words("en_function_words")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|\S")


def _verb_like(word: str) -> bool:
    return word in _EN_AUX or (len(word) > 3 and re.search(r"(?:s|ed)$", word) is not None
                               and not word.endswith(("ss", "us", "is")))


def _en_own_subject(text: str) -> str | None:
    toks = [t for t in _WORD.findall(text)]
    low = [t.lower() for t in toks]
    while low and (low[0] in _EN_LEAD or not low[0][0].isalpha()):
        toks, low = toks[1:], low[1:]
    if not low or low[0] in _EN_RELATIVE:
        return None
    first = low[0]
    if first in _EN_PRONOUNS and len(low) > 1 and low[1].isalpha() and low[1] not in _EN_FUNCTION:
        return toks[0]  # "it opens at 9:00", "they take 3 days"
    if first in _EN_DETERMINERS:
        # determiner, noun(s), verb: "the pilot runs", "its case recharges", "the refund window is"
        for k, word in enumerate(low[1:6], start=1):
            if not word[0].isalpha() or word in _EN_FUNCTION:
                return None
            if k >= 2 and _verb_like(word):
                return " ".join(toks[:k])
        return None
    # "refunds are issued", "shipping is free"; a plural and a plain verb: "refunds take 14 days"
    if first.isalpha() and first not in _EN_FUNCTION | _EN_AUX and not first.endswith("ly") and len(low) > 1 \
            and (low[1] in _EN_AUX or (first.endswith("s") and low[1] in _EN_PLAIN_VERBS)):
        return toks[0]
    return None


@lru_cache(maxsize=100_000)
def own_subject(clause: str) -> str | None:
    """The subject ``clause`` opens with (a noun phrase or pronoun before its verb: "the pilot",
    "退款"), or None when it has none of its own; see the module docstring for each language."""
    return _zh_own_subject(clause) if is_chinese(clause) else _en_own_subject(clause)


# --- asides and time adverbials --------------------------------------------------------------------
_PAREN = re.compile(r"[（(][^（()）]*[)）]")
# what a clause that only sets a time says besides its date: 截至 2024年9月30日, As of 30 June 2024
_TIME_WORDS = re.compile(
    r"截至|截止到?|自|从|起|在|于|到|至|末|底|初|前|后|时|当天|\b(?:as|of|at|on|by|in|from|since|until|the|end|start)\b",
    re.IGNORECASE)


def asides(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each parenthesis of ``text`` (an aside about the name before it:
    "Priya Raman (Quillmark founder, CEO until 2019) holds a 2004 degree")."""
    return [m.span() for m in _PAREN.finditer(text)]


def only_time(text: str) -> bool:
    """Whether a clause, its atoms masked out (``|``), says only when: "截至|", "As of |".

    Such a clause sets the period of the clauses after it; a clause that also says what
    happened on its date ("临青城际于2024年9月28日开通") does not."""
    rest = _TIME_WORDS.sub("", text.replace("|", ""))
    return not re.search(r"[A-Za-z\u4e00-\u9fff]", rest)
