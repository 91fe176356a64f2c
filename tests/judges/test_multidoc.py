"""The offline judge on hand-written multi-document answers (tests/judges/data/judge_multidoc.jsonl):
focused regressions for what that set found, and the gate on its held-out split.

Every case here carries its own evidence (no corpus): a question, 1-3 passages and an answer,
as a RAG user would pass them to ``OfflineJudge.judge``.
"""
from __future__ import annotations

import pytest

from evalkit.judges.offline import OfflineJudge
from evalkit.judges.quantities import find_quantities
from evalkit.judges.values import extract_atoms


@pytest.fixture(scope="module")
def judge():
    return OfflineJudge()


def verdicts(judge, question: str, answer: str, *passages: str) -> list[str]:
    result = judge.judge(question, answer, [(f"doc-{i}", p) for i, p in enumerate(passages, 1)])
    assert result.error is None, result.error
    return [c.verdict for c in result.claims]


# --- negation ------------------------------------------------------------------------------------
DRUG = "截至2024年6月，该药物尚未获得国家药监局批准上市，目前处于三期临床试验阶段。"


def test_shang_wei_is_a_negation_cue(judge):
    # 尚未 ("not yet") was not a cue: an answer that drops it passed
    assert verdicts(judge, "该药物是否已获批上市？", "该药物已于2024年6月获得国家药监局批准上市。", DRUG) == ["unsupported"]
    assert verdicts(judge, "该药物是否已获批上市？", "截至2024年6月，该药物尚未获批上市。", DRUG) == ["supported"]


def test_the_cue_word_is_not_content_of_the_negated_clause(judge):
    # "longer" of "no longer" counted as a content word, so "still supports Android 9" overlapped too little
    ev = "Starting with version 6.0, released on 4 September 2024, the app no longer supports Android 9."
    assert verdicts(judge, "Does the app still support Android 9?", "Yes, version 6.0 still supports Android 9.",
                    ev) == ["unsupported"]


# --- numbers ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("claim, evidence", [
    ("约八成用户表示满意。", "调查显示，80.4% 的受访用户表示满意。"),           # 成 counts tenths
    ("Roughly 38% of revenue came from Europe.", "Europe accounted for 37.6% of revenue."),  # a hedged whole number
    ("一期投资约2千万元。", "一期投资 1,980 万元。"),                          # 千万 as one scale word
])
def test_hedged_and_rescaled_numbers_are_the_same_value(judge, claim, evidence):
    assert verdicts(judge, "?", claim, evidence) == ["supported"]


@pytest.mark.parametrize("claim, evidence", [
    ("约九成用户表示满意。", "调查显示，80.4% 的受访用户表示满意。"),
    ("Roughly 47% of revenue came from Europe.", "Europe accounted for 37.6% of revenue."),
    ("一期投资约3千万元。", "一期投资 1,980 万元。"),
])
def test_a_hedge_does_not_excuse_another_number(judge, claim, evidence):
    assert verdicts(judge, "?", claim, evidence) == ["unsupported"]


def test_and_or_join_a_range_only_when_ascending():
    # "21,000 or 25%" was read as a range of percentages (21,000%)
    assert [(q.value, q.unit) for q in find_quantities("an increase of 21,000 or 25%")] == [(21000, None), (25, "%")]
    assert [q.unit for q in find_quantities("5 or 6 days")] == ["d", "d"]


def test_a_count_of_units_is_not_a_year(judge):
    # 1800 was a year both in "1800 (seconds)" and in "1800 minutes", so the wrong unit passed
    assert [a.kind for a in extract_atoms("session_timeout: 1800 (seconds).") if a.kind != "code"] == ["number"]
    assert [a.kind for a in extract_atoms("after 1800 minutes")] == ["duration"]
    ev = "session_timeout: 1800 (seconds). Users are logged out after this period of inactivity."
    q = "How long is the session timeout?"
    assert verdicts(judge, q, "The session times out after 30 minutes of inactivity.", ev) == ["supported"]
    assert verdicts(judge, q, "The session times out after 1800 minutes of inactivity.", ev) == ["unsupported"]
