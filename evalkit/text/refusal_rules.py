"""The default refusal wordings of :mod:`evalkit.text.abstention`, English and Chinese, by structure.

What it is for: telling a refusal from an answer, including a negative answer. The rules
follow the structure of a refusal rather than a list of phrases:

- **Who lacks it.** A refusal says that the *speaker* ("I can't find", 我无法回答), the
  *sources* ("the context does not mention", 资料中未提及) or the *information itself* ("no
  relevant information", 暂无相关信息) lacks the answer; a bare fragment ("N/A", "Unknown",
  未知, 不确定) is one too. A negation whose subject is a thing in the world is an answer
  ("The device does not contain a Wi-Fi module", 本次审计没有发现任何违规行为, 警方没有找到...),
  and so is a fact reported *from* a source ("资料显示，公司没有分红", "the manual says ...").
- **What is lacking.** Lacking information must be information *about* something (相关信息,
  X的信息, "information about X", "no information.") and not a kind of data or thing
  ("personal data", 个人信息, "information desk", 没有相关的法律规定限制...): the information
  word must be the head of its phrase. Weak source words that are also things (file, report,
  records, 文件, 报告) refuse only with a verb of saying (mention, specify, 提及, 说明) or a
  lack of such information; strong ones (context, knowledge base, 资料, 上下文) with any lack.
- **Subject of a Chinese inability verb.** 无法确定 / 没有找到 / 找不到 refuse when nothing but
  the speaker, a source, a polite or time word stands before them in the clause (根据现有资料，
  无法确定 / 我在文档中没有看到); not after a worldly subject (仅凭血液检测无法确定病因) or a
  condition (如果找不到序列号), nor as a relative clause (不知道密码的用户, 没有找到供应商的情况下).
- **Partial answers** (:mod:`evalkit.text.partial_answers`). A clause that states something about the world, before or after the
  refusal, makes the answer a partial answer (an answer: its claims get judged). Clauses
  about the sources, the question or the speaker, polite fillers and suggestions ("please
  contact support", 建议联系客服) are not content. A bare short answer heading the reply
  ("Paris. The documents don't give the date.", 是的。不过资料中没有说明...) is content; a filler
  in its place ("Sure.", 好的。) is not.

Texts are matched after a length-preserving normalisation (:func:`normalise`): full-width
ASCII to ASCII, curly apostrophes to ``'``, the traditional characters of these words to
simplified ones, and quoted text masked (a quoted "No results found" is a message being described, not a refusal).
"""
from __future__ import annotations

import re
from bisect import bisect_left

from evalkit.text.memo import enabled, shared
from evalkit.text.wordlists import alternation, phrases, templates

__all__ = ["OFFER", "clause_spans", "deferral_spans", "normalise", "refusal_spans", "sentence_start"]

# --------------------------------------------------------------------------- normalisation
_FOLD = {ord(p[0]): p[1] for p in phrases("zh_traditional")}  # 資料 -> 资料: data/zh_traditional.txt
_FOLD.update({c: chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)})
_FOLD[0x3000] = " "
# curly apostrophes and single quotes (what chat models write: "don’t", ‘quoted’) -> ASCII; the English
# rules spell "don't", so a refusal written with U+2019 read as an answer (held-out recall 0.95 -> 0.65)
_FOLD.update({0x2018: "'", 0x2019: "'", 0x02BC: "'"})
_FOLD.update({ord(c): " " for c in "*_`#>~"})  # markdown emphasis and headings are layout, not words
_QUOTED = re.compile(r"(?<![\w'])'([^'\n]{1,80})'(?![\w'])|\"([^\"\n]{1,80})\"|“([^”\n]{1,80})”|‘([^’\n]{1,80})’|"
                     r"「([^」\n]{1,80})」|『([^』\n]{1,80})』")


# the top-level domains that end a bare web address (data/web_domains.txt; error_replies reads them too)
WEB_DOMAINS = alternation("web_domains")
# an e-mail or web address, whose dots end no sentence ("发邮件到hr@company.com询问")
_ADDRESS = re.compile(r"[A-Za-z0-9_%+-]+(?:\.[A-Za-z0-9_%+-]+)*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
                      r"|(?:https?://|www\.)[A-Za-z0-9/_%#?=&:~+-]+(?:\.[A-Za-z0-9/_%#?=&:~+-]+)*"
                      # a bare domain, as replies write them: "power.example.com/outages", "hr.acme.cn"
                      r"|\b[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?:" + WEB_DOMAINS + r")\b"
                      r"(?:/[A-Za-z0-9/_%#?=&:~+.-]*[A-Za-z0-9/_%#?=&:~+-])?")


