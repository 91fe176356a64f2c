"""The offline judge on hand-written multi-document answers (tests/judges/data/judge_multidoc.jsonl):
focused regressions for what that set found, and the gate on its held-out split.

Every case here carries its own evidence (no corpus): a question, 1-3 passages and an answer,
as a RAG user would pass them to ``OfflineJudge.judge``.
"""
from __future__ import annotations

import pytest

from evalkit.judges.offline import OfflineJudge


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
