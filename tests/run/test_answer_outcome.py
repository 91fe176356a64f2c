"""How a graph's final state becomes the Answer that is scored: abstained, answered, failed."""
from __future__ import annotations

from types import SimpleNamespace

from evalkit.graph.schema import ABSTENTION, ANSWER, OUTCOME
from evalkit.metrics.answer import score_answer
from evalkit.run.query import _state_answer

CTX = SimpleNamespace(abstention=None, passages=None)
REFUSAL = {ANSWER: "I don't know.", ABSTENTION: {"abstained": True, "reason": "refusal", "matched": "I don't know"},
           OUTCOME: "abstained"}


def _scores(answer, answerable):
    return score_answer(answerable=answerable, answered=answer.answered, abstained=answer.abstained, judgement=None,
                        answer=answer.text, reference=None, cited_docs=[], invalid_citations=0, gold=["d1"])


def test_a_refusal_is_an_abstention():
    a = _state_answer(CTX, dict(REFUSAL), failed=False)
    assert (a.abstained, a.answered) == (True, False)
    assert _scores(a, answerable=False)["abstained"] == 1.0


def test_a_failed_query_is_neither_answered_nor_abstained_whatever_its_answer_says():
    # a node after generate failed: the refusal it wrote must not count as a correct abstention
    a = _state_answer(CTX, dict(REFUSAL), failed=True)
    assert (a.failed, a.abstained, a.answered) == (True, False, False)
    s = _scores(a, answerable=False)
    # unanswerable: "hallucinated" is the answerable-question figure (undefined here); "answered" 0 says it all
    assert (s["abstained"], s["answered"], s["hallucinated"]) == (0.0, 0.0, None)


def test_a_failed_query_without_an_answer_is_not_an_abstention():
    a = _state_answer(CTX, {}, failed=True)
    assert (a.abstained, a.answered) == (False, False)
