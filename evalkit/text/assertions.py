"""Sentences that assert nothing about the world: what a claim judge should not check.

What it is for: a refusal the abstention detector missed, or the part of an answer that talks to the reader, must
not be judged as a claim about the world. :func:`non_assertion` says what such a sentence is (a question or a
request to the reader, a referral, a lead-in, the speaker about itself, what the speaker or the sources lack), and
:func:`asserted_part` keeps the part of a sentence that turns ("..., but ...") which does assert. It is the
abstention detector's notion of background (:mod:`evalkit.text.partial_answers`), read one sentence at a time.
"""
from __future__ import annotations

import re

from evalkit.text.lexicon import COURTESY
from evalkit.text.partial_answers import CONTRAST, FILLER, QUESTION, content_clauses, is_content
from evalkit.text.refusal_rules import OFFER, _clauses, normalise, refusal_spans

__all__ = ["CONDITION", "asserted_part", "non_assertion"]


# --------------------------------------------------------------------------- sentences that assert nothing
# What a claim judge should not check: a sentence that asserts nothing about the world. A question to the reader
# ("Are you a current undergraduate?"), a request to the reader ("Please upload a copy of your passport", 请提供
# 订单号), a referral ("The permit office can give you the specific reason"), a lead-in to a list ("What they do
# say:"), the speaker about itself ("I can't access personal account information", 我这边查不到), what the speaker
# or the sources lack ("The handbook doesn't cover interns"), and a sentence whose clauses are such, or a topic, a
# condition or a filler. It is the abstention detector's notion of background, read one sentence at a time: a
# refusal the detector missed is then no hallucination. "We" is a company stating its policy ("We don't refund
# after 30 days"), "you can ..." a statement about the world, and an offer ("Would you like a double-depth plot?")
# presupposes what it offers: all three are checked.
_REQUEST = re.compile(
    r"^\W*(?:(?:and|so|but|also|meanwhile|in\s+the\s+meantime|otherwise|alternatively|then)\W+)?(?:"
    r"please|kindly|(?:could|can|would|will)\s+you|(?:do\s+)?let\s+me\s+know|feel\s+free|if\s+you\s+(?:can|could)\s+"
    r"(?:share|send|provide|upload|paste|tell|forward|confirm)|(?:i|we)(?:'d|\s+would)?\s+(?:recommend|suggest|advise)|"
    r"you\s+(?:may|might)\s+(?:want|wish)\s+to|(?:i|we)(?:'ll|\s+will)?\s+need\s+(?:you\s+to|your|a\s+copy|the\s+\w+\s+(?:number|id))|"
    r"before\s+i\s+can\b)|"
    r"^\W*(?:另外|同时|或者|此外|然后|所以)?[，,]?\s*(?:请|麻烦|劳烦|烦请|建议(?:您|你)|您可以(?:先)?(?:联系|咨询|拨打|致电|提供|上传|告诉)|"
    r"可以(?:先)?(?:联系|咨询)|如需|如有需要)", re.IGNORECASE)
_SPEAKER = re.compile(
    r"^\W*(?:(?:but|and|so|sorry|unfortunately|apologies|honestly|to\s+be\s+honest|for\s+now|right\s+now|at\s+the\s+moment)\W+)?"
    r"i(?!'m\s+afraid\b)(?:'m|'ve|'d|'ll)?\b(?![^.;,]{0,16}\b(?:believe|think|recall|understand|expect|know\s+that|can\s+confirm|"
    r"can\s+tell\s+you)\b)|"
    r"^\W*(?:(?:抱歉|不好意思|很遗憾|对不起|目前|暂时)\W*)?我(?!们)(?!(?:认为|觉得|相信|记得|确认|可以确认|能确认|可以告诉))",
    re.IGNORECASE)



# a clause that names what it is about, and asserts nothing: "As for the deposit", 合约解除和违约金的问题, 关于退费,
# an embedded question (违约金是多少, "whether it is refundable")
_TOPIC = re.compile(r"^\W*(?:(?:but|and)\s+)?(?:as\s+(?:for|to)|regarding|concerning|on\s+the\s+question\s+of)\b|"
                    r"^\W*(?:但|不过|而)?(?:关于|至于|对于)|的问题\W*$|^[^，,]{0,20}?(?:怎么|怎样|如何|多少|是否|能不能|可不可以|"
                    r"有没有|要不要|会不会|能否|什么|哪)[^，,]{0,10}$", re.IGNORECASE)
# a condition states no fact ("If that doesn't help", 知道校区的话): with a clause that asserts nothing, nothing is
# asserted; a negation inside one is no polarity claim (evalkit.judges.polarity)
CONDITION = re.compile(r"^\W*(?:(?:and|but|so|or)\s+)?(?:if|unless|when|whenever|in\s+case|once|provided|as\s+long\s+as)\b|"
                       r"^\W*(?:而且|但|所以|或者)?(?:如果|如|若|假如|要是|倘若|万一|除非|一旦)|的话\W*$", re.IGNORECASE)
