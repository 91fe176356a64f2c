"""Abstention: did an answer decline to answer (a refusal), or answer, perhaps negatively?

What it is for: one detector for every answer source (the ``generate`` node, answers
scored with ``evalkit score``). A correct refusal on an unanswerable question is the
right outcome, and a correct negative answer ("The LX-200 does not contain a built-in
Wi-Fi module", "也未提供住宿补贴") is an answer: confusing the two makes a refusal score
as a hallucination and a negative fact as an abstention.

:func:`detect_abstention` decides, in this order:

1. a user ``not_patterns`` match: answered (a wording the user knows is an answer);
2. a user ``extra_patterns`` match: abstained (a refusal wording of the user's system);
3. ``finish_reason == "content_filter"``: abstained (the model's provider refused);
4. an empty answer: abstained;
5. the bilingual defaults: a **refusal** says that the speaker or the source cannot answer
   or has no information: "I don't know", "I can't find / cannot answer", "no (relevant)
   information / not enough information", "the knowledge base / documents / context do
   not mention / contain / cover it", "not found in the documents", 不知道, 无法回答 /
   确定, 找不到 / 查不到 / 没有找到, 知识库 / 资料 / 文档中没有 / 未提及, 暂无相关资料,
   超出范围... A negation about the *subject* of the question ("does not contain a Wi-Fi
   module", "未提供住宿补贴", "不得再次借款") is not a refusal: the source words
   (knowledge base, documents, context, 资料, 文档, 知识库...) or the information words
   (information, details, answer, 信息, 相关内容...) are what make one.
   A refusal followed by an answer in a contrast clause ("The documents give no exact
   date, but the policy took effect on 1 January 2026") is an answer (partial refusal).

Patterns are Python regular expressions, matched case-insensitively anywhere in the
answer. Users extend them per eval set (``eval_sets/NAME.abstention.yaml``:
``{patterns: [...], not_patterns: [...]}``) or per config (the ``generate`` node's
``abstention:`` parameter). Measured in ``benchmarks/abstention.py``.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from evalkit.errors import EvalkitError

__all__ = ["Abstention", "AbstentionPatternError", "compile_patterns", "detect_abstention"]


@dataclass(frozen=True)
class Abstention:
    """The finding: whether the answer abstained, why (``reason``) and the text that decided it."""

    abstained: bool
    reason: str        # empty | content_filter | refusal | user_pattern | user_not_pattern | partial | answer
    matched: str = ""  # the words of the answer that matched (or the pattern, for user patterns)

    @property
    def by_user(self) -> bool:
        """Whether a user pattern (not a default) decided."""
        return self.reason in ("user_pattern", "user_not_pattern")

    def to_dict(self) -> dict[str, object]:
        return {"abstained": self.abstained, "reason": self.reason, "matched": self.matched}


class AbstentionPatternError(EvalkitError, ValueError):
    """A user abstention pattern that is not a valid regular expression."""


_SOURCE_EN = (r"(?:knowledge\s*base|kb|documents?|docs|documentation|context|(?:retrieved|provided|given|available|above)"
              r"\s+(?:passages?|documents?|information|context|sources?|materials?|evidence|texts?|excerpts?)|passages?|"
              r"sources?|evidence|search results?|materials?|records|references?|excerpts?|files?)")
_INFO_EN = r"(?:information|info|details?|data|answer|mention|record|reference|evidence|context|documentation|figures?)"
_EN = [
    r"\bi\s+(?:do\s+not|don't|dont)\s+know\b",
    r"\bi(?:'m|\s+am)\s+not\s+sure\b",
    r"\b(?:i|we)\s+(?:can't|cannot|can\s+not|couldn't|could\s+not|was\s+unable\s+to|am\s+unable\s+to|'m\s+unable\s+to|"
    r"am\s+not\s+able\s+to|'m\s+not\s+able\s+to|wasn't\s+able\s+to|was\s+not\s+able\s+to)\s+(?:\w+\s+){0,2}?"
    r"(?:find|answer|locate|determine|tell|say|confirm|provide|help|see|identify|verify)\b",
    r"\b(?:no|not\s+enough|insufficient|limited|no\s+relevant|no\s+specific|no\s+reliable)\s+(?:relevant\s+)?"
    + _INFO_EN + r"\b",
    r"\b(?:there\s+is|there's|i\s+have|i've\s+got|we\s+have)\s+no\s+(?:\w+\s+){0,2}?" + _INFO_EN + r"\b",
    r"\b" + _SOURCE_EN + r"\s+(?:\w+\s+){0,3}?(?:does\s+not|doesn't|do\s+not|don't|did\s+not|didn't|has\s+no|have\s+no|"
    r"contains?\s+no|makes?\s+no|gives?\s+no|provides?\s+no)\s+(?:\w+\s+)?(?:contain|mention|include|provide|say|cover|"
    r"specify|state|address|have|give|list|show|discuss|describe|tell|explain|indicate|answer|clarify|information|"
    r"details|reference)",
    r"\b" + _SOURCE_EN + r"\s+(?:\w+\s+){0,2}?(?:has|have|contains?|gives?|lists?|includes?|shows?)\s+no\b",
    r"\bnone\s+of\s+the\s+" + _SOURCE_EN,
    r"\b" + _SOURCE_EN + r"\s+(?:\w+\s+){0,2}?(?:says?|said|has|have|contains?|gives?|mentions?|provides?|offers?)\s+nothing\b",
    r"\bnothing\s+(?:\w+\s+)?(?:in|from)\s+(?:the\s+)?(?:\w+\s+)?" + _SOURCE_EN,
    r"\b" + _SOURCE_EN + r"\s+(?:is|are|was|were|seems?|appears?)\s+(?:\w+\s+)?(?:insufficient|silent|inconclusive)",
    r"\b(?:i|we)\s+(?:don't|do\s+not|didn't|did\s+not)\s+have\s+(?:any\s+|enough\s+|the\s+)?(?:relevant\s+)?" + _INFO_EN,
    r"\b(?:isn't|is\s+not|aren't|are\s+not|not)\s+(?:answered\s+)?(?:anywhere\s+)?(?:in|within)\s+(?:the\s+|any\s+of\s+the\s+)?"
    r"(?:\w+\s+){0,2}?" + _SOURCE_EN,
    r"\b(?:not|isn't|is\s+not|aren't|are\s+not|wasn't|was\s+not)\s+(?:\w+\s+)?(?:mentioned|covered|specified|stated|found|"
    r"available|provided|included|given|addressed|listed|described)\s+(?:in|by|within)\s+(?:the\s+|any\s+of\s+the\s+|my\s+)?"
    + _SOURCE_EN,
    r"\b(?:cannot|can't|could\s+not)\s+be\s+(?:answered|determined|found|confirmed)\b",
    r"\b(?:unable|not\s+able)\s+to\s+(?:answer|find|determine|locate|confirm)\b",
    r"\b(?:outside|beyond)\s+(?:the\s+scope|my\s+knowledge|what\s+the\s+" + _SOURCE_EN + r")",
    r"^\W*(?:sorry|apologies|unfortunately)\b.{0,40}\b(?:can't|cannot|couldn't|could\s+not|don't|do\s+not|no)\b",
    r"\bnot\s+found\b",
    r"\bno\s+(?:relevant\s+)?(?:results?|matches|documents?|passages?)\s+(?:were\s+|was\s+)?(?:found|returned)",
]
_SOURCE_ZH = (r"(?:知识库|资料|文档|文件|参考资料|参考信息|检索结果|搜索结果|上下文|材料|现有信息|现有资料|已知信息|所给信息|"
              r"提供的(?:信息|内容|资料|文档|材料|上下文)|给定的?(?:信息|内容|资料|文档)|相关文档|证据)")
_INFO_ZH = r"(?:相关|有关|任何|具体|足够的?|可靠的?|这方面的?|该问题的?|此类)?(?:信息|资料|内容|数据|记录|说明|答案|证据|规定)"
_ZH = [
    r"不知道", r"(?:我|暂时?|目前)不(?:太)?清楚",
    r"(?:无法|没法|无从)(?:回答|确定|提供|找到|判断|得知|查到|给出|确认|获知|知道|解答|作答)",
    r"不能(?:回答|作答|解答)",
    r"(?:无法|没法|无从)(?:从|在|根据|通过)[^。，,.]{0,14}?(?:得知|确定|回答|判断|找到|获知|作答|查到)",
    r"(?:未能|没能|没有|未)(?:在|从)[^。，,.]{0,14}?(?:找到|查到|检索到|搜索到)",
    r"(?:没有|没能|未能|并未|未|无法)(?:找到|检索到|查到|搜索到|发现|查询到)",
    r"找不到|查不到|搜不到|检索不到",
    _SOURCE_ZH + r"(?:中|里|内|里面)?(?:也|均|都|并)?(?:没有|未|并未|没|不|尚未)(?:包含|提及|提到|涉及|说明|记载|列出|给出|"
    r"包括|覆盖|写|找到|相关|关于|这方面)",
    _SOURCE_ZH + r"(?:中|里|内|里面)?(?:也|均|都|并)?(?:没有|无|暂无|缺乏|缺少)",  # 知识库没有香港的标准
    r"(?:没有|暂无|缺乏|缺少|无)" + _INFO_ZH.replace("(?:相关|", "(?:相关的?|"),
    r"(?:抱歉|对不起|很遗憾)[^。！？]{0,20}(?:无法|不能|没有|找不到|未能|没能)",
    r"超出了?[^。，,.]{0,10}?范围",
    r"不足以(?:回答|确定|判断)",
    r"no reliable evidence|insufficient (?:evidence|information)",
]
# --- the compositional rule: a lack word near an information or ability word, with the source or
# the speaker nearby ("I'm not finding anything in our docs", "就目前的资料来看，这一点没有记载")
_LACK = re.compile(
    r"\b(?:not|no|nothing|none|never|cannot|can't|couldn't|don't|doesn't|didn't|isn't|aren't|wasn't|won't|without|"
    r"lacks?|lacking|missing|insufficient|unable|unavailable|unknown)\b|n't\b|"
    r"没有?|未|无(?!论)|不(?!同|仅|但|少|断|久)|缺乏|缺少|不足|找不[到着]|查不[到着]|看不[到着]|搜不[到着]|答不上|回答不了|说不了|"
    r"不可用", re.IGNORECASE)
_SPEAKER = re.compile(r"\b(?:i|i'm|i've|i'd|we|we're|me|my)\b|我", re.IGNORECASE)
_SOURCE = re.compile(_SOURCE_EN.replace("(?:", "(?:reports?|", 1) + r"|" + _SOURCE_ZH + r"|\bsearch(?:es)?\b|段落|摘录|来源|报告|报表|手头|搜索|检索",
                     re.IGNORECASE)
_ABILITY = re.compile(r"\b(?:find\w*|found|locat\w*|see|seeing|answer\w*|respond|say|tell|determine|know|confirm|"
                      r"documented|mention\w*|cover\w*|specif\w*|state[sd]?|address\w*|give[sn]?|provide[sd]?|"
                      r"contain\w*|include[sd]?)\b|"
                      r"找|查|答|回复|知道|确定|清楚|说|记载|提及|提到|涉及|给出|包含|作答", re.IGNORECASE)
_INFO = re.compile(r"\b(?:information|info|details?|data|answers?|anything|nothing|mentions?|records?|results?|"
                   r"evidence|entry|entries)\b|信息|答案|内容|数据|记录|结果|证据|说法|条目|这个|这一点", re.IGNORECASE)
_STRONG = re.compile(r"\b(?:answer|respond|reply)\b|回答|作答|回复|答复|解答|得知|获知", re.IGNORECASE)
_OPENING_DOUBT = re.compile(r"^\W*(?:不清楚|不知道|不确定|不太确定|unknown|not sure)\b", re.IGNORECASE)
NEAR, FAR = 35, 45  # characters: a lack word and what it negates; and the source or speaker around them


def _near(pattern: re.Pattern[str], text: str, at: int, span: int, before: int | None = None) -> bool:
    """A match of ``pattern`` within ``span`` characters after ``at`` (or ``before`` characters before it)."""
    back = span if before is None else before
    return any(at - back <= m.end() and m.start() <= at + span for m in pattern.finditer(text))


def _compositional(text: str) -> re.Match[str] | None:
    """The first lack word that makes a refusal (see the module docstring), or None."""
    for clause in re.finditer(r"[^.!?。！？;；\n]+", text):
        c = clause.group(0)
        if _OPENING_DOUBT.search(c):
            return _OPENING_DOUBT.search(text, clause.start())
        for m in _LACK.finditer(c):
            # what is lacking follows the lack word ("没有记载", "not ... mentions"), or just precedes it ("信息不足")
            what = _near(_INFO, c, m.start(), NEAR, 10) or _near(_ABILITY, c, m.start(), NEAR, 6)
            who = _near(_SOURCE, c, m.start(), FAR) or _near(_SPEAKER, c, m.start(), FAR)
            if (what and who) or _near(_STRONG, c, m.start(), 8):
                return _LACK.search(text, clause.start() + m.start())
    return None


# a negation of the subject, not of the source: "也未提供住宿补贴", "不得再次借款" are answers
_CONTRAST = re.compile(r"(?:,|，|;|；|\.|。)?\s*(?:\bbut\b|\bhowever\b|\balthough\b|不过|但是|但|然而)", re.IGNORECASE)
_REFUSAL = re.compile("|".join(f"(?:{p})" for p in _EN + _ZH), re.IGNORECASE | re.MULTILINE)
MIN_ANSWER_AFTER_CONTRAST = 8  # characters of content after "but" that make a partial refusal an answer


def compile_patterns(patterns: Sequence[str], where: str = "abstention patterns") -> tuple[re.Pattern[str], ...]:
    """User patterns as compiled regular expressions; an invalid one raises :class:`AbstentionPatternError`."""
    out = []
    for i, p in enumerate(patterns):
        if not isinstance(p, str) or not p:
            raise AbstentionPatternError(f"{where}[{i}]: expected a non-empty regular expression, got {p!r}")
        try:
            out.append(_compiled(p))
        except re.error as exc:
            raise AbstentionPatternError(f"{where}[{i}]: {p!r} is not a valid regular expression ({exc})") from exc
    return tuple(out)


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def detect_abstention(answer: str, *, finish_reason: str | None = None, extra_patterns: Sequence[str] = (),
                      not_patterns: Sequence[str] = ()) -> Abstention:
    """Whether ``answer`` declines to answer (see the module docstring for the order of the rules).

    >>> detect_abstention("抱歉，我找不到相关信息。").abstained
    True
    >>> detect_abstention("The LX-200 does not contain a built-in Wi-Fi module.").abstained
    False
    """
    text = answer or ""
    for p in compile_patterns(not_patterns, "not_patterns"):
        if p.search(text):
            return Abstention(False, "user_not_pattern", p.pattern)
    for p in compile_patterns(extra_patterns, "patterns"):
        if p.search(text):
            return Abstention(True, "user_pattern", p.pattern)
    if (finish_reason or "").lower() == "content_filter":
        return Abstention(True, "content_filter", "finish_reason=content_filter")
    if not text.strip():
        return Abstention(True, "empty")
    m = _REFUSAL.search(text) or _compositional(text)
    if m is None:
        return Abstention(False, "answer")
    after = _CONTRAST.search(text, m.end())
    if after is not None:
        rest = re.sub(r"[\W_]+", "", text[after.end():])
        if len(rest) >= MIN_ANSWER_AFTER_CONTRAST and not _REFUSAL.search(text, after.end()) \
                and not _compositional(text[after.end():]):
            return Abstention(False, "partial", m.group(0))
    return Abstention(True, "refusal", m.group(0))
