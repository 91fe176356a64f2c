"""Sentences that assert nothing about the world (a question or a request to the reader, the speaker about
itself, what the sources lack) are not claims: the offline judge calls them ``not_checkable``, so a refusal the
abstention detector missed is no hallucination. What they may hide is tested too: a value or a name keeps a
sentence checkable, and "we" / "you can" sentences are assertions."""
from __future__ import annotations

import pytest

from evalkit.judges.offline import OfflineJudge
from evalkit.text.assertions import non_assertion
from evalkit.text.values import extract_atoms

EN = [("fees-2026", "Late registration costs $40 and closes on 15 September 2026. Refunds are not given after "
                    "the first week of term. The Registry is open Monday to Friday.")]
ZH = [("fees-zh", "逾期注册费为40元，截止日期为2026年9月15日。开学第一周后不予退费。教务处周一至周五办公。")]


@pytest.mark.parametrize("sentence, kind", [
    ("Are you a first-year or a returning student?", "a question to the reader"),
    ("Which campus are you enrolled at?", "a question to the reader"),
    ("您是全日制还是非全日制学生？", "a question to the reader"),
    ("方便说一下您的学号吗", "a question to the reader"),
    ("Please send me a scan of your enrolment letter.", "a request to the reader"),
    ("Could you paste the exact wording of the clause here.", "a request to the reader"),
    ("Let me know which programme you mean.", "a request to the reader"),
    ("I'd suggest asking your department's student adviser.", "a request to the reader"),
    ("请提供您的订单号和收件人姓名。", "a request to the reader"),
    ("麻烦您把合同第三页拍照发过来。", "a request to the reader"),
    ("建议您直接联系学院教务老师。", "a request to the reader"),
    ("I can't see individual student accounts from here.", "about the speaker"),
    ("Sorry, I wasn't able to locate a policy on that.", "about the speaker"),
    ("I'm only set up to answer questions about course registration.", "about the speaker"),
    ("我这边查不到个人的缴费记录。", "about the speaker"),
    ("I'm sorry, but I can't see individual accounts.", "about the speaker"),  # a turn to the speaker again
    ("I checked the handbook, but it does not mention late fees.", "about the speaker"),  # what a source lacks
    ("I looked through the fee sheet, but it says nothing about parking permits.", "about the speaker"),
    ("抱歉，我无法访问您的账户信息。", "about the speaker"),
    ("The retrieved handbook says nothing about part-time students.", "about what the speaker or the sources lack"),
    ("知识库中没有关于兼职学生的规定。", "about what the speaker or the sources lack"),
    ("The admissions office can give you the exact answer.", "a referral"),
    ("Student Services is the best place to ask about that.", "a referral"),
    ("这个得问你们学院的教务老师。", "a referral"),
    ("Here is what the handbook does cover:", "a lead-in to what follows"),
    ("目前资料能提供的信息有：", "a lead-in to what follows"),
    # several clauses, none of which asserts: a topic, a condition, a filler, a request that goes on
    ("至于能不能分期、要不要担保，资料里都没有提到。", "about what the speaker or the sources lack"),
    ("学费减免的问题，建议您去学院办公室问，或者看一下学生手册。", "a request to the reader"),
    ("If that doesn't solve it, please email your course tutor.", "a request to the reader"),
    ("Good question, but I can't see individual timetables.", "about what the speaker or the sources lack"),
])
def test_what_asserts_nothing(sentence, kind):
    assert non_assertion(sentence) == kind


@pytest.mark.parametrize("sentence", [
    "We don't give refunds after the first week.",          # a company stating its policy
    "You can also cancel online in the student app.",       # a statement about the world
    "Late registration is not possible after September.",
    "I believe the late fee is $40.",                        # a belief is a claim
    "I can confirm that the Registry is open on Mondays.",
    "Unfortunately, I'm afraid the Registry is closed on public holidays.",  # a hedge, then a claim
    "The fee is $40, although the handbook doesn't say whether it is refundable.",  # a partial answer
    "我们开学一周后不退费。",
    "我认为逾期注册费是40元。",
    "逾期注册费为40元，不过资料没有写能否退还。",
    "Would you like a weekend slot at the Riverside office?",  # an offer presupposes what it offers
    "需要我帮您预约周末的加急窗口吗？",
    "说明书提醒不要在无水时启动。",  # a source, a verb of saying and a lack word ("无水"): a rule of the world
    "The Registry can waive the late fee in cases of hardship.",  # what a party can do is a claim ...
    "Our staff will confirm your place by text message.",
    "If you register after the deadline, the fee is not refundable.",  # ... and so is a rule with a condition
    "关于退费，开学一周后不予退还。",  # a topic, then a rule
    "需要我帮您预约周末的加急窗口吗？",  # an offer
    # the speaker, then a turn to an assertion (judge v20: these were "about the speaker", so a flipped rule hid)
    "I couldn't find the history of the rule, but refunds are given at any time.",
    "I can't see your account; however, late registration is free for exchange students.",
    "我这边查不到您的记录，不过开学后随时可以退费。",
])
def test_what_is_an_assertion(sentence):
    assert non_assertion(sentence) is None