# a referral: who can help, with no claim of what they will say ("The permit office can give you the specific reason",
# "platform support is the best place to ask", 这个得问人事负责人); a value or a name in it keeps it checked
_REFER = re.compile(
    r"\b(?:can|could|will|would|should|may|might)\s+(?:be\s+(?:able|happy|glad)\s+to\s+)?(?:help(?:\s+you)?|tell\s+you|"
    r"advise\s+you|answer\s+(?:that|this|it|your)|point\s+you|sort\s+(?:it|this|you)\s+out|"
    r"give\s+you\s+(?:the\s+|a\s+)?(?:specific|exact|precise|right|definitive|full|current))\b|"
    r"\b(?:best|right)\s+(?:place|people|person|team)\s+to\s+(?:ask|contact|check)|\bthe\s+(?:one|ones|people|person)\s+to\s+ask\b|"
    r"\bwould\s+know\b|^[^，,]{0,8}?(?:得|要|需要|只能|最好)(?:去|再)?(?:问|咨询|联系|找)", re.IGNORECASE)
# a clause that goes on with the one before ("..., or look at your contract", 或者翻一下合约)
_GOES_ON = re.compile(r"^\W*(?:or|and|then|also)\b|^\W*(?:或者|或|还可以|也可以|然后|再)", re.IGNORECASE)


def _kind(text: str) -> str | None:
    """What a (normalised) sentence or clause that asserts nothing is, or None."""
    if QUESTION.fullmatch(text):
        return "a question to the reader"
    if _REQUEST.search(text):
        return "a request to the reader"
    if _REFER.search(text):
        return "a referral"
    if re.search(r"[:：]\W*$", text):  # "Quick summary of what they do say:", 目前资料能提供的帮助有：
        return "a lead-in to what follows"
    if _SPEAKER.search(text):
        return "about the speaker"
    spans = refusal_spans(text, compositional=False)  # a listed wording: "提醒不要在无水时启动" has a source, a
    if spans and not content_clauses(text, spans):      # verb of saying and a lack word, and is a rule of the world
        return "about what the speaker or the sources lack"
    return None


def _asserts(clause: str) -> bool:
    """Whether a (normalised) clause asserts something: it is none of :func:`_kind`'s and has content (what a source
    lacks is no assertion: :func:`is_content`)."""
    return bool(clause) and _kind(clause) is None and is_content(clause)


def _turn(text: str) -> tuple[str, str] | None:
    """A (normalised) sentence's two sides of its first turn ("..., but ...", "，不过..."), or None when it does not turn."""
    turn = CONTRAST.search(text)
    return (text[:turn.start()].strip(), text[turn.end():].strip(" ,，")) if turn else None


def non_assertion(sentence: str) -> str | None:
    """What a sentence that asserts nothing about the world is ("a question to the reader", "a request to the
    reader", "a referral", "a lead-in to what follows", "about the speaker", "about what the speaker or the
    sources lack"), or None for an assertion. A sentence that turns ("..., but ...", "，不过...") to a clause that
    asserts is an assertion, whatever it opens with. A sentence of several clauses asserts nothing when none of its
    clauses does: a topic ("合约解除和违约金的问题，建议您去营业厅问"), a request and what goes on with it ("..., or
    look at the contract you signed")."""
    text = normalise(sentence).strip()
    if not text or OFFER.search(text):  # "Would you like a double-depth plot?" presupposes what it offers: checked
        return None
    whole = _kind(text)
    turn = _turn(text)  # "I couldn't find the history, but the policy does not allow it": the turn asserts
    if whole is not None and not (turn and _asserts(turn[1])):
        return whole
    kinds: list[str] = []
    for s, e in _clauses(text):
        clause = text[s:e].strip()
        kind = _kind(clause) or ("topic" if _TOPIC.search(clause) or CONDITION.search(clause) or FILLER.match(clause)
                                 or COURTESY.match(clause) else None)
        if kind is None and kinds and kinds[-1] != "topic" and _GOES_ON.match(clause):
            kind = kinds[-1]  # "..., or look at your contract": the request goes on
        if kind is None:
            return None
        kinds.append(kind)
    return next((k for k in kinds if k != "topic"), None)


def asserted_part(sentence: str) -> str:
    """The part of a sentence that turns ("..., but ...", "，不过...") that asserts, when the other part asserts nothing
    (the speaker, what the sources lack, a referral): "I couldn't find the 2024 figure, but the 2023 revenue was $5M"
    asserts "the 2023 revenue was $5M", whose values are checked, not the 2024 the speaker could not find.
    Otherwise the sentence itself."""
    text = normalise(sentence).strip()
    turn = _turn(text)
    if turn is None or OFFER.search(text):
        return sentence
    head, rest = turn
    head_asserts = _asserts(head)
    if head_asserts == _asserts(rest):
        return sentence
    said, other = (head, rest) if head_asserts else (rest, head)
    return said if other and _kind(other) is not None else sentence