def normalise(text: str) -> str:
    """Full-width -> ASCII, curly apostrophes -> ASCII ones, traditional -> simplified (these words), quoted
    text -> ``Q``s, the dots of an e-mail or web address -> ``_``; same length."""
    out = _ADDRESS.sub(lambda m: m.group(0).replace(".", "_"), text.translate(_FOLD))
    return _QUOTED.sub(lambda m: m.group(0)[0] + "Q" * (len(m.group(0)) - 2) + m.group(0)[-1], out)


# --------------------------------------------------------------------------- vocabulary
_STRONG_EN = (r"(?:(?:knowledge\s*base|kb|context|documentation|docs|documents?|passages?|excerpts?|sources?|snippets?|"
              r"search\s+results?|(?:retrieved|provided|given|available|above|supplied|attached)\s+(?:\w+\s+)?"
              r"(?:information|data|content|materials?|texts?|files?|records|evidence|articles?|chunks?)))\b")
_WEAK_EN = (r"(?:texts?|files?|records|reports?|materials?|references?|evidence|articles?|manuals?|handbook|"
            r"(?:price\s+)?lists?|tables?|catalog(?:ue)?s?)\b")
_SOURCE_EN = rf"(?:{_STRONG_EN}|{_WEAK_EN})"
# how a reply qualifies its sources: "not available in the *given* context", "missing from the *supplied* documents"
_SOURCE_ADJ_EN = (r"(?:(?:given|provided|supplied|attached|retrieved|above|available|shared|uploaded|following|"
                  r"cited|quoted|reference|relevant|same)\s+)?")
_INFO_EN = (r"(?:information|info|details?|data|answers?|mention|reference|figures?|guidance|specifics|context|"
            r"documentation|record|evidence|content)")
_SAY_EN = (r"(?:mention\w*|say|says|said|state[sd]?|specif\w+|cover\w*|address\w*|discuss\w*|describ\w+|tell|identif\w+|name[sd]?|"
           r"explain\w*|indicate\w*|answer\w*|clarif\w+|talk\w*\s+about|touch\w*\s+(?:on|upon)|go\s+into|"
           r"refer\w*\s+to|detail\w*|reference\w*)")
_HOLD_EN = r"(?:contain\w*|include\w*|provide\w*|give[sn]?|list\w*|show\w*|offer\w*|have|has|had|hold\w*)"
_NEG_EN = (r"(?:does\s+not|doesn't|do\s+not|don't|did\s+not|didn't|is\s+not|isn't|are\s+not|aren't|never|"
           r"(?:seems?|appears?)\s+not\s+to|(?:don't|doesn't)\s+(?:seem|appear)\s+to|fail(?:s|ed)?\s+to)")
# the lacking information is the head of its phrase: nothing but a preposition, a verb of lack or the end follows
_INFO_HEAD_EN = (r"(?=\s*(?:$|[.,;:!?)\]—–-]|\sof\s+(?:that|this|it|these|those)\b|\s(?:about|on|regarding|concerning|for|in|within|from|to|that|"
                 r"available|here|at\s+hand|provided|given|found|needed|required|so|and|but|yet|i|we|whatsoever)\b))")

_STRONG_ZH = (r"(?:知识库|资料库|参考资料|参考信息|参考内容|参考文档|检索结果|搜索结果|上下文|文中|原文|文本|段落|资料|文档|"
              r"(?:所给|所提供|提供|给定|给出|现有|已知|已有|检索到|上述|以上)的?(?:信息|内容|资料|文档|文件|材料|上下文|段落|文本|"
              r"资讯|来源|证据))")
