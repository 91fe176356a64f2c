"""Words for judging: negation cues (Chinese and English), stop words, and content terms.

What it is for: the offline judge compares *content terms* (stemmed English words, jieba
Chinese words) between a claim and evidence, and checks *polarity* with explicit cue
lists. Words that contain a cue character or word but do not negate (不仅, 不超过, 非常,
无论, "no more than", "not only") are removed before cues are looked for.
"""
from __future__ import annotations

import logging
import re
from functools import lru_cache

from evalkit.text.memo import enabled, shared
from evalkit.text.tokenize import STOPWORDS as _EN_STOP_BASE
from evalkit.text.tokenize import Tokenizer
from evalkit.text.wordlists import alternation, phrases, table, words

__all__ = ["CJK", "COURTESY", "content_terms", "cue_table", "is_charge", "is_end_cue", "is_soft_cue", "negation_cues", "negation_spans", "term_found"]

CJK = re.compile(r"[\u3400-\u9fff]")


def cue_table(name: str) -> list[tuple[str, re.Pattern[str]]]:
    """``data/NAME.txt`` (``CODE PATTERN`` lines, :func:`evalkit.text.wordlists.table`) as ``(code, pattern)`` pairs
    in file order, compiled case-insensitively: an entry with Chinese characters as written ("更早"), any other as
    whole words ("first" is not the start of "firstly")."""
    return [(code, re.compile(p if CJK.search(p) else rf"\b(?:{p})\b", re.IGNORECASE)) for p, code in table(name)]
# how a reply opens with courtesy ("Hope this helps", "Have a great day", 希望对您有帮助): data/courtesy_openers.txt;
# the judge never checks such a claim, and a refusal's courtesy is no partial answer
COURTESY = re.compile("|".join(r"^\W*" + p for p in phrases("courtesy_openers")), re.IGNORECASE)

# --- negation ---------------------------------------------------------------------------------
_EN_NOT_NEGATING = re.compile(
    r"\b(?:no|not)\s+(?:more|less|later|earlier|fewer|greater|higher|lower|longer than|sooner)\s+than\b|"
    r"\bnot\s+(?:only|just|to exceed|exceeding|exceed)\b|\bno doubt\b|\bnon-?stop\b|\bnone the less\b|"
    r"\bwhether or not\b|\brather than\b|\binstead of\b|^\s*no\b(?=\s*[,.;:!])|"
    # "wasn't formed until 2006", "did not open until May": it happened then, a time, not a negation
    r"\b(?:not|never|\w+n['’]t)\b(?=(?:\s+[\w-]+){0,3}?\s+until\b)", re.IGNORECASE)
_EN_NEG = re.compile(
    r"\bno longer\b|\bnot any longer\b|\b(?:" + alternation("en_negation_cues", regex=True) + r")\b|"
    r"\b\w+n['’]t\b|\bnon-\w+|"
    # words that say "not" by meaning: "lacks 6 GHz support" = "does not support 6 GHz",
    # "exempt from the fee" = "pay nothing", "the fee is waived", "free of charge"
    r"\black(?:s|ed|ing)?\b|\bexempt(?:ed)?\b|\bwaived\b|\bfree\s+of\b|\babsent\b|"
    # ... and their nouns: "receive a waiver of the fee" = "the fee is waived"
    r"\bwaiver\s+(?:of|for)\b|\bexemption\s+(?:from|of)\b|"
    r"(?:(?<=\bis )|(?<=\bare )|(?<=\bwas )|(?<=\bwere ))missing\b|\bmissing\b(?=\s+from\b)", re.IGNORECASE)
# a change that ends support: "Dropped support for Python 3.8", "ended Python 3.8 support", "support for
# Windows 7 was removed" = "no longer supports ..."; the verb is a cue when "support" is that near it
_EN_END_VERB = r"drop(?:s|ped)?|remov(?:es|ed)|end(?:s|ed)|deprecat(?:es|ed)|withdr[ae]w[ns]?"
_EN_END = re.compile(rf"\b(?P<v>{_EN_END_VERB})\b(?=(?:\s+[\w.+-]+){{0,3}}?\s+(?:support|compatibility)\b)|"
                     rf"\b(?:support|compatibility)(?:\s+(?:for|with)\s+[\w.+ -]{{1,30}}?)?"
                     rf"(?:\s+(?:was|were|is|are|has been|have been|had been|will be|gets|got))?\s+(?P<w>{_EN_END_VERB})\b",
                     re.IGNORECASE)
