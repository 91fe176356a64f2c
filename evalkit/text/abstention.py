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
4. an empty answer: abstained, unless ``finish_reason == "length"``: a model cut off before it
   wrote anything (a reasoning model that spent its tokens) did not refuse; that answer is
   neither an abstention nor an answer (``reason="truncated"``). An LLM's empty reply in a run,
   and an empty answer in a file scored by ``evalkit score``, degrade the query (cause
   ``empty_answer``, :mod:`evalkit.run.health`): it is most likely a failure, not a refusal;
5. an error message as the reply (:func:`evalkit.text.error_replies.detect_error_reply`: a
   gateway page, provider error JSON, a traceback, "服务繁忙，请稍后重试"): not abstained, and not an
   answer either (``reason="error_reply"``; a generator's such reply degrades the query,
   :mod:`evalkit.run.health`). An apology that is really an outage ("Sorry, the service is
   temporarily unavailable") is not a correct abstention; a ``not_patterns`` match keeps a reply
   this rule would take for an error as an answer; then a reply that states no value
   (:mod:`evalkit.text.structured_replies`: punctuation only, "—", "……"; a JSON answer field that
   is null, a table of dashes, ``【答案】——``): abstained;
6. the bilingual defaults (:mod:`evalkit.text.refusal_rules`): a **refusal** says that the
   speaker, the sources or the information itself lack the answer: "I don't know", "I can't
   find", "the context / documents / knowledge base do not mention it", "no relevant
   information", "N/A", "Unknown", 不知道, 无法回答 / 确定, 找不到, 知识库 / 资料 / 文档中没有 /
   未提及, 暂无相关信息, traditional characters too (知識庫中沒有找到相關資訊). A negation about a
   thing in the world is an answer ("does not contain a Wi-Fi module", "未提供住宿补贴",
   "本次审计没有发现任何违规行为", "No data is retained after the trial"), and so is a fact a
   source reports ("资料显示，公司没有分红"). An answer that, besides a refusal clause, states
   something about the world (before or after it: "The warranty lasts two years; the documents
   don't say whether it covers batteries"), or that heads its caveat with a bare short answer
   ("Paris. The documents don't give the date.", 北京。文档没有提到具体日期。), is a **partial**
   answer: answered, so its claims are judged. Clauses about the sources or the question, polite
   fillers and suggestions ("please contact support") do not make a refusal partial.

Patterns are Python regular expressions, matched case-insensitively anywhere in the
answer, as written or with its typography evened out (:func:`_typeset`: curly quotes as
ASCII ones, line breaks and runs of spaces as one space, none between Chinese characters),
so ``I don't know`` matches a model's "I don’t know", ``not in the manual`` one that wraps
the line after "in", and ``资料中没有`` one that breaks the line after 资料中. Users extend
them per eval set (``eval_sets/NAME.abstention.yaml``:
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
    reason: str        # empty | truncated | content_filter | error_reply | refusal | user_pattern | user_not_pattern
    #                    | partial | answer | learned (evalkit.models.abstention)
    matched: str = ""  # the words of the answer that matched (or the pattern, for user patterns)

    @property
    def by_user(self) -> bool:
        """Whether a user pattern (not a default) decided."""
        return self.reason in ("user_pattern", "user_not_pattern")

    def to_dict(self) -> dict[str, object]:
        return {"abstained": self.abstained, "reason": self.reason, "matched": self.matched}


class AbstentionPatternError(EvalkitError, ValueError):
    """A user abstention pattern that is not a valid regular expression."""


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
    return re.compile(pattern.translate(_QUOTES), re.IGNORECASE)  # a quote is no regex syntax: safe to fold


_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"'})
_SPACES = re.compile(r"\s+")
_CJK = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef"  # CJK scripts, ideographs, full-width forms and punctuation
_CJK_BREAK = re.compile(rf"(?<=[{_CJK}])\s+(?=[{_CJK}])")


def _typeset(text: str) -> str:
    """``text`` with curly quotes as ASCII ones, whitespace between two CJK characters removed and every
    other run of whitespace (line breaks too) as one space.

    User patterns are tried on this as well as on the answer itself: chat models write "don’t",
    and wrap lines, where the user typed "don't", a space, or (in Chinese) nothing; a model's
    typography must not decide whether the user's pattern matches.
    """
    return _SPACES.sub(" ", _CJK_BREAK.sub("", text.translate(_QUOTES)))



def detect_abstention(answer: str, *, finish_reason: str | None = None, extra_patterns: Sequence[str] = (),
                      not_patterns: Sequence[str] = ()) -> Abstention:
    """Whether ``answer`` declines to answer (see the module docstring for the order of the rules).

    >>> detect_abstention("抱歉，我找不到相关信息。").abstained
    True
    >>> detect_abstention("The LX-200 does not contain a built-in Wi-Fi module.").abstained
    False
    """
    text = answer or ""
    views = (text, _typeset(text)) if not_patterns or extra_patterns else (text,)
    for p in compile_patterns(not_patterns, "not_patterns"):
        if any(p.search(v) for v in views):
            return Abstention(False, "user_not_pattern", p.pattern)
    for p in compile_patterns(extra_patterns, "patterns"):
        if any(p.search(v) for v in views):
            return Abstention(True, "user_pattern", p.pattern)
    if (finish_reason or "").lower() == "content_filter":
        return Abstention(True, "content_filter", "finish_reason=content_filter")
    if not text.strip():
        if (finish_reason or "").lower() == "length":
            return Abstention(False, "truncated", "finish_reason=length")
        return Abstention(True, "empty")
    # the default rules: hundreds of regular expressions, compiled when the first answer is read (an eval set
    # checking its user patterns, or `evalkit score --run`, reads none)
    from evalkit.text import asked_values, error_replies, partial_answers, refusal_rules, structured_replies

    error = error_replies.detect_error_reply(text)
    if error is not None:
        return Abstention(False, "error_reply", error.matched)
    empty = structured_replies.no_value(text)
    if empty is not None:
        return Abstention(True, "refusal", empty)
    norm = refusal_rules.normalise(text)
    spans = refusal_rules.refusal_spans(norm)
    if not spans:
        return Abstention(False, "answer")
    start, end = spans[0]
    if partial_answers.content_clauses(norm, spans):
        return Abstention(False, "partial", text[start:end])
    if set(spans) <= set(refusal_rules.deferral_spans(norm)) and asked_values.states_value(text):
        return Abstention(False, "partial", text[start:end])  # a deferral with a value of its own: an appointment
    return Abstention(True, "refusal", text[start:end])