_WEAK_ZH = r"(?:文件|材料|记录|报告|证据|手册|列表|清单|价格表|目录|表格|条款|章程|指南|说明书|须知)"
_SOURCE_ZH = rf"(?:{_STRONG_ZH}|{_WEAK_ZH})"
_INFO_ZH = r"(?:信息|资讯|资料|内容|数据|记录|记载|说明|答案|证据|条目|依据|细节|结果)"
_INFO_Q_ZH = (r"(?:相关的?|有关的?|任何|具体的?|足够的?|更多的?|确切的?|明确的?|准确的?|可靠的?|这方面的?|此方面的?|"
              r"该问题的?|这个问题的?|对应的?|这个|这一|此|该|[^，。,.；;！!？?\s]{1,15}的){0,2}")
_INFO_HEAD_ZH = r"(?![\u4e00-\u9fff](?<![可能来供以]))"
_SAY_ZH = r"(?:提及|提到|提|涉及|说明|说|记载|记录|写|讲|交代|介绍|描述|给出|列出|覆盖|涵盖|收录|出现|解释|指出|明确|谈到|回答)"
_LACK_ZH = r"(?:没有|并没有|并无|没|未|并未|尚未|不|无|暂无|暂未|查无|尚无)"
_ADV_ZH = r"(?:中|里|内|里面|上)?(?:也|均|都|并|只|好像|似乎|暂时|暂|目前|还|亦)*"
# what may stand before a Chinese inability verb in its clause: speaker, source, polite and time words
_SUBJECT_ZH = re.compile(
    r"^(?:\s|[,，:：]|抱歉|很抱歉|对不起|不好意思|很遗憾|遗憾的是|sorry|我(?!们)|本助手|小?助手|客服|机器人|这边|那边|作为ai助手|作为人工智能|目前|暂时|暂|现在|"
    r"还|也|都|仍|实在|确实|真的|恐怕|可惜|但是?|不过|可是|然而|这个问题|该问题|此问题|这个|这一点|对此|关于此|"
    r"(?:根据|依据|基于|从|在|按照|通过|就|凭)?[\u4e00-\u9fff]{0,4}?" + _SOURCE_ZH + r"(?:中|里|内|里面|上|来看|看来)?|根据|依据|基于|从|在|"
    r"所|掌握|查阅|了|的|已有|现有|给定|提供)*$", re.IGNORECASE)
_INABLE_ZH = re.compile(
    r"(?:无法|没法|无从|没办法|不能|未能|没能|没有|并未|未|没|不)(?:在|从|根据|通过)?[^。，,.；;]{0,14}?"
    r"(?:找到|检索到|查到|搜索到|搜寻到|查询到|发现|看到|确定|判断|得知|获知|知道|确认|得出|(?P<give>提供|给出|获取|访问|办理|受理|查询))|"
    r"找不[到着]|查不[到着]|搜不[到着]|检索不到|看不到|不知道|不清楚|不太清楚|不确定|不太确定")
_ANSWER_ZH = re.compile(r"(?:无法|没法|无从|不能|没办法|难以|未能|没能)[^。，,.；;]{0,10}?(?:回答|作答|解答|答复|回复)|"
                        r"答不上|回答不了|答不了|说不了|无可奉告")

# the refusal wordings, one a line, naming the parts above as ${PART}: data/refusals_en.txt, refusals_zh.txt
_PARTS = dict(ADV_ZH=_ADV_ZH, HOLD_EN=_HOLD_EN, INFO_EN=_INFO_EN, INFO_HEAD_EN=_INFO_HEAD_EN, INFO_HEAD_ZH=_INFO_HEAD_ZH,
              INFO_Q_ZH=_INFO_Q_ZH, INFO_ZH=_INFO_ZH, LACK_ZH=_LACK_ZH, NEG_EN=_NEG_EN, SAY_EN=_SAY_EN, SAY_ZH=_SAY_ZH,
              SOURCE_ADJ_EN=_SOURCE_ADJ_EN, SOURCE_EN=_SOURCE_EN, SOURCE_ZH=_SOURCE_ZH, STRONG_EN=_STRONG_EN,
              STRONG_ZH=_STRONG_ZH, WEAK_EN=_WEAK_EN)
_EN = list(templates("refusals_en", _PARTS))
_ZH = list(templates("refusals_zh", _PARTS))
_FRAGMENT = re.compile(r"^\W*(?:answer\s*:\s*|答案\s*[:：]\s*|a\s*:\s*)?(?:" + alternation("refusal_fragments", regex=True)
                       + r")\W*$", re.IGNORECASE)  # "N/A", "Unknown", 未知...: data/refusal_fragments.txt