# ... but not an end with its date: "Standard support for 5.2 ends on 31 March 2026" = "supported until then"
_DATED = re.compile(r"[^.;]*?\b(?:on|in|at|by|after|from|as of|effective)\s+(?:\d|(?:the\s+)?(?:end|start|beginning)\b|"
                    r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec|Q[1-4]\b|FY))")
_ZH_NOT_NEGATING = re.compile(alternation("zh_not_negating", regex=True))  # 不仅, 不超过, 无论, 非常...: no cues
# losses and ends (失去资格 = 不再具备资格, 每周一闭馆 = 周一不开放, 已下线 = 不再提供); a verb of
# loss alone is no content word (as 缺少), a closure names what closes (闭馆, 停售) and stays one.
# Not 停止 / 取消: general verbs whose synonyms (结束, 终止, 关闭) carry no cue, so a claim saying
# "活动于3月31日结束" would read as a flip of "活动于3月31日停止"
_ZH_LOSS = "失去|丧失"
_ZH_ENDS = _ZH_LOSS + "|闭馆|闭园|休馆|休园|停业.*|暂停营业|停售|停产|下线"
_ENDS = re.compile(rf"^(?:{_ZH_ENDS}|{_EN_END_VERB})$", re.IGNORECASE)
# no charge (免费, 免票): it says "not charged" only of a fee, whatever words follow it
# ("免费预约参观" does not negate 预约参观), so it satisfies a claim's "不收费" but is never flipped
# (not English "free": an English cue is cut out of the words, and "is free" must stay the word a
# flip of "is not free" is found by)
_SOFT = re.compile(r"^(?:(?:完全)?免费|免票)$")
# prohibitions (请勿 = 不要 = 切勿 = 严禁) and lacks / exemptions (缺少 = 没有, 免收 = 不收): cues, and no content words
_ZH_BY_MEANING = alternation("zh_negation_by_meaning")
# A Chinese cue is a jieba WORD: 不, 不得, 不会, 绝不会, 没有, 无法, 未经许可, 禁止... A cue character
# inside a longer word is a lexical prefix, not a negation of the clause (不当 "improper",
# 非正式 "informal", 无线 "wireless", 不满 "dissatisfied").
_ZH_CUE_TOKEN = re.compile(r"^(?:(?:绝|决|从|并|永|也|都|还|尚)?(?:不|没|无|未|非|毋|勿)(?:会|能|得|可|要|用|该|应|需|须|必|曾|再|予|准|许|让|在|是|宜)?"
                           r"|没有|无法|从未|未经.*|禁止.*|勿|别|不再|(?:不|无|毋|勿)须.*|无需.*|不必.*"
                           # words that say "not" by meaning: 加载失败 = 没能加载, 已停用 = 不能再用
                           r"|" + alternation("zh_negation_verbs") +
                           r"|严禁.*|" + _ZH_BY_MEANING + "|" + _ZH_ENDS + "|(?:完全)?免费|免票)$")


# A cue that describes a thing or a time, not the clause's predicate: "Three rejected lots ...", "retries a failed
# upload batch", "Students who fail a module may resit", "投递失败后最多重试 5 次" (a time: after it fails): a clause
# restating the rest ("retries 5 times") says no opposite of it. Not a Chinese attributive "未整改的物业": a claim
# restating it writes the same "的" clause or not, and reading the two apart made flips (measured).
_EN_MEANING_STEMS = r"fail|reject|refus|block|disabl|retir|discontinu"
_EN_MEANING = re.compile(_EN_MEANING_STEMS, re.IGNORECASE)
_EN_MODIFIER = re.compile(rf"(?:{_EN_MEANING_STEMS})\w*ed\s+(?!by\b|from\b|for\b|to\b|in\b|on\b|at\b|"
                          r"because\b|due\b|and\b|or\b|if\b|when\b|unless\b)[a-z]", re.IGNORECASE)
_EN_RELATIVE = re.compile(r"\b(?:who|that|which)\s+$", re.IGNORECASE)
_ZH_MODIFIER = re.compile(r"(?:之|以)?后(?![续期来面])|时(?![间效限长段候刻])")  # 失败后, 拒绝时: right after the verb
_ZH_VERB_CUE = re.compile(r"^(?:" + alternation("zh_negation_verbs") + ")$")  # not 勿 of "勿在无水时启动"


