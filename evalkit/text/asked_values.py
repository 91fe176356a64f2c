"""Whether a reply gives what its question asks for: the question half of abstention.

What it is for: a reply read without its question cannot tell a referral from an answer. "Please call the
housing fund hotline on 12329" answers "What number do I call?" and declines "How much can I borrow?"; "It
depends on your city and how long you have paid in" answers "What decides the loan limit?" and declines "What
is the maximum loan?"; "I've logged ticket #TK-90317 and the team will email you" answers nothing, unless the
question asked whom to contact. :func:`unanswered` is true in two cases:

- the question asks for a value (an amount, a count, a duration, a time or a date: ``data/asked_values.txt``)
  and no clause of the reply but the service talking (:func:`evalkit.text.partial_answers.service_talk`: a
  referral, a contact, a ticket logged, a promise to get back, thanks, the speaker) states a number, a duration,
  a time, a date or a code, and no clause with content
  (:func:`evalkit.text.partial_answers.content_clauses`) states a negation ("There is no fee", 不收费: a value
  of its own). A phone number or a ticket number in the service's talk is no value;
- the reply :func:`says_nothing` but the service talking.

Neither when the question asks for a way, a place, a person or a contact (``data/asked_ways.txt``: how do I,
where, who, 怎么, 哪里, 找谁, 电话; "客服电话是多少？" asks for a number that is a contact): a referral can answer it.

It decides nothing alone: a reply that gives a value in words ("Same as for adults", 当场办结) or a weekday
("every Tuesday", 每周二) is unanswered here. :func:`evalkit.models.abstention.detect` reads an unanswered plain
answer with the learned stage at its own threshold, chosen by cross-validation like the others
(benchmarks/abstention_train.py), never below even odds.
"""
from __future__ import annotations

import re
from functools import lru_cache

from evalkit.text.lexicon import negation_cues
from evalkit.text.partial_answers import content_clauses, service_talk
from evalkit.text.refusal_rules import clause_spans, normalise
from evalkit.text.values import extract_atoms
from evalkit.text.wordlists import alternation

__all__ = ["VALUE_KINDS", "asks_value", "asks_way", "says_nothing", "states_value", "unanswered"]

VALUE_KINDS = frozenset({"number", "duration", "time", "date", "code"})
"""The atoms (:func:`evalkit.text.values.extract_atoms`) that state a value."""

_OPENERS = set(":：(（[【#")
_BRACKETS, _CLOSERS = set("(（[【"), set(")）]】")

_ASKS = re.compile(alternation("asked_values", regex=True), re.IGNORECASE)  # data/asked_values.txt
_WAYS = re.compile(alternation("asked_ways", regex=True), re.IGNORECASE)  # data/asked_ways.txt


def asks_value(question: str) -> bool:
    """Whether ``question`` asks for an amount, a count, a duration, a time or a date."""
    return bool(_ASKS.search(normalise(question)))


def asks_way(question: str) -> bool:
    """Whether ``question`` asks for a way, a place, a person or a contact (what a referral can answer)."""
    return bool(_WAYS.search(normalise(question)))


@lru_cache(maxsize=65536)
def says_nothing(reply: str) -> bool:
    """Whether ``reply`` is the service talking and nothing else: a clause of it is
    (:func:`evalkit.text.partial_answers.service_talk`: a referral, a ticket logged, a promise to call back), no
    clause has content and it states no value ("已为您提交工单，工单号：KD2024…，客服专员将在24小时内与您联系")."""
    if _content(reply) or states_value(reply):
        return False
    text = normalise(reply)
    return any(service_talk(text[start:end]) for start, end in clause_spans(text))


@lru_cache(maxsize=65536)
def states_value(reply: str) -> bool:
    """Whether ``reply`` states a value (:data:`VALUE_KINDS`) in a clause that is not the service talking
    (:func:`evalkit.text.partial_answers.service_talk`), or a negation in a clause with content
    (:func:`evalkit.text.partial_answers.content_clauses`: "There is no fee", not "no results")."""
    text = normalise(reply)  # same length: a span of it is the same span of the reply
    talking, bracket, last = False, False, 0
    for start, end in clause_spans(text):
        # what a label or a bracket of the service's talk holds (工单号：KD2024..., "a ticket (ref. TK-90317)") is its too
        between = text[last:start]
        bracket = (bracket or (talking and bool(set(between) & _BRACKETS))) and not set(between) & _CLOSERS
        talking = service_talk(text[start:end]) or bracket or (talking and bool(between.strip())
                                                                and set(between.strip()) <= _OPENERS)
        if not talking and any(a.kind in VALUE_KINDS for a in extract_atoms(reply[start:end], entities=False)):
            return True
        last = end
    return any(negation_cues(clause) for clause in _content(reply))


@lru_cache(maxsize=65536)
def _content(reply: str) -> tuple[str, ...]:
    """The clauses of ``reply`` with content (:func:`evalkit.text.partial_answers.content_clauses`), read once for
    :func:`states_value` and :func:`says_nothing`."""
    return tuple(content_clauses(normalise(reply), []))


def unanswered(question: str | None, reply: str) -> bool:
    """Whether ``reply`` does not give what ``question`` asks for: the question asks for a value and the reply states
    none, or the reply :func:`says_nothing` but the service talking and the question asks for no way, place, person
    or contact (see the module docstring); False without a question."""
    if not question or asks_way(question):  # "客服电话是多少？": the value asked for is a contact
        return False
    return (asks_value(question) and not states_value(reply)) or says_nothing(reply)
