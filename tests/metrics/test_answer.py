"""Answer metrics: correctness for Chinese and English, claims, citations, and the NaN policy."""
from __future__ import annotations

import pytest

from evalkit.metrics.answer import aggregate_answers, exact_match, normalise_answer, score_answer, token_f1
from evalkit.nodes.generate import is_abstention, parse_citations


def judged(*verdicts: str, error: str | None = None) -> dict:
    return {"claims": [{"claim": f"c{i}", "verdict": v, "reason": ""} for i, v in enumerate(verdicts)],
            "error": error}


@pytest.mark.parametrize("a,b", [
    ("5,000元", "5000 元"),
    ("CNY 30,000 per month.", "cny 30000 per month"),
    ("ＬＸ－２００", "lx-200"),  # full-width folds to half-width
    ("每晚不超过 750 元 [fin-004]", "每晚不超过750元。"),  # citations and punctuation do not count
])
def test_exact_match_normalises(a, b):
    assert exact_match(a, b) == 1.0


def test_token_f1_uses_characters_for_chinese_and_words_for_english():
    assert normalise_answer("上限为5000元") == "上 限 为 5000 元"
    # answer 上限5000元 (4 tokens), reference 5000元 (2 tokens): 2 common -> P 0.5, R 1.0
    assert token_f1("上限5000元", "5000元") == pytest.approx(2 * 0.5 * 1.0 / 1.5)
    assert token_f1("the limit is 30000", "30000") == pytest.approx(2 * 0.25 / 1.25)
    assert token_f1("", "") == 1.0 and token_f1("x", "") == 0.0


def test_faithfulness_counts_not_checkable_claims_as_neither():
    m = score_answer(answerable=True, answered=True, abstained=False,
                     judgement=judged("supported", "unsupported", "not_checkable"), answer="a", reference="a",
                     cited_docs=["d1", "d2"], invalid_citations=1, gold=["d1"])
    assert m["faithfulness"] == 0.5 and m["hallucinated"] == 1.0
    assert (m["claims"], m["claims_supported"], m["claims_unsupported"], m["claims_not_checkable"]) == (3, 1, 1, 1)
    assert m["cited_gold_precision"] == 0.5 and m["invalid_citation_rate"] == pytest.approx(1 / 3)
    assert m["answer_em"] == 1.0


def test_three_kinds_of_undefined_stay_distinct():
    no_claims = score_answer(answerable=True, answered=True, abstained=False, judgement=judged("not_checkable"),
                             answer="ok", reference=None, cited_docs=[], invalid_citations=0, gold=["d1"])
    abstained = score_answer(answerable=True, answered=False, abstained=True, judgement=None,
                             answer="无法回答", reference="x", cited_docs=[], invalid_citations=0, gold=["d1"])
    failed = score_answer(answerable=True, answered=True, abstained=False, judgement=judged(error="timeout"),
                          answer="x", reference=None, cited_docs=[], invalid_citations=0, gold=["d1"])
    for m in (no_claims, abstained, failed):
        assert m["faithfulness"] is None and m["hallucinated"] is None
    assert no_claims["judge_failed"] == 0 and failed["judge_failed"] == 1
    assert abstained["abstained"] == 1 and abstained["answered"] == 0
    agg = aggregate_answers([(True, no_claims), (True, abstained), (True, failed)])
    assert "faithfulness" not in agg and "hallucination_rate" not in agg  # nothing defined: no made-up 0 or 1
    assert agg["n_no_checkable_claims"] == 1 and agg["n_judge_failed"] == 1 and agg["n_abstained"] == 1
    assert agg["abstention_rate"] == pytest.approx(1 / 3)


def test_answer_correctness_is_the_judges_verdict_and_a_failure_is_counted_not_scored():
    def score(correctness, answered=True):
        return score_answer(answerable=True, answered=answered, abstained=not answered, judgement=judged("supported"),
                            answer="10 days", reference="10 days", cited_docs=[], invalid_citations=0, gold=["d1"],
                            correctness=correctness)

    right, wrong = score({"verdict": "correct"}), score({"verdict": "incorrect"})
    failed, not_asked = score({"verdict": None, "reason": "timeout"}), score(None)
    abstained = score({"verdict": "incorrect"}, answered=False)
    assert (right["answer_correctness"], wrong["answer_correctness"]) == (1.0, 0.0)
    assert failed["answer_correctness"] is None and failed["correctness_failed"] == 1
    assert "answer_correctness" not in not_asked and "answer_correctness" not in abstained
    agg = aggregate_answers([(True, m) for m in (right, wrong, failed, not_asked, abstained)])
    assert agg["answer_correctness"] == 0.5 and agg["n_correctness_failed"] == 1
    assert "n_correctness_failed" not in aggregate_answers([(True, not_asked)])  # no judge asked: no count


