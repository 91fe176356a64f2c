"""Partial answers: which clauses of a reply that refuses state something (an answer), and which are background.

What it is for: :func:`evalkit.text.abstention.detect_abstention` finds a refusal span with
:mod:`evalkit.text.refusal_rules`; a reply that also states something about the world is a
*partial* answer (answered, so its claims get judged). What a refusal says besides declining is
not such a statement: general knowledge it offers without vouching for it, what the sources
cover instead, what was searched, where to ask, courtesy, a question back to the user, a
template's keys. :func:`content_clauses` returns the clauses that remain. The vocabulary (what
a source, a lack, a verb of saying are) is :mod:`evalkit.text.refusal_rules`'.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from evalkit.text.lexicon import COURTESY
from evalkit.text.refusal_rules import (
    _ATTRIBUTION,
    _CLARIFY,
    _FRAGMENT,
    _HOLD_EN,
    _INFO,
    _LACK,
    _SAY_EN,
    _SAY_ZH,
    _SENTENCE,
    _SOURCE,
    _SOURCE_EN,
    _SOURCE_VERB,
    _SOURCE_ZH,
    _STRONG_EN,
    _STRONG_ZH,
    NEAR,
    _clauses,
    _near,
    deferral_spans,
    sentence_start,
)
from evalkit.text.wordlists import alternation, templates

__all__ = ["CONTENT_MIN_CJK", "CONTENT_MIN_WORDS", "CONTRAST", "FILLER", "QUESTION", "content_clauses", "is_content",
           "service_talk"]

CONTENT_MIN_WORDS, CONTENT_MIN_CJK = 3, 4  # a shorter clause ("Sorry", 很抱歉, "Hmm") is a filler
_META = re.compile(
    _STRONG_EN + r"|" + _STRONG_ZH + r"|\bthe\s+user\s+(?:wants|is\s+asking|asks|asked|would\s+like)\b|"
    r"用户(?:想|想要|在问|问的是|询问|需要知道)|\b(?:questions?|asking|asked|as\s+an\s+ai|language\s+model)\b|问题|您问|你问|提问|"
    r"ai助手|人工智能|^\s*(?:regarding|about|as\s+for|as\s+to|concerning|with\s+regard\s+to|on\s+the\s+topic|"
    r"based\s+on|according\s+to|given|from|per|in\s+light\s+of)\b|^\s*(?:(?:您好|你好|亲)\S{0,4}\s*)?(?:关于|对于|至于|就此|对此|根据|依据|基于|按照|从)|"
    r"\b(?:only|just|merely)\s+(?:\w+\s+)?(?:says?|covers?|mentions?|discuss\w*|lists?|includes?|gives?|describes?|"
    r"talks?\s+about|deals?\s+with|contains?)\b|(?:只|仅)(?:是|有)?(?:说|说明|提到|提及|写|覆盖|涉及|列出|包括|包含|讲|给出|谈到)|^\W*(?:只有|仅有)|"
    r"(?:您|你)(?:想|想要)?(?:了解|知道|咨询|询问|问)的是|"
    r"\b(?:sorry|unfortunately|regrettably|apologies|afraid)\b|抱歉|对不起|不好意思|遗憾|"
    r"\b(?:please|contact|reach\s+out|check\s+with|consult|support\s+team|help\s*desk|customer\s+(?:service|support)|"
    r"you\s+(?:may|might|can|could|should|need\s+to|want\s+to|would\s+need\s+to)|try|recommend|suggest|rephrase|"
    r"more\s+context|help\s+you)\b|建议|^\s*请|请您|您可以|你可以|联系|咨询|拨打|致电|稍后再试|更多(?:背景|信息|上下文)|客服|管理员|"
    # the sources' age or disagreement, and the speaker's doubt of them: 其中一份是2019年的旧规定, 无法保证准确, "it's dated 2021"
    r"旧规定|旧版|老版本|(?:已经?|可能)过时|说法不一致|(?:无法|不能|没法)保证(?:准确|是最新|信息准确)|\b(?:out\s+of\s+date|outdated|"
    r"superseded|conflicting|contradictory|dated\s+(?:from\s+)?(?:\w+\s+)?\d{4})\b|"
    r"\b(?:can't|cannot|can\s+not)\s+guarantee\s+(?:that\s+)?(?:it|this|the\s+\w+)\s+(?:is|'s)\s+(?:accurate|current|up\s+to\s+date)\b|"
    + "|".join(templates("refusal_service_talk", {})),  # data/refusal_service_talk.txt: the service talking
    re.IGNORECASE)
# a clause about the speaker is not content, unless it states a belief ("I believe the fee is $20")
_SPEAKER_META = re.compile(r"\b(?:i|me|my)\b(?![^.;,]{0,12}\b(?:believe|think|recall|understand|expect)\b)"
                           r"(?!\s+(?:can|could)\s+(?:tell\s+you|confirm|say)\s+(?:is\s+)?(?:that|is)\b)|"
                           r"我(?!们)(?!(?:能|可以)(?:告诉您|告诉你|确认)的是)", re.IGNORECASE)
# a clause that asserts nothing: a condition ("If you upload the lease", 如您能提供...), a purpose (为避免给出错误的
# 接口名称, "to avoid guessing"), what an outcome depends on ("this can depend on which country you worked in"), a
# possibility (可能已经过时, "may be outdated"), where a thing would normally be ("would normally be in the report")
_NOT_ASSERTED = re.compile(
    r"^\W*(?:and\s+|but\s+|so\s+)?(?:if|unless|in\s+case|whether|once|to\s+avoid|so\s+as\s+not\s+to|in\s+order\s+not\s+to)\b|"
    r"^\W*(?:而且|但|所以)?(?:如果|如|若|假如|要是|倘若|万一|一旦|为避免|为了避免|以免|为防止)|"
    r"\b(?:depends?|depending|vary|varies)\s+on\b|\bcan\s+(?:depend|vary)\b|取决于|因[^，。]{1,12}而异|"
    r"\b(?:vary|varies|differ|differs)\s+(?:by|from|between|across|depending|according)\b|\bcase\s+by\s+case\b|"
    r"(?:差别|差异|区别)(?:较大|很大|比较大)|不尽相同|各不相同|一概而论|视具体情况|具体情况具体|"
    r"^\W*不同[^，。；;]{1,20}?(?:不同|不(?:太|大|尽)?一样|各异)|(?:而|会)(?:有所)?(?:不同|差异)\W*$|"
    r"^\W*different\s+(?:\w+\s+){1,2}?(?:have|has|follow|use|get)\s+different\b|"
    r"\b(?:every|each)\s+(?:\w+\s+){0,2}?(?:is|are)\s+(?:a\s+little\s+|a\s+bit\s+|slightly\s+)?different\b|"
    r"需(?:要)?(?:结合|根据|视)[^，。；;]{0,30}?(?:判断|评估|确定|认定|核定)|(?:要|得)看|(?:情况|要求|政策|规定|标准)[^，。；;]{0,4}?(?:不同|不(?:太|大|尽)?一样|各异)|"
    r"\b(?:every(?:one|body)'s|each)\s+(?:situation|case)\s+is\s+different\b|\bdifferent\s+rules\s+apply\b|"
    r"\b(?:may|might)\s+(?:be|have)\s+(?:been\s+)?(?:outdated|out\s+of\s+date|changed|superseded)\b|^\W*(?:可能|也许|或许)|"
    r"\bwould\s+(?:normally|usually|typically|generally)\b|(?:一般|通常|往往)(?:都)?会",
    re.IGNORECASE)
# why a reply gives no answer, which is no answer either: the sources disagree or are out of date ("the baggage page
# and an older fare guide list different limits", 其中部分文件已经过期), the matter is decided case by case ("each
# case is decided individually"), the information is confidential (该信息属于内部敏感信息)
_NO_ANSWER_WHY = re.compile(
    r"\b(?:list|give|state|show|quote|cite)s?\s+different\s+(?:\w+\s+){0,2}?(?:limits?|figures?|values?|amounts?|"
    r"numbers?|dates?|rules?|answers?|information|prices?|fees?|rates?|times?)\b(?![^.;]*\d)|"
    r"(?:其中|部分|有些|这些|几份|一些)(?:的)?(?:文件|资料|文档|材料)[^，。；;]{0,4}?(?:已经?|均已|都已|早已)?(?:过期|过时|失效)|"
    r"\b(?:each|every)\s+(?:case|application|claim|request|appeal)\s+is\s+(?:decided|assessed|reviewed|judged|"
    r"considered|handled|evaluated)\s+(?:individually|separately|on\s+its\s+(?:own\s+)?merits|case\s+by\s+case)\b|"
    r"(?:属于|涉及|是)(?:公司)?(?:内部|敏感|保密|机密)(?:的)?(?:敏感|保密)?(?:信息|内容|数据|资料)",
    re.IGNORECASE)
_CJK = re.compile(r"[\u3400-\u9fff]")
_WORD = re.compile(r"[A-Za-z0-9]+")


def is_content(clause: str) -> bool:
    """A clause that states something (not about the sources, the question or the speaker; not a filler)."""
    reported = _ATTRIBUTION.search(clause)
    if reported:  # "The documentation confirms that the SDK supports Python 3.9": what it reports is what counts
        clause = clause[reported.end():]
    cjk, words = len(_CJK.findall(clause)), len(_WORD.findall(clause))
    big = words >= CONTENT_MIN_WORDS or cjk >= CONTENT_MIN_CJK or (cjk >= 2 and words >= 1)
    if not big or _META.search(clause) or _SPEAKER_META.search(clause) or _NOT_ASSERTED.search(clause) \
            or _NO_ANSWER_WHY.search(clause):
        return False
    if _SOURCE.search(clause) and _LACK.search(clause):  # what a source lacks ("城市列表不含澳门") is about the source
        return False
    return not any(_near(_INFO, clause, m.start(), NEAR, 10) or _near(_SOURCE_VERB, clause, m.start(), 12, 0)
                   for m in _LACK.finditer(clause))


# A bare short answer heading the reply, then the refusal ("Paris. The documents don't give the date.",
# "Yes — but ...", "2019。资料没有提到月份。"): chat models answer first and add the caveat. It ends at a
# sentence mark, a dash or a colon, or at a comma before "but" (not "No, I can't find it"). A filler in
# that place (FILLER, or what _META and _SPEAKER_META call one: "Sure.", "Hmm.", 好的。, 您好！) is not one.
_HEAD_END = re.compile(r"\s*(?:[.!。！;；:：\n—]|--|[,，]\s*(?:but|however|though|although|yet)\b|"
                       r"[,，]\s*(?:但|不过|然而|只是))", re.IGNORECASE)
FILLER = re.compile(r"^\W*(?:" + alternation("fillers", regex=True) + r")\W*$", re.IGNORECASE)  # data/fillers.txt


HEAD_MAX_WORDS, HEAD_MAX_CJK = 8, 16  # a bare short answer ("Paris.", "March 14, 2022.", 是的。); longer is a sentence
_HEADING = re.compile(r"(?:^|\n)[ \t]{2,}\S[^\n]*$")  # a markdown heading ("## Response": '#' normalised to spaces)


def _answer_head(text: str, refusals: list[tuple[int, int]], background: Sequence[tuple[int, int]] = ()) -> list[str]:
    """The bare short answer before the first refusal span, after any fillers and background (``[]`` when
    there is none)."""
    first = min(s for s, _ in refusals)
    for s, e in _clauses(text):
        clause = text[s:e]
        if e > first or not _HEAD_END.match(text, e):
            return []
        if any(bs < e and s < be for bs, be in background) or _SEARCHED.search(clause) or _FRAGMENT.match(clause) \
                or _label(text, s, e) or _template(clause) or _layout_line(text, s, e) or _keyed(text, s, e, refusals) \
                or (_HEADING.search(text[:e]) and "\n" in text[e:e + 2]):
            continue
        if not (FILLER.match(clause) or _META.search(clause) or _SPEAKER_META.search(clause)):
            short = len(_WORD.findall(clause)) <= HEAD_MAX_WORDS and len(_CJK.findall(clause)) <= HEAD_MAX_CJK
            return [clause] if short and (_CJK.search(clause) or _WORD.search(clause)) else []
    return []


# --------------------------------------------------------------------------- background around a refusal
# What a refusal says besides declining is background, not a partial answer: general knowledge it
# offers without vouching for it ("Typically, banks charge $15-35 ... but the documents don't say"),
# what the sources cover instead ("The FAQ only explains how to apply", 文档介绍了开通方式，但没说...),
# what was searched (a list of document names), where to look, and courtesy ("Have a great day!").
# Each is read by its structure: a sentence that opens with a hedge of generality, a sentence whose
# subject is a source (a source word or a cited id before its verb, not reporting a fact: "资料显示，"),
# list items after a search verb or a heading of what was found instead, a sentence naming another
# place to ask, a question back to the reader. And a reply that concludes it cannot answer the question
# as a whole ("so I can't answer this", 因此无法回答您的问题) refuses, whatever else it says ("I can't
# say whether it is refundable" declines a part: the rest may be a partial answer).
_GENERAL = re.compile(
    r"^\W*(?:typically|generally(?:\s+speaking)?|usually|normally|in\s+general|as\s+a\s+(?:general\s+)?rule|"
    r"in\s+most\s+cases|(?:in\s+)?(?:many|most|some)\s+\w+)\b|^\W*(?:一般来说|一般而言|一般情况下|通常情况下|通常来说|通常|"
    r"很多|许多|大多数|多数|大部分)", re.IGNORECASE)
_CITED = r"[\[【(（](?:doc|文档|资料|来源|source|passage|段落)?[\s\-_#]*\w{0,12}[\]】)）]"
_DOC_KIND = (r"(?:faq|guide|leaflets?|brochures?|policy\s+wording|pages?|sheets?|summar(?:y|ies)|sections?|chapters?|指南|说明书|条款|章节|"
             r"章程|简章|问答|流程图|摘要|手册|《[^》]{1,20}》)")
_SOURCE_HEAD = re.compile(r"^\W*(?:(?:the|these|those|this|both|all|each|every|my|our|your|its|\w+'s)\s+)?(?:\w+\s+){0,3}?"
                          r"(?:" + _SOURCE_EN + r"|" + _DOC_KIND + r")|^\W*" + _CITED + r"|^\W*(?:[\u4e00-\u9fff]{0,6}?)(?:"
                          + _SOURCE_ZH + r"|" + _DOC_KIND + r"|里面|其中)", re.IGNORECASE)
# what the speaker searched ("I checked the handbook", "the pages I searched", "Sources checked:"): the verb with a
# speaker or an auxiliary before it, what was searched after it, or heading a list; not the adjective of "a checked
# bag", "the reviewed plan"
_SEARCH_VERB = r"(?:checked|searched|looked\s+(?:at|through)|reviewed|consulted|went\s+through)"
_SEARCHED = re.compile(r"\b(?:(?:i|we)(?:'ve|'d|\s+have|\s+had)?|have|has|had|was|were|been)\s+(?:also\s+|already\s+|just\s+|"
                       r"carefully\s+|now\s+)?" + _SEARCH_VERB + r"\b|"
                       r"\b" + _SEARCH_VERB + r"\s+(?:the|your|our|my|all|both|each|every|these|those|this|that|it|them|"
                       r"with|through|in|against|for|again)\b|\b" + _SEARCH_VERB + r"\s*(?::|$)|\bfound\s+instead\b|"
                       r"\bwhat\s+(?:they|it|the\s+\w+|these|those)\s+(?:do(?:es)?\s+)?(?:cover|contain|include|say|mention)\b|"
                       r"\b(?:include|cover|contain)s?\s+the\s+following\b|"
                       r"主要涉及|涉及的是|提到的是|包含的是|只涉及|另外找到|找到的是|主要包括|检索范围|搜索范围|查阅范围|"
                       r"检索了|查阅了|查看了|搜索了|查了|看了|核对了|经过?(?:查询|核对|核实|查阅|检索)", re.IGNORECASE)
# "Note: the following is not from your documents": what follows is general knowledge
_DISCLAIMER = re.compile(r"\bnot\s+(?:from|based\s+on|in|drawn\s+from)\s+(?:your|the|these)\s+(?:provided\s+|uploaded\s+|shared\s+)?"
                         r"(?:documents?|files?|sources?|context|materials?)|并非来自|不是来自|非来自|并非出自|不是出自", re.IGNORECASE)
_SIGN_OFF = re.compile(r"^\W*(?:此致|敬礼|(?:best\s+|kind\s+|warm\s+)?regards|sincerely|yours\s+(?:truly|faithfully|sincerely))\b",
                       re.IGNORECASE)
_THEY_COVER = re.compile(r"^\W*(?:they|these|those|both|all\s+of\s+them)\s+(?:only\s+|just\s+|mainly\s+|mostly\s+)?"
                         r"(?:cover|describe|discuss|explain|mention|include|contain|deal\s+with|talk\s+about|focus\s+on|list|"
                         r"are\s+about)\b", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^\s*(?:[-•*·]|\d{1,2}[.)、])\s*|^\s{2,}\S")  # "* item" reads "  item" once normalised
_REFERRAL = re.compile(
    r"\b(?:website|office|department|hotline|desk|staff|team|pharmacist|doctor|physician|agent|provider|"
    r"manufacturer|elsewhere)\b[^.;]{0,40}\b(?:should|would|could|can|may|might|will)\b|\b(?:best\s+place|"
    r"authoritative|(?:should|would|could|can|may|might|will)\s+be\s+able\s+to\s+(?:tell|help|give|confirm|advise|answer)|"
    r"would\s+know|worth\s+(?:pinging|contacting|asking|checking|calling|emailing|reaching)|(?:documented|available|found|listed|covered)\s+elsewhere|check\s+(?:the|with|your)|see\s+the|visit\b|call\b|look\s+(?:at|up))|"
    r"\b(?:should|must|has\s+to|have\s+to|needs?\s+to)\s+be\s+(?:\w+\s+){1,4}?(?:by|with)\s+(?:your|a|an|the)\b|"
    r"以[^，。]{0,12}为准|官网|热线|窗口|人工|药师|医生|咨询|查看|致电|转接|联系", re.IGNORECASE)
# a clause on where and when the information appears, not on what it says (a pointer, like a referral, but read
# clause by clause: "Last year's fee was $40, and the council publishes the new fees each April" keeps its fact):
# "The Rent Board publishes the current limit each year", "It may not have been published to this assistant yet",
# "Closure decisions are announced on the district website"
_PUBLISHED = re.compile(
    r"\b(?:publishes|posts|announces|releases)\s+(?:the|its|their|an?)\b|\b(?:is|are|gets?)\s+(?:usually\s+|typically\s+|"
    r"normally\s+|generally\s+|always\s+|only\s+)?(?:published|posted|announced|released)\s+(?:on|in|via|through|at)\b|"
    r"\b(?:not|yet\s+to)\s+(?:have\s+)?been\s+"
    r"(?:published|posted|announced|released)\b|\b(?:has|have)(?:n't|\s+not)\s+(?:yet\s+)?been\s+(?:published|posted|"
    r"announced|released)\b|(?:尚未|还没有?|暂未|未)(?:公布|发布|公告)|(?:会|将|每年|定期)(?:公布|发布)", re.IGNORECASE)
_CONCLUSIVE = re.compile(
    r"\b(?:i|we)(?:'m|\s+am|'re|\s+are)?\s+(?:can't|cannot|can\s+not|unable\s+to|not\s+able\s+to|couldn't|could\s+not|"
    r"won't\s+be\s+able\s+to|not\s+in\s+a\s+position\s+to)\s+(?:\w+\s+){0,2}?(?:answer|respond|reply|help)"
    r"(?:\s+(?:this|that|it|your\s+question|the\s+question|this\s+(?:one|question)|you))?"
    r"(?=\s*(?:$|[.!;,—–-]|\s(?:from|based|with|using|here|confidently|accurately|reliably|for\s+(?:you|now)|at\s+this|right\s+now|"
    r"without)\b))|"
    r"(?:无法|没法|没办法|不能|难以)(?:根据|基于|从|按照|凭|依据)?[^，。,.；;！!]{0,12}?(?:回答|作答|解答|答复)(?:您|你)?(?:的|这个|该|此)?"
    r"(?:问题)?(?=\s*(?:$|[，。,.；;！!～~]|哦|呢|了))|回答不了|答不了|"
    r"(?:无法|没法|不能|难以)(?:给出|得出|下)(?:明确的?|确定的?|任何)?结论|"
    r"\b(?:can't|cannot|can\s+not|unable\s+to|not\s+able\s+to)\s+(?:give|draw|reach|offer)\s+(?:a\s+|any\s+)?(?:definitive\s+|firm\s+|clear\s+)?conclusion",
    re.IGNORECASE | re.MULTILINE)
# a conclusion about one part of the question ("至于住院报销比例，资料中没有提及，无法回答", "As for the rest, I can't
# answer"): the reply may have answered the other part
_SCOPED = re.compile(r"\W*(?:(?:but|and)\s+)?(?:as\s+(?:for|to)|regarding|concerning)\b|\W*(?:但|不过|而)?(?:至于|关于)",
                     re.IGNORECASE)


CONTRAST = re.compile(r"[,，;；:：]\s*(?:but|however|though|yet|while|instead)\b|[,，;；:：]\s*(?:但|不过|然而|可是|只是|可以确认)",
                       re.IGNORECASE)
_PLEASE = re.compile(r"\bplease\b|\b(?:i|we)(?:'d|\s+would)?\s+(?:recommend|suggest|advise)\b|^\W*请|请(?:您|你)?(?:咨询|联系|拨打|致电|访问|查看|以|向|到|前往|转)|建议您|麻烦您", re.IGNORECASE)
# whether a stretch of text asks something (a question mark, or 吗 / 呢 at a line's end); searched for alone, not as
# QUESTION's end: searching QUESTION tries every start and scans to the sentence's end from each (quadratic)
_ASKS = re.compile(r"[?？]|[吗呢][。！!～~]?(?=\s*$|\s*\n)")
# a sentence that asks: a question back to the reader is no statement
QUESTION = re.compile(r"[^.!?。！？;；\n]*(?:" + _ASKS.pattern + r")")
_REPORTED = re.compile(r"^\W*(?:根据|依据|按照|据|按|according\s+to|per|as\s+per)", re.IGNORECASE)  # a fact reported from a source
_LACKED = re.compile(_SOURCE_VERB.pattern + "|" + _SAY_EN + "|" + _HOLD_EN + "|" + _SAY_ZH, re.IGNORECASE)


def _background(text: str) -> list[tuple[int, int]]:
    """The sentences and lines of a reply with a refusal that are background (see above)."""
    out = []
    searched = prev_source = disclaimed = signed = False
    for s, e in _clauses(text, _SENTENCE):
        sentence = text[s:e]
        if _GENERAL.match(sentence) or (_LIST_ITEM.match(sentence) and searched) or COURTESY.match(sentence) \
                or _PLEASE.search(sentence) or _REFERRAL.search(sentence) or _ASKS.search(text, s, min(len(text), e + 2)) or (
                _SOURCE_HEAD.match(sentence) and not _ATTRIBUTION.search(sentence) and not _REPORTED.match(sentence)):
            # up to a contrast: "The documents don't give the date, but the policy took effect on 1 January"
            turn = None if _GENERAL.match(sentence) else CONTRAST.search(sentence)  # a disclaimer follows knowledge
            rest = sentence[turn.end():] if turn else ""
            lacks = any(_near(_LACKED, rest, m.start(), 16, 0) or _near(_INFO, rest, m.start(), NEAR, 10)
                        for m in _LACK.finditer(rest))  # "..., but they don't list which programs": still lacking
            out.append((s, s + turn.start() if turn and not lacks else e))
        elif _THEY_COVER.match(sentence) and prev_source:  # "They cover the rent schedule ..." after "the documents"
            out.append((s, e))
        elif disclaimed or signed or (_SEARCHED.search(sentence) and not re.search(r"\d", sentence)):
            out.append((s, e))  # after "not from your documents", after "Regards", what was looked through
        disclaimed = disclaimed or bool(_DISCLAIMER.search(sentence))
        signed = signed or bool(_SIGN_OFF.match(sentence))
        searched = searched or bool(_SEARCHED.search(sentence))
        prev_source = bool(_SOURCE.search(sentence))
    return out


_KEY_LINE = re.compile(r"^\W*[\w\u3400-\u9fff ]{1,20}?\s*[:：]", re.MULTILINE)


def _label(text: str, s: int, e: int) -> bool:
    """A key before a colon in a reply laid out as ``key: value`` lines ("Source: none", "结论：..."): a field
    name of a template, not a statement ("可以：..." heading a one-line reply is an answer)."""
    clause = text[s:e]
    short = len(_WORD.findall(clause)) <= 2 and len(_CJK.findall(clause)) <= 4
    keyed = bool(re.match(r"\s*[:：]", text[e:e + 2])) or bool(re.search(r"[:：]\s*$", text[max(0, s - 3):s]))
    return short and keyed and len(_KEY_LINE.findall(text)) >= 2  # a key, or the short value after one


def _template(clause: str) -> bool:
    """A clause of a JSON-like template: quoted keys and values (masked by :func:`normalise`) and punctuation."""
    return not re.search(r"[A-Za-z\u3400-\u9fff0-9]", re.sub(r"Q{2,}|\b(?:null|true|false|none)\b", "", clause))


_LINE_MARK = re.compile(r"\s*(?:[-•*·]|\d{1,2}[.)、])\s*|\s{2,}(?=\S)")  # a bullet, a list number, or what
# normalise() left of a heading's '#' or a bold label's '**'


def _layout_line(text: str, s: int, e: int) -> bool:
    """A clause on a line of a reply's layout: a heading ("### 查询结果", "## Suggested next steps"), a bold label
    before its colon ("**结论**："), or a short list item with no number but in a document's name ("- 教育版的
    申请条件", "- 《2025年促销规则（第3版）》", "- Contact the licensing team"): in a reply that refuses, the names of
    its sections, of the documents looked through and of next steps, not an answer."""
    start, end = text.rfind("\n", 0, s) + 1, text.find("\n", e)
    line = text[start:len(text) if end < 0 else end]
    mark = _LINE_MARK.match(line)
    if mark is None:
        return False
    label = re.match(r"\s{2,}([^:：]{1,12}?)\s*[:：]", line)
    if label and s < start + label.end():  # the label of a "**key**: value" line
        return len(label.group(1).split()) <= 3
    item = re.sub(r"《[^》]*》|[(（][^)）]*[)）]", "", line[mark.end():])  # a document's name or version: no answer
    if re.search(r"[:：]\s*\S", item):  # "1. 宽带安装费：新装免收": a key and its value state something
        return False
    return not re.search(r"\d", item) and len(_WORD.findall(item)) <= HEAD_MAX_WORDS and len(_CJK.findall(item)) <= HEAD_MAX_CJK


_META_KEY = re.compile(r"^\W*(?:(?:your\s+)?(?:question|query|request|topic)|问题|查询内容|查询|咨询内容|您的问题)\W*$", re.IGNORECASE)


def _keyed(text: str, s: int, e: int, refusals: list[tuple[int, int]]) -> bool:
    """A part of a "key: value" line that states nothing: the value of a key naming the question ("**Question:** Q3
    churn rate", 问题：...), or the key of a value the reply refuses ("- 收费标准：未说明")."""
    start, end = text.rfind("\n", 0, s) + 1, text.find("\n", e)
    end = len(text) if end < 0 else end
    colon = re.search(r"[:：]", text[start:end])
    if colon is None:
        return False
    at = start + colon.start()
    if s >= at:
        return bool(_META_KEY.match(text[start:at]))
    return e <= at and any(rs < end and at < re_ for rs, re_ in refusals) and len(_KEY_LINE.findall(text)) >= 2
    # (a template of key lines: "可以：资料确认支持线上办理，但没有写明..." heading a one-line reply answers)


def content_clauses(text: str, refusals: list[tuple[int, int]]) -> list[str]:
    """The clauses of a normalised ``text`` outside every refusal span and its background that state
    something (a partial answer)."""
    background = (_background(text) + _depends(text)) if refusals else []
    found = [text[s:e] for s, e in _clauses(text)
             if not any(rs < e and s < re_ for rs, re_ in refusals + background) and is_content(text[s:e])
             and not (_REFERRAL.search(text[s:e]) or _PUBLISHED.search(text[s:e]) or _SEARCHED.search(text[s:e])
                      or COURTESY.match(text[s:e])
                      or _FRAGMENT.match(text[s:e]) or FILLER.match(text[s:e]) or _label(text, s, e)
                      or _template(text[s:e]) or _layout_line(text, s, e) or _keyed(text, s, e, refusals))]
    if found and refusals and any(not _SCOPED.match(text, sentence_start(text, m.start()), m.start())
                                  for m in _CONCLUSIVE.finditer(text)):
        return []  # "... so I can't answer your question": what else it says is background
    if found and _CLARIFY.search(text) and not any(re.search(r"\d", c) for c in found):
        return []  # a question back to the user, with what it needs to know: no answer yet
    return found or (_answer_head(text, refusals, background) if refusals else [])


def _depends(text: str) -> list[tuple[int, int]]:
    """The sentences of a normalised ``text`` that say what the answer depends on, and no more: the first clause is
    :data:`_NOT_ASSERTED` ("It depends on several factors, including your lease type and the building"; 这个要看您所在
    城市的政策、缴存年限…), no digit and no turn ("..., but most plans include it") is in them. The clauses after it
    list the factors, not facts; a clause before it may be an answer (首月免费，具体要看您办理的套餐)."""
    out = []
    for s, e in _clauses(text, _SENTENCE):
        first = _clauses(text[s:e])[:1]
        if first and _NOT_ASSERTED.search(text[s + first[0][0]:s + first[0][1]]) and not re.search(r"\d", text[s:e]) \
                and not CONTRAST.search(text[s:e]):
            out.append((s, e))
    return out


def service_talk(clause: str) -> bool:
    """Whether a (normalised) clause is the service or the speaker talking, not the world: a referral, a contact, a
    promise to get back, a ticket number, thanks, an apology, the question restated (what :func:`content_clauses`
    never counts, whatever else it holds: "please call 0800 555 0199", 工单号：KD20240611083)."""
    return bool(_META.search(clause) or _SPEAKER_META.search(clause) or _REFERRAL.search(clause)
                or deferral_spans(clause))
