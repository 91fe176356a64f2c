"""A negator before a word that negates by meaning (judge v28): "is not waived" says the fee is charged,
"not exempt", "not without", "not free of charge", 不免收, 不能免交. Before v28 both words counted as cues,
so such a clause read as negated like the plain "waived" it contradicts, and a claim saying the opposite
passed as supported. Each wrong wording must now be flagged; a right one beside it must not be."""
from __future__ import annotations

import pytest
from judging import verdicts_by_id as verdicts

from evalkit.text.lexicon import negated_before, negation_cues


@pytest.mark.parametrize("text, cues", [
    ("The reinstatement fee is not waived for returning members.", []),
    ("Seniors aren't exempt from the booking charge.", []),
    ("Refunds are never entirely free of charge.", []),
    ("Cancellations are not without cost after noon.", []),
    ("会员不免收押金。", []),
    ("学生不能免交教材费。", []),
    # a negator that is not right before the word keeps both cues (a miss left: "can't enter without a ticket")
    ("You can't enter the hall without a wristband.", ["can't", "without"]),
    # alone, each still negates
    ("The reinstatement fee is waived for returning members.", ["waived"]),
    ("Seniors are not charged a booking fee.", ["not"]),
    ("会员免收押金。", ["免收"]),
])
def test_a_negator_before_a_negative_word_leaves_the_clause_plain(text, cues):
    assert negation_cues(text) == cues


def test_a_negator_right_before_a_phrase_negates_it():
    text = "会员不免收押金，散客免收押金。"
    assert negated_before(text, text.find("免收")) and not negated_before(text, text.rfind("免收"))


GYM = {"gym-fees": "Returning members pay a $30 reinstatement fee. The reinstatement fee is not waived, "
                   "even for members who left less than a month ago.",
       "gym-seniors": "Members aged 65 or over are exempt from the locker charge."}
GYM_Q = "I left the gym three weeks ago and I'm 67. What do I pay to rejoin?"
LIMIT = "the claim adds the user's own facts (At 67), so it restates too little of the evidence clause to flip"


@pytest.mark.parametrize("answer, verdict", [
    # v27 read "isn't waived" against "is not waived" as a flip: unsupported
    ("You'll pay the $30 reinstatement fee; it isn't waived even though you left only three weeks ago.", "supported"),
    ("The reinstatement fee is waived.", "unsupported"),
    # the claim's clause matches the evidence's "even for members who left less than a month ago" best, which has
    # no "not" to compare with: unverified (v27: supported)
    ("The $30 reinstatement fee is waived because you left less than a month ago.", "unverified"),
    ("At 67 you are exempt from the locker charge.", "supported"),
    ("Members aged 65 or over are not exempt from the locker charge.", "unsupported"),  # v27: supported
    pytest.param("At 67 you are not exempt from the locker charge.", "unsupported",
                 marks=pytest.mark.xfail(strict=True, reason=LIMIT)),
])
def test_waived_and_exempt_against_their_negation(judge, answer, verdict):
    got = verdicts(judge, GYM_Q, answer, GYM)
    assert next(v for v in ("unsupported", "unverified", "supported") if v in got) == verdict, got


CLINIC = {"fee-rules": "持本市社保卡就诊的六十五岁以上老人免收挂号费。", "fee-rules-2": "外地参保人员不能免交检查费。"}
CLINIC_Q = "我七十岁，有本市社保卡，看病要交哪些费用？外地参保的呢？"


@pytest.mark.parametrize("answer, verdict", [
    ("您七十岁、持本市社保卡，挂号费免收。", "supported"),
    ("持本市社保卡的六十五岁以上老人挂号费不免收。", "unsupported"),  # v27: supported
    ("外地参保人员检查费需要全额自付。", "supported"),  # v27: unsupported, a flip of 不能免交
    ("外地参保人员可以免交检查费。", "unsupported"),  # v27: supported
    pytest.param("您七十岁、持本市社保卡，但挂号费不免收。", "unsupported", marks=pytest.mark.xfail(
        strict=True, reason="a clause of one content word (但挂号费不免收) restates too little to flip")),
])
def test_free_of_a_charge_against_its_negation_in_chinese(judge, answer, verdict):
    got = verdicts(judge, CLINIC_Q, answer, CLINIC)
    assert next(v for v in ("unsupported", "unverified", "supported") if v in got) == verdict, got


def test_a_phrase_written_plainly_elsewhere_still_restates_a_claims_negation(judge):
    # the claim's 免收场地押金 is written twice in the evidence: negated for members, plainly for walk-ins
    evidence = {"venue-rules": "年卡会员不免收场地押金，散客免收场地押金。"}
    assert verdicts(judge, "我想了解一下押金规定？", "散客免收场地押金。", evidence) == ["supported"]