def test_answering_an_unanswerable_question_is_counted_under_its_own_name():
    answered = score_answer(answerable=False, answered=True, abstained=False, judgement=judged("supported"),
                            answer="x", reference=None, cited_docs=[], invalid_citations=0, gold=[])
    declined = score_answer(answerable=False, answered=False, abstained=True, judgement=None,
                            answer="无法回答", reference=None, cited_docs=[], invalid_citations=0, gold=[])
    # one name, one number: the per-query "hallucinated" is the answerable-question one, so its mean in any
    # view is hallucination_rate; answering an unanswerable question is unanswerable_hallucination_rate
    assert answered["hallucinated"] is None and declined["hallucinated"] is None
    assert answered["answered"] == 1.0 and declined["answered"] == 0.0
    agg = aggregate_answers([(False, answered), (False, declined)])
    assert agg["correct_abstention_rate"] == 0.5 and agg["unanswerable_hallucination_rate"] == 0.5
    assert "hallucination_rate" not in agg  # the answerable-question rate has no queries here


def test_variant_aggregates():
    rows = [
        (True, score_answer(answerable=True, answered=True, abstained=False, judgement=judged("supported", "supported"),
                            answer="a", reference="a", cited_docs=["g"], invalid_citations=0, gold=["g"])),
        (True, score_answer(answerable=True, answered=True, abstained=False,
                            judgement=judged("supported", "unsupported"), answer="b", reference="a",
                            cited_docs=["x"], invalid_citations=1, gold=["g"])),
    ]
    agg = aggregate_answers(rows)
    assert agg["faithfulness"] == pytest.approx(0.75)  # mean of 1.0 and 0.5
    assert agg["hallucination_rate"] == 0.5
    assert agg["claim_hallucination_rate"] == 0.25  # 1 unsupported of 4 checkable, pooled
    assert agg["cited_gold_precision"] == 0.5 and agg["invalid_citation_rate"] == pytest.approx(1 / 3)
    assert agg["answer_em"] == 0.5 and agg["n_answered"] == 2


def test_citations_parse_valid_and_invalid_ids():
    shown = [("fin-004#0", "fin-004"), ("fin-013", "fin-013"), ("fin-004#1", "fin-004")]
    valid, invalid = parse_citations("Limit is 750 [fin-004]; see 【fin-013】 and [hr-999] [fin-004#1].", shown)
    assert valid == ["fin-004", "fin-013"] and invalid == ["hr-999"]
    # numbers name the passages as shown; [4] was not shown
    assert parse_citations("A [1][2]. B [3, 4].", shown) == (["fin-004", "fin-013"], ["4"])


@pytest.mark.parametrize("text,expected", [
    ("根据现有资料无法回答。", True),
    ("The knowledge base has no reliable evidence for this question.", True),
    ("The evidence does not mention the Q4 figures.", True),
    ("", True),
    ("每晚住宿上限为750元 [fin-004]。", False),
    ("Managers may spend CNY 30,000 per month [fin-009].", False),
])
def test_abstention_detection(text, expected):
    assert is_abstention(text) is expected


def test_unverified_claims_are_neither_hallucinations_nor_support():
    """Three verdicts kept apart: faithfulness counts unverified claims as not supported, the hallucination
    rate only unsupported ones, and unverified_rate answers with an unverified claim and no unsupported one."""
    def answer(*verdicts):
        return (True, score_answer(answerable=True, answered=True, abstained=False, judgement=judged(*verdicts),
                                   answer="a", reference=None, cited_docs=[], invalid_citations=0, gold=["g"]))
    rows = [answer("supported", "unverified"),        # unverified answer
            answer("unverified", "unsupported"),      # hallucinated (an unsupported claim wins)
            answer("supported", "supported"),         # clean
            answer("not_checkable")]                  # no judged claim: left out of every judged rate
    per = [m for _, m in rows]
    assert [m["hallucinated"] for m in per] == [0.0, 1.0, 0.0, None]
    assert [m["unverified"] for m in per] == [1.0, 0.0, 0.0, None]
    assert [m["faithfulness"] for m in per] == [0.5, 0.0, 1.0, None]
    assert per[0]["claims_unverified"] == 1.0 and per[1]["claims_unverified"] == 1.0
    agg = aggregate_answers(rows)
    assert agg["hallucination_rate"] == pytest.approx(1 / 3)  # 1 of the 3 answers with a judged claim
    assert agg["unverified_rate"] == pytest.approx(1 / 3)
    assert agg["faithfulness"] == pytest.approx(0.5)          # (0.5 + 0 + 1) / 3
    assert agg["claim_hallucination_rate"] == pytest.approx(1 / 6)  # 1 unsupported of 6 judged claims
    assert agg["n_no_checkable_claims"] == 1.0
