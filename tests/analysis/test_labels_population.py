"""The judge-corrected estimate says which answers it is about: answered queries with no judged
claim are outside its population, counted, and named in a note (issue: they silently dropped out)."""
from __future__ import annotations

from evalkit.analysis.labels import Label, answer_sha, corrected_estimates, population
from evalkit.records import QueryResult


def result(qid: str, answer: str, hallucinated: float | None, faithfulness: float | None) -> QueryResult:
    return QueryResult(qid, f"question {qid}", ["d1"], [], [], {"hallucinated": hallucinated,
                       "faithfulness": faithfulness, "answered": 1.0}, [], type="single",
                       generation={"answered": True, "answer": answer})


def test_answers_with_no_judged_claim_are_outside_the_population_and_said_to_be():
    results = [result("q1", "a1", 1.0, 0.5), result("q2", "a2", 0.0, 1.0), result("q3", "a3", 0.0, 1.0),
               result("q4", "Yes.", None, None), result("q5", "Hope this helps.", None, None)]
    assert [r.query_id for r in population(results)] == ["q1", "q2", "q3"]
    labels = [Label(r.query_id, "v", answer_sha(r.question, r.generation["answer"]), "single", hall, faith)
              for r, hall, faith in ((results[0], True, 0.0), (results[1], False, 1.0))]
    c = corrected_estimates(results, labels, "v")
    assert c is not None
    note = next(n for n in c.notes if n.startswith("population:"))
    assert "the 3 answered queries with a judged claim" in note and "2 answered one(s) with no judged claim" in note
    assert c.estimates["hallucination_rate"].n_total == 3  # the estimate's N is the population, not all 5


def test_no_note_when_every_answer_was_judged():
    results = [result("q1", "a1", 1.0, 0.5), result("q2", "a2", 0.0, 1.0)]
    labels = [Label("q1", "v", answer_sha("question q1", "a1"), "single", True, 0.0)]
    c = corrected_estimates(results, labels, "v")
    assert c is not None and not any(n.startswith("population:") for n in c.notes)