def negation_spans(text: str) -> list[tuple[str, int]]:
    """Each negation cue of ``text`` with the offset just after it (where its scope starts).

    English: not, no, never, no longer, cannot, n't, without, neither, nor, none, non-...,
    unable, prohibited, failed, refused, retired, disabled, blocked...; Chinese: jieba words
    不, 没有, 未, 尚未, 无, 非, 禁止, 不得, 不能, 无法, 无须, 不须, 无需, 不必, 勿, 别, and words that
    negate by meaning (失败, 拒绝, 停用, 禁用, 作废, 失效, 废止, 拦截), words that end or lose a
    thing (失去, 闭馆, 停售, 下线, "dropped support"), and of no charge (免费, 免票)...
    Look-alikes are removed first: bounds ("no more than", 不超过, 不得低于), "not only",
    "rather than", "not ... until" (a time), 而不是, 无论, 非常, 是否; and a leading answer word ("No, ...") is not a
    cue: it answers the question, the clause carries the polarity.
    """
    out: list[tuple[str, int]] = []
    en = _EN_NOT_NEGATING.sub(lambda m: " " * len(m.group(0)), text)
    out += [(m.group(0).lower(), m.end()) for m in _EN_NEG.finditer(en) if not _EN_MODIFIER.match(en, m.start())
            and not (_EN_MEANING.match(m.group(0)) and _EN_RELATIVE.search(en, 0, m.start()))]
    out += [(m.group(g).lower(), m.end(g)) for m in _EN_END.finditer(en) for g in ("v", "w")
            if m.group(g) and not _DATED.match(en, m.end())]
    if CJK.search(text):
        zh = _ZH_NOT_NEGATING.sub(lambda m: "，" * len(m.group(0)), text)
        pos = 0
        for tok in _jieba_cut(zh):
            pos += len(tok)
            if CJK.match(tok) and _ZH_CUE_TOKEN.match(tok) and not (_ZH_VERB_CUE.match(tok) and _ZH_MODIFIER.match(zh, pos)):
                out.append((tok, pos))
    return _cancel_double(text, sorted(out, key=lambda x: x[1]))


# A plain negator right before a word that negates by meaning negates that word, and the clause says the thing
# plainly: "is not waived" = charged, "not free of charge", "not without", "not exempt", 不是免收. (Not 免费, 免票:
# a cue of no charge is never flipped, and "不免费" is read as negated by 不: see is_soft_cue.)
_ZH_NEGATORS = r"不|不是|并非|并不|并未|非|没|没有|未|不再|绝非|不能|不会|不可|不得|不予|无法|从未|从不"
_PLAIN_NEGATOR = re.compile(rf"^(?:not|never|no longer|cannot|\w+n['’]t|{_ZH_NEGATORS})$", re.IGNORECASE)
_ZH_NEGATED_BEFORE = re.compile(rf"(?:{_ZH_NEGATORS})$")
_BY_MEANING = re.compile(r"^(?:waived|free of|exempt(?:ed)?|without|lack(?:s|ed|ing)?|waiver (?:of|for)|"
                         r"exemption (?:from|of)|" + _ZH_BY_MEANING + ")$", re.IGNORECASE)
_DOUBLE_GAP = re.compile(r"^(?:\s*\b(?:be|is|are|was|were|been|being|entirely|completely|totally|fully|always|"
                         r"necessarily|automatically|simply)\b)*\s*$|^[是的]?$", re.IGNORECASE)


def negated_before(text: str, start: int) -> bool:
    """True when a plain Chinese negator ends right before ``start``: the 不 of 不免收 negates the cue there."""
    return bool(_ZH_NEGATED_BEFORE.search(text, 0, start))