_REFUSAL = re.compile("|".join(f"(?:{p})" for p in _EN + _ZH), re.IGNORECASE | re.MULTILINE)
# the question logged or handed on instead of answered (已为您创建工单, "I'm going to pass this on to our team"):
# data/refusal_deferrals.txt
_DEFERRAL = re.compile(alternation("refusal_deferrals", regex=True), re.IGNORECASE | re.MULTILINE)

# --------------------------------------------------------------------------- compositional rule
_LACK = re.compile(
    r"\b(?:not|no|nothing|none|neither|never|cannot|can't|couldn't|don't|doesn't|didn't|isn't|aren't|wasn't|won't|"
    r"without|lacks?|lacking|insufficient|unable|unavailable)\b|n't\b|"
    r"没有?|未|无(?!论)|不(?!同|仅|但|少|断|久)|缺乏|缺少|不足|找不[到着]|查不[到着]|看不[到着]|搜不[到着]|答不上|回答不了|说不了|"
    r"不可用", re.IGNORECASE)
_SPEAKER = re.compile(r"\b(?:i|i'm|i've|i'd|me|my)\b|我(?!们)", re.IGNORECASE)
_SOURCE = re.compile(_SOURCE_EN + r"|" + _SOURCE_ZH + r"|\bsearch(?:es)?\b|摘录|来源|手头|搜索|检索", re.IGNORECASE)
# a source that reports a fact is not a source that lacks one: "资料显示，...", "the manual says that ..."
_ATTRIBUTION = re.compile(
    r"(?:" + _SOURCE_EN + r")\s+(?:\w+\s+)?(?:says?|states?|shows?|notes?|indicates?|confirms?|reports?|explains?)"
    r"(?:\s+that)?\b|\b(?:according\s+to|per)\s+(?:the\s+)?(?:\w+\s+)?" + _SOURCE_EN + r"|"
    r"(?:" + _SOURCE_ZH + r")(?:中|里)?(?:明确)?(?:显示|表明|指出|写明|写道|规定|明确说明|称|提到)[，,:：]", re.IGNORECASE)
_SPEAKER_VERB = re.compile(r"\b(?:find\w*|found|locat\w*|see|seeing|answer\w*|respond|say|tell|determine|know|"
                           r"confirm|access|given|shown|provided|sent)\b|找|查|答|回复|知道|确定|清楚|说|作答|看到|访问", re.IGNORECASE)
_SOURCE_VERB = re.compile(r"\b(?:documented|mention\w*|cover\w*|specif\w*|state[sd]?|address\w*|discuss\w*|talk\w*|"
                          r"describ\w*|contain\w*|include[sd]?|say|says|tell|answer\w*)\b|"
                          r"记载|提及|提到|涉及|给出|说明|写|讲|交代|覆盖|涵盖|收录", re.IGNORECASE)
_INFO = re.compile(r"\b(?:information|info|details?|answers?|anything|nothing|mentions?|results?|evidence|"
                   r"entry|entries)\b|(?:相关|有关|任何|具体|这方面|的|该|此|这个)(?:信息|答案|内容|数据|记录|结果|证据|说法|条目)|"
                   r"答案|这个信息|这一点", re.IGNORECASE)
_STRONG = re.compile(r"\b(?:answer|respond|reply)\b|回答|作答|回复|答复|解答|得知|获知", re.IGNORECASE)
# a clause that opens with a negated command tells the reader what not to do: "Don't reply or click anything"
_COMMAND = re.compile(r"\W*(?:please\s+)?(?:do\s+not|don't|never)$", re.IGNORECASE)
NEAR, FAR = 35, 45  # characters: a lack word and what it negates; and the source or speaker around them


@shared(256)
def _match_spans(pattern: re.Pattern[str], text: str) -> tuple[list[int], list[int]]:
    """Starts and ends of ``pattern``'s matches in ``text``: both ascending (finditer's matches do not overlap)."""
    found = [(m.start(), m.end()) for m in pattern.finditer(text)]
    return [s for s, _ in found], [e for _, e in found]