def test_a_word_with_a_personal_pronoun_is_no_chinese_name():
    # jieba tags 建议您 as a person's name; it made every "建议您联系..." unsupported (found on set S2, after measuring)
    assert not [a for a in extract_atoms("建议您尽快联系教务处。") if a.kind == "entity"]
    assert [a.text for a in extract_atoms("张伟负责审批。") if a.kind == "entity"] == ["张伟"]


def test_first_person_contractions_are_no_names():
    # "I'll" and "I'm" were read as names the evidence lacks: a refusal's "I'm not able to" was unsupported
    for s in ("Once I have it, I'll go through it with you.", "That's personal, and I’m not permitted to say.",
              "I'd rather not guess.", "If I've understood you, the answer is no."):
        assert not [a for a in extract_atoms(s) if a.kind == "entity"], s


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return OfflineJudge()


@pytest.mark.parametrize("evidence, answer", [
    (EN, "I can't see your payment history from here. Could you tell me which term you registered for? "
         "Please also send a copy of your receipt."),
    (ZH, "抱歉，我这边查不到您的缴费记录。请提供您的学号。您是哪个学院的？"),
])
def test_a_missed_refusal_is_no_hallucination(judge, evidence, answer):
    result = judge.judge("Did my late fee go through?", answer, evidence)
    assert [c.verdict for c in result.claims] == ["not_checkable"] * len(result.claims) and len(result.claims) == 3
    assert all("not a claim about the evidence" in c.reason for c in result.claims)
    assert result.n_checkable == 0  # the answer has no verdict: counted apart, not as supported or unsupported


@pytest.mark.parametrize("evidence, answer, kind", [
    # a value or a name keeps a question or a request checkable: an invented phone number, form or office
    (EN, "Please call 020 7946 0018 to pay the late fee.", "unsupported"),
    (EN, "Have you already filled in form LR-7?", "unsupported"),
    (EN, "Please ask the Student Finance Office to waive the fee.", "unsupported"),
    (EN, "Would you like to join the evening payment clinic instead?", "unsupported"),  # an offer
    (EN, "The Registry can also waive the fee for students on scholarships.", "unverified"),  # what a party can do
    (EN, "The Student Finance Office can give you the exact figure.", "unsupported"),  # a referral to a name
    (ZH, "请拨打4008-123-456办理退费。", "unsupported"),
    # assertions in the same breath are judged as before
    (EN, "You can also pay the late fee online in the student app.", "unsupported"),
    (EN, "We refund the late fee after the first week of term.", "unsupported"),
    (ZH, "开学第一周后可以退费。", "unsupported"),
    # a turn from the speaker to a rule: the rule is judged (v19 called the sentence "about the speaker")
    (EN, "I couldn't find the history of that rule, but refunds are given after the first week of term.", "unsupported"),
    (ZH, "我这边查不到历史记录，不过开学第一周后可以退费。", "unsupported"),
])
def test_what_a_non_assertion_cannot_hide(judge, evidence, answer, kind):
    result = judge.judge("How do I pay the late registration fee?", answer, evidence)
    assert [c.verdict for c in result.claims] == [kind], [(c.verdict, c.reason) for c in result.claims]


@pytest.mark.parametrize("evidence, answer, kind", [
    # judge v21: in a sentence that turns, the part that asserts nothing (the speaker, what the sources lack) is not
    # read for values: the year the speaker could not find is no date the answer states
    (EN, "I couldn't find the 2025 fee, but late registration costs $40.", "supported"),
    (EN, "I couldn't find the 2025 fee, but late registration costs $45.", "unsupported"),
    (EN, "Late registration costs $40, but I don't have the 2025 figure.", "supported"),
    (EN, "Late registration costs $45, but I don't have the 2025 figure.", "unsupported"),
    (ZH, "我没有找到2025年的收费标准，不过逾期注册费为40元。", "supported"),
    (ZH, "我没有找到2025年的收费标准，不过逾期注册费为50元。", "unsupported"),
])
def test_the_part_of_a_turning_sentence_that_asserts_nothing_is_not_checked(judge, evidence, answer, kind):
    result = judge.judge("How much is the late registration fee?", answer, evidence)
    assert [c.verdict for c in result.claims] == [kind], [(c.verdict, c.reason) for c in result.claims]
    if kind == "unsupported":  # flagged for the value it states, not for the year it could not find
        assert "2025" not in result.claims[0].reason and ("$45" in result.claims[0].reason or "50元" in
                                                         result.claims[0].reason)