def _cancel_double(text: str, cues: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """``cues`` without each plain negator and the by-meaning cue it negates (see above)."""
    drop: set[int] = set()
    for i in range(len(cues) - 1):
        (a, end), (b, b_end) = cues[i], cues[i + 1]
        if i not in drop and _PLAIN_NEGATOR.match(a) and _BY_MEANING.match(b) \
                and _DOUBLE_GAP.match(text[end:b_end - len(b)]):
            drop |= {i, i + 1}
    return [c for i, c in enumerate(cues) if i not in drop]


def is_end_cue(cue: str) -> bool:
    """True for a cue that says a thing ends or is lost (失去, 闭馆, 停售, "dropped" support), not "not" itself:
    a question asking "会失去资格吗" does not bring the "不" of an answer's other clause."""
    return bool(_ENDS.match(cue))


def is_soft_cue(cue: str) -> bool:
    """True for a cue of no charge (免费, 免票): it says "not charged" only of a fee, not of
    the words after it, so it may stand for a claim's negation but is never flipped."""
    return bool(_SOFT.match(cue))


_CHARGE = re.compile(r"[费收付钱价票]|购买|\b(?:pay|paid|charg|fee|cost|price|ticket|admission)", re.IGNORECASE)


def is_charge(text: str) -> bool:
    """True when ``text`` speaks of a charge (收费, 购票, "pay", "fee"): what a "free" negates."""
    return bool(_CHARGE.search(text))


def negation_cues(text: str) -> list[str]:
    """The negation cues of ``text`` (``["not"]``, ``["不得"]``); see :func:`negation_spans`."""
    return [c for c, _ in negation_spans(text)]


@lru_cache(maxsize=200_000)
def _jieba_cut(text: str) -> tuple[str, ...]:
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return tuple(jieba.lcut(text))


# --- content terms ----------------------------------------------------------------------------
# stop words, negation words (polarity is checked by cues) and Chinese stop words: data/*.txt
_EN_STOP = set(_EN_STOP_BASE) | words("en_stop") | words("en_stop_negation")
_ZH_STOP = words("zh_stop")
_ZH_CUE_WORD = re.compile(r"^(?:(?:绝|决|从|并|也|都|还|尚)?(?:不|没|无|未|非|毋)(?:会|能|得|可|要|用|该|应|需|须|必|曾|再|予|准|许|让)?"
                          r"|" + _ZH_BY_MEANING + "|" + _ZH_LOSS + ")$")
_NEG_PREFIX = re.compile(r"^(?:无须|不须|毋须|无需|不必|不用|不得|不能|不予|不会|无法|没有|未经|不|没|无|未|非)(?=[\u3400-\u9fff]{2,})")
_NUMERIC = re.compile(r"^[\d.,%]+$|^\d+[a-z]{0,3}$")


@lru_cache(maxsize=1)
def _tokenizer() -> Tokenizer:
    return Tokenizer("auto", stem=True, stopwords=True)


@lru_cache(maxsize=1)
def _en_stop_stems() -> frozenset[str]:
    """The English stop words as the tokenizer emits them (stemmed: "does" -> "doe")."""
    tok = Tokenizer("en", stem=True, stopwords=False)
    return frozenset(_EN_STOP) | frozenset(t for w in _EN_STOP for t in tok(w))


@lru_cache(maxsize=200_000)
def content_terms(text: str) -> tuple[str, ...]:
    """Content terms of ``text``: stemmed English words and jieba Chinese words, minus stop
    words, negation cues and numbers (numbers are compared as values, not as words)."""
    out: list[str] = []
    for t in _tokenizer()(text):
        if CJK.search(t):
            t = _NEG_PREFIX.sub("", t)
            if _ZH_CUE_WORD.match(t) or t in _ZH_STOP or (len(t) == 1 and t in "的了是在和与及或由为将被把也都而则就于对从到向以之其这那此该个等"):
                continue
        elif t in _en_stop_stems() or _NUMERIC.match(t) or len(t) < 2:
            continue
        out.append(t)
    return tuple(dict.fromkeys(out))


def term_found(term: str, terms: frozenset[str], text: str) -> float:
    """How well ``term`` is found in an evidence text (1, 0.5 or 0).

    English terms: stem equality, or a shared 6-letter prefix (0.5). Chinese terms: a
    substring of the text (1), or every character present (0.5; 营收 in 营业收入).
    """
    if term in terms:
        return 1.0
    if CJK.search(term):
        if term in text:
            return 1.0
        return 0.5 if len(term) >= 2 and all(c in text for c in term) else 0.0
    if len(term) >= 6 and (term[:6] in _prefixes(terms) if enabled() else
                           any(len(t) >= 6 and t[:6] == term[:6] for t in terms)):
        return 0.5
    return 0.0


@shared(maxsize=50_000)
def _prefixes(terms: frozenset[str]) -> frozenset[str]:
    """The 6-letter prefixes of the terms of 6 letters or more: :func:`term_found`'s index of a window's
    terms (the claim's every term is looked up in every window; a scan was quadratic)."""
    return frozenset(t[:6] for t in terms if len(t) >= 6)