def _near(pattern: re.Pattern[str], text: str, at: int, span: int, before: int | None = None) -> bool:
    """A match of ``pattern`` within ``span`` characters after ``at`` (or ``before`` characters before it)."""
    back = span if before is None else before
    if not enabled():  # the scan from before the sharing: every match, for every word asked about
        return any(at - back <= m.end() and m.start() <= at + span for m in pattern.finditer(text))
    # the matches once per text; the first that ends at or after at - back starts first of those that do
    starts, ends = _match_spans(pattern, text)
    i = bisect_left(ends, at - back)
    return i < len(starts) and starts[i] <= at + span


def _compositional(clause: str) -> re.Match[str] | None:
    """The first lack word of one clause that, with what it negates and who lacks it, makes a refusal."""
    c = _ATTRIBUTION.sub(lambda m: "_" * len(m.group(0)), clause)
    for m in _LACK.finditer(c):
        at = m.start()
        by_speaker = _near(_SPEAKER, c, at, FAR) and (_near(_SPEAKER_VERB, c, at, NEAR, 6) or _near(_INFO, c, at, NEAR, 10))
        by_source = _near(_SOURCE, c, at, FAR) and (_near(_SOURCE_VERB, c, at, NEAR, 6) or _near(_INFO, c, at, NEAR, 10))
        if by_speaker or by_source or (_near(_STRONG, c, at, 8, 0) and not _COMMAND.match(c, 0, m.end())):
            return m
    return None


# --------------------------------------------------------------------------- spans and clauses
# a sentence: up to a sentence mark or a line break; a decimal point ("3.5") and a list number's ("2. Parental
# Leave Policy") are none
_SENTENCE = re.compile(r"(?:[^.!?。！？;；\n]|(?<=\d)\.(?=\d)|(?<=\n\d)\.(?=\s)|(?<=^\d)\.(?=\s))+")
_CLAUSE = re.compile(r"(?:[^.!?。！？;；\n,，:：、()（）【】\[\]—]|(?<=\d)[.,](?=\d))+")
_RELATIVE_ZH = re.compile(r"^[^，,。.；;！!？?]{0,12}?的[\u4e00-\u9fff]{0,4}?(?:情况下|时候|(?:可以|可|能够|能|需要|需|应该|应|"
                          r"须|会|将|请|都|也)[\u4e00-\u9fff]{2}|(?:人|者|用户|员工|客户|人员|旅客|乘客|学生|会员)(?=[，,]))")
_INFO_OBJECT_ZH = re.compile(_INFO_Q_ZH + _INFO_ZH + _INFO_HEAD_ZH)
_SUBJECT_EXTRA_ZH = re.compile(r"恕|另外|此外|所以|因此|因而|故")
# the speaker introduced earlier in the sentence is the subject of what follows: 我是AI助手，暂时无法获取该停车场的收费标准
_SELF_ZH = re.compile(r"我(?!们)(?:是|作为)[^，。,.；;！!？?]{0,10}?(?:助手|客服|机器人|ai|人工智能|智能)", re.IGNORECASE)


def sentence_start(text: str, at: int) -> int:
    """Where the sentence holding ``at`` begins."""
    return max(text.rfind(c, 0, at) for c in ".!?。！？\n") + 1


def _clauses(text: str, pattern: re.Pattern[str] = _CLAUSE) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in pattern.finditer(text) if m.group(0).strip()]


def clause_spans(text: str) -> list[tuple[int, int]]:
    """Where each clause of a normalised ``text`` is (split at sentence marks and commas, as the rules read it)."""
    return _clauses(text)


def _clause_of(spans: list[tuple[int, int]], at: int) -> tuple[int, int]:
    return next(((s, e) for s, e in spans if s <= at < e), (at, at))


def _inability_zh(text: str) -> list[tuple[int, int]]:
    """Chinese inability verbs (无法确定, 没有找到, 找不到...) whose clause has no worldly subject before them."""
    out = []
    clauses = _clauses(text)
    for m in _INABLE_ZH.finditer(text):
        start, _ = _clause_of(clauses, m.start())
        before = _SUBJECT_EXTRA_ZH.sub("", text[start:m.start()]).lower()
        # 提供 / 给出 / 获取 / 访问 lack only for the speaker (我无法提供) or of information (无法获取相关信息):
        # "也未提供住宿补贴" says what a policy does not provide
        gives = m.group("give") is None or "我" in before or _INFO_OBJECT_ZH.match(text[m.end():]) \
            or _SELF_ZH.search(text[sentence_start(text, start):start])
        if gives and _SUBJECT_ZH.match(before) and not _RELATIVE_ZH.match(text[m.end():]):
            out.append((m.start(), m.end()))
    return out


