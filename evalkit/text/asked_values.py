"""Whether a reply gives the value its question asks for: the question half of abstention.

What it is for: a reply read without its question cannot tell a referral from an answer. "Please call the
housing fund hotline on 12329" answers "What number do I call?" and declines "How much can I borrow?"; "It
depends on your city and how long you have paid in" answers "What decides the loan limit?" and declines "What
is the maximum loan?". A question that asks for a value (an amount, a count, a duration, a time or a date:
``data/asked_values.txt``) names what an answer must state. :func:`unanswered` is true when the question asks
for a value and no clause of the reply but the service talking (:func:`evalkit.text.partial_answers.service_talk`:
a referral, a contact, a promise to get back, a courtesy, the speaker) states a number, a duration, a time, a
date or a code, and no clause with content (:func:`evalkit.text.partial_answers.content_clauses`) states a
negation ("There is no fee", 不收费: a value of its own). A phone number or a ticket number in a referral or a
promise to call back is no value: it is the service talking.

It decides nothing alone: a reply that gives a value in words ("Same as for adults", 当场办结) is unanswered
here, and so is a weekday ("every Tuesday", 每周二). :func:`evalkit.models.abstention.detect` reads an unanswered plain answer with the learned stage at its own
threshold, chosen by cross-validation like the others (benchmarks/abstention_train.py).
"""
from __future__ import annotations

import re
from functools import lru_cache

from evalkit.text.lexicon import negation_cues
from evalkit.text.partial_answers import content_clauses, service_talk
from evalkit.text.refusal_rules import clause_spans, normalise
from evalkit.text.values import extract_atoms
from evalkit.text.wordlists import alternation

__all__ = ["VALUE_KINDS", "asks_value", "states_value", "unanswered"]

VALUE_KINDS = frozenset({"number", "duration", "time", "date", "code"})
"""The atoms (:func:`evalkit.text.values.extract_atoms`) that state a value."""

_OPENERS = set(":：(（[【#")

_ASKS = re.compile(alternation("asked_values", regex=True), re.IGNORECASE)  # data/asked_values.txt


def asks_value(question: str) -> bool:
    """Whether ``question`` asks for an amount, a count, a duration, a time or a date."""
    return bool(_ASKS.search(normalise(question)))


@lru_cache(maxsize=65536)
def states_value(reply: str) -> bool:
    """Whether ``reply`` states a value (:data:`VALUE_KINDS`) in a clause that is not the service talking
    (:func:`evalkit.text.partial_answers.service_talk`), or a negation in a clause with content
    (:func:`evalkit.text.partial_answers.content_clauses`: "There is no fee", not "no results")."""
    text = normalise(reply)  # same length: a span of it is the same span of the reply
    talking, last = False, 0
    for start, end in clause_spans(text):
        # what a label or a bracket of the service's talk holds (工单号：KD2024..., "a ticket (#TK-90317)") is its too
        opens = text[last:start].strip()
        talking = service_talk(text[start:end]) or (talking and bool(opens) and set(opens) <= _OPENERS)
        if not talking and any(a.kind in VALUE_KINDS for a in extract_atoms(reply[start:end], entities=False)):
            return True
        last = end
    return any(negation_cues(clause) for clause in content_clauses(text, []))


def unanswered(question: str | None, reply: str) -> bool:
    """Whether ``question`` asks for a value and ``reply`` states none (see the module docstring); False without a
    question."""
    return bool(question) and asks_value(str(question)) and not states_value(reply)