# a question back to the user about what they mean, instead of an answer ("Could you clarify which plan you're
# on?", 您指的是门诊预约还是体检预约？): the reply does not answer (yet)
_CLARIFY = re.compile(
    r"[^.!?。！？\n]*\b(?:clarify|specify|confirm|let\s+me\s+know|tell\s+me)\b[^.!?。！？\n]*\b(?:which|what|whether|if)\b[^.!?。！？\n]*\?|"
    r"[^.!?。！？\n]*\b(?:which|what)\s+(?:\w+\s+){0,3}?(?:do|did|are|were|is)\s+you\s+(?:mean|referring|asking|on)\b[^.!?。！？\n]*\?|"
    # a request for the user's details: "Could you tell me the dates of your rental?", "Can you share your order number?"
    r"[^.!?。！？\n]*\b(?:could|can|would)\s+you\s+(?:please\s+)?(?:tell\s+me|share|provide|send\s+(?:me|us)|let\s+(?:me|us)\s+know|"
    r"confirm)\b[^.!?。！？\n]*\?|"
    r"[^。！？!?\n]*(?:您|你)(?:指的|说的|问的|想问的|想了解的|[\u4e00-\u9fff]{1,6}的)?是[^。！？!?\n]{0,30}?(?:还是|哪)[^。！？!?\n]*[？?]|"
    r"[^。！？!?\n]*(?:请|麻烦)(?:您|你)?(?:先)?(?:确认|告诉我|说明)[^。！？!?\n]*(?:哪|是否|具体)[^。！？!?\n]*[。！？!?]?|"
    r"[^.!?。！？\n]*\b(?:are\s+you\s+asking|do\s+you\s+mean|did\s+you\s+mean)\b[^.!?。！？\n]*\?|"
    r"[^。！？!?\n]*(?:具体)?是指哪[^。！？!?\n]*[？?]",
    re.IGNORECASE)
# a question back to the user about their own case, instead of an answer ("Which city or town do you live in?",
# 请问您需要开具普通发票还是专用发票？): a question sentence that addresses the user, or offers a choice (还是…？); an
# offer to go on ("Would you like me to book it?", 需要我帮您预约吗？) is none. Beside an answer it is background
# (evalkit.text.partial_answers), so the reply is a partial answer
_ASKS_BACK = re.compile(r"[^.!?。！？\n]*\b(?:you|your|you're|you've)\b[^.!?。！？\n]*\?|"
                        r"[^.!?。！？!?\n]*(?:您|你|请问|还是)[^.!?。！？!?\n]*[？?]", re.IGNORECASE)
# an offer to go on ("Would you like me to book it?", 需要我帮您预约吗？): it presupposes what it offers (the claim judge
# checks it, evalkit.text.assertions) and asks nothing back
OFFER = re.compile(r"\b(?:would\s+you\s+like|do\s+you\s+(?:want|need)|shall\s+i|should\s+i|want\s+me\s+to|"
                   r"(?:like|need)\s+me\s+to)\b|(?:您|你)(?:要不要|需不需要|是否需要)|要不要我|需要我|要我", re.IGNORECASE)
_ANYTHING_ELSE = re.compile(r"\banything\s+else\b|还有(?:什么|其他|别的)", re.IGNORECASE)  # "Anything else I can help with?"


def _asks_back(text: str) -> list[tuple[int, int]]:
    """The questions back to the user in a normalised ``text`` (:data:`_ASKS_BACK`), offers aside."""
    return [(m.start(), m.end()) for m in _ASKS_BACK.finditer(text)
            if not OFFER.search(m.group(0)) and not _ANYTHING_ELSE.search(m.group(0))]


# every alternative of _CLARIFY spells a question mark (ASCII or full-width) or 请 / 麻烦: a text with none of them
# has no match, and the scan is skipped. It costs O(n^2) on a long run without sentence marks (each of its
# alternatives opens with one), ~8 ms on a deploy-gate answer, 80% of the generate node's time
_CLARIFY_NEEDS = re.compile(r"[?？]|请|麻烦")


def refusal_spans(text: str, compositional: bool = True) -> list[tuple[int, int]]:
    """Where a normalised ``text`` (:func:`normalise`) says that the speaker or the sources lack the answer;
    ``compositional=False``: only the listed wordings (no lack word read with a source or a speaker near it)."""
    spans = [(m.start(), m.end()) for m in _REFUSAL.finditer(text)]
    deferred = set(deferral_spans(text))  # a service taking the question away: no lookup of a record
    spans += deferred
    spans += [(m.start(), m.end()) for m in _ANSWER_ZH.finditer(text)]
    spans += _inability_zh(text)
    asks = not enabled() or bool(_CLARIFY_NEEDS.search(text))  # both scans need a question mark, 请 or 麻烦
    if asks:
        spans += [(m.start(), m.end()) for m in _CLARIFY.finditer(text)]
    back = _asks_back(text) if asks else []  # not a lookup (_world_lookup)
    head = _clauses(text)[:1]  # a fragment ("N/A", 未知) refuses as the whole answer or its head, not as a label inside it
    if _FRAGMENT.match(text):
        spans.append((0, len(text)))
    elif head and _FRAGMENT.match(text[head[0][0]:head[0][1]]):
        spans.append(head[0])
    prev_source = False
    sentences = _clauses(text, _SENTENCE)
    for s, e in sentences if compositional else ():
        sentence, at, shift = text[s:e], 0, 0
        pronoun = _PRONOUN.match(sentence) if prev_source and _SAYING.search(sentence) else None
        if pronoun:  # "The documents I have cover X. They don't cover the warranty.": "they" are the documents
            # (with a verb of saying: "The manual lists the ports. They don't include HDMI." is about the ports)
            at, shift = pronoun.start(1), len(_NAMED) - len(pronoun.group(1))
            sentence = sentence[:at] + _NAMED + sentence[pronoun.end(1):]
        m = _compositional(sentence)
        if m is not None:  # positions in the sentence as written
            start, end = (s + (p if p <= at else max(at, p - shift)) for p in (m.start(), m.end()))
            spans.append((start, end))
        prev_source = bool(_SOURCE.search(text[s:e]))
    sentence_of = {span: _clause_of(sentences, span[0]) for span in spans}
    lookups = {b: _world_lookup(text[slice(*b)]) for b in set(sentence_of.values())}  # a long sentence holds many spans
    return sorted({span for span, b in sentence_of.items() if not lookups[b] or span in deferred} | set(back))


def deferral_spans(text: str) -> list[tuple[int, int]]:
    """Where a normalised ``text`` logs or hands on the question instead of answering it (a ticket created, "I'm
    going to pass this on to our permits team"): refusal spans of their own kind, since a deferral that comes with
    an appointment ("师傅会在明天上午9:00–12:00上门") answers a question about when (:mod:`evalkit.text.abstention`)."""
    return [(m.start(), m.end()) for m in _DEFERRAL.finditer(text)]


_PRONOUN = re.compile(r"^\W*(they|these|those|both)\b", re.IGNORECASE)  # a pronoun heading a sentence ...
_NAMED = "the documents"  # ... read as the sources the sentence before named
_SAYING = re.compile(r"\b" + _SAY_EN + r"\b", re.IGNORECASE)


# a lookup in an operational system that finds no record is a fact about the world ("there is no record of a
# business registered under that name in the state database", 系统中查无此人的参保记录): the system, not the
# documents or the speaker, lacks it
_SYSTEM = re.compile(r"\b(?:database|registry|register|ledger|system|portal)\b|系统|数据库|登记簿|台账|名下", re.IGNORECASE)
_STRONG_SOURCE = re.compile(_STRONG_EN + "|" + _STRONG_ZH + r"|\bsearch|\bretriev|检索|搜索", re.IGNORECASE)


def _world_lookup(sentence: str) -> bool:
    """Whether a sentence with a lack says that an operational system holds no record, with no document or speaker
    lacking anything."""
    return bool(_SYSTEM.search(sentence)) and not _STRONG_SOURCE.search(sentence) and not _SPEAKER.search(sentence)
