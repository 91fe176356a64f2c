"""Abstention read with its question (evalkit.text.asked_values, evalkit.models.abstention.detect's ``question``).

What is checked: which questions ask for a value and which replies state one (en and zh, a ticket or a phone number
in the service's talk is none, a structured "key: value" answer and a negation are); the learned stage reads a
plain answer that states no value its question asks for at the shipped ``threshold_unanswered`` and nothing else
changes (the same reply with another question, or none, is an answer); across every labelled split with questions,
the question only ever adds refusals that are labelled so; splits 35 and 36 as reports/judges.md quotes them.
``evalkit score`` passing the eval set's question: tests/scoring/test_abstention_learned.py.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy.stats import binomtest
from stage_tally import Tally, tally

from evalkit.models import abstention as stage
from evalkit.text.asked_values import asks_value, asks_way, says_nothing, states_value, unanswered

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "benchmarks" / "data"
# written for these tests; in no split. The stage reads it at p ~0.80: below 0.9, above 0.5
HOTLINE = "您好，这个问题建议您拨打12333社保热线咨询，工作人员会为您解答。"


@pytest.mark.parametrize("question", [
    "How much is the late fee?", "How many days of leave do I get?", "How long does a refund take?",
    "When does the pool open on Sundays?", "What time is the last train?", "Which day is bin collection?",
    "What's the monthly fee for the Plus plan?", "养老金每月能领多少？", "宽带安装要几天？", "补办要多久？",
    "新系统什么时候上线？", "截止日期是哪天？"])
def test_a_question_asking_for_an_amount_a_count_a_duration_a_time_or_a_date_asks_a_value(question):
    assert asks_value(question)


@pytest.mark.parametrize("question", [
    "How do I reset my password?", "Where do I park?", "Who approves travel?", "Is the VPN required when working "
    "from home?", "Does the plan cover dental?", "社保卡丢了怎么办？", "在哪里办理？", "能换货吗？", "What's the hotline number?"])
def test_a_question_asking_for_a_way_a_place_a_person_or_yes_no_asks_none(question):
    assert not asks_value(question)


@pytest.mark.parametrize("reply", [
    "The late fee is $25.", "迟交费为每天50元。", "Refunds take 5 to 7 working days.", "每月15日发放。",
    "There is no fee for residents.", "本项目不收取任何费用。", '{"总氮(N)": "15%", "来源": "说明书"}',
    "报关单号：531620240008812。", "Sorry for the wait — it opens at 9:30 on Sundays."])
def test_a_reply_with_a_value_or_a_negation_states_one(reply):
    assert states_value(reply)


@pytest.mark.parametrize("reply", [
    HOTLINE, "已为您创建工单，工单号：FIN20261207-0042。财务同事会在3个工作日内与您联系。",
    "Please call the pensions helpline on 0800 555 0177; an adviser can go through it with you.",
    "I've created a support ticket (#TK-55120) and our team will email you within 24 hours.",
    "It depends on your city and how long you have paid in.", "建议您咨询物业服务中心。"])
def test_a_referral_a_ticket_or_it_depends_states_no_value(reply):
    assert not states_value(reply)


@pytest.mark.parametrize("reply", [
    "已为您提交报修工单，工单号：BX20261207001。维修人员将在24小时内与您联系，请保持电话畅通。",
    "您好，您的问题已记录，我们会在3个工作日内通过短信回复您。",
    "I understand how frustrating this is. I've logged a request (ref. CR-55012) and the team will email you.",
    "Thanks for your question! Please call the helpline on 0800 555 0177."])
def test_a_reply_of_service_talk_alone_says_nothing(reply):
    assert says_nothing(reply)


@pytest.mark.parametrize("reply", [
    "Yes.", "The permit costs $40; please call 555-0100 to book.", "已为您查询，该套餐每月59元。",
    "I understand your concern: the warranty covers batteries for two years.", "不需要备案。"])
def test_a_reply_that_answers_or_is_bare_does_not_say_nothing(reply):
    assert not says_nothing(reply)


def test_a_referral_answers_a_question_asking_a_way_a_place_a_person_or_a_contact():
    for question in ("How do I appeal?", "Where do I send the form?", "Who approves it?", "What's the hotline?",
                     "社保卡丢了怎么办？", "在哪里办理？", "这事找谁？", "客服电话是多少？"):
        assert asks_way(question), question
        assert not unanswered(question, "Please call the helpline on 0800 555 0177."), question
    for question in ("Can I return it after 30 days?", "房屋租赁合同需要备案吗？", "我的快递怎么回事？"):
        assert not asks_way(question), question
        assert unanswered(question, "已为您提交工单，客服专员将在24小时内与您联系。"), question


def test_without_a_question_nothing_is_unanswered():
    assert not unanswered(None, HOTLINE) and not unanswered("", HOTLINE)
    assert unanswered("养老金每月能领多少？", HOTLINE) and not unanswered("社保问题打什么电话？", HOTLINE)


def test_an_unanswered_plain_answer_is_read_at_the_shipped_threshold_and_nothing_else_moves():
    learned = stage.learned("e5")
    shipped = json.loads((REPO / "evalkit" / "models" / "data" / "abstention_e5.json").read_text(encoding="utf-8"))
    assert learned.threshold_unanswered == shipped["threshold_unanswered"] == 0.5
    p = stage.probability("e5", HOTLINE)
    assert learned.threshold_unanswered <= p < learned.threshold  # the case the question decides
    asked = stage.detect(HOTLINE, model="e5", question="养老金每月能领多少？")
    assert (asked.abstained, asked.reason) == (True, "learned") and "not what its question asks for" in asked.matched
    for question in (None, "社保问题打什么电话？", "怎么办理退休手续？"):  # no question, or one a referral answers
        assert stage.detect(HOTLINE, model="e5", question=question).abstained is False, question
    assert stage.detect(HOTLINE, model="e5", question="养老金可以提前领取吗？").abstained  # yes or no: not a referral
    assert stage.detect(HOTLINE, model=stage.OFF, question="养老金每月能领多少？").abstained is False
    for reply in (HOTLINE, "抱歉，我不知道。"):  # an unknown stage is refused whatever the reply, with a question or not
        with pytest.raises(ValueError, match="unknown abstention model 'e6'"):
            stage.detect(reply, model="e6", question="养老金每月能领多少？")
    # a partial answer keeps its own threshold: the question reads plain answers only
    assert learned.threshold_for("partial", unanswered=True) == learned.threshold_partial
    assert learned.threshold_for("answer", unanswered=True) == 0.5 and learned.threshold_for("answer") == 0.9


def _labelled_with_questions() -> list[dict]:
    rows = []
    for n in range(8, 35):  # every split with questions read before the question was (35 and 36: below)
        rows += [json.loads(x) for x in (DATA / f"abstention_test{n}.jsonl").read_text(encoding="utf-8").splitlines()
                 if x.strip()]
    return [r for r in rows if r.get("question") and r["answer"].strip()]


def test_across_the_labelled_splits_the_question_only_adds_refusals_labelled_so():
    """Splits 8-34 (3,520 replies with questions): the question turns 38 replies the stage read as answers into
    refusals, all labelled abstained (most of them training data of the stage; of splits 29-34, which it never
    saw, three: r29-078, r31-069, r32-020), and no labelled answer into a refusal. Since deferrals, questions back
    and what the answer depends on are read (2026-12-07), 33: the rules, or the stage without the question, find
    the other five (r29-078 and r32-020 among them)."""
    rows = _labelled_with_questions()
    moved = [r for r in rows if stage.detect(r["answer"], model="e5").abstained
             != stage.detect(r["answer"], model="e5", question=r["question"]).abstained]
    assert len(rows) == 3520
    assert len(moved) == 33 and all(r["label"] == "abstained" for r in moved)
    assert [r["id"] for r in moved if int(r["id"].split("-")[0][1:]) >= 29] == ["r31-069"]


def _counts(name: str, question: bool) -> dict[str, Tally]:
    """The stage's (tp, fp, fn) per language on a split, read with each reply's question or without; a reply within
    the engine's noise of its threshold may be read either way (tests/stage_tally.py)."""
    return tally(DATA / name, question)


def _wilson(k: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of k successes in n, to two decimals (the figures reports/judges.md quotes)."""
    z = 1.959964
    centre, half = k / n + z * z / (2 * n), z * math.sqrt(k / n * (1 - k / n) / n + z * z / (4 * n * n))
    return round((centre - half) / (1 + z * z / n), 2), round((centre + half) / (1 + z * z / n), 2)


@pytest.mark.parametrize("k, n", [(114, 120), (115, 120), (117, 120), (229, 240), (1471, 1560)])
def test_the_wilson_interval_is_scipys(k: int, n: int) -> None:
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert _wilson(k, n) == (round(ci.low, 2), round(ci.high, 2))


def test_splits_35_and_36_are_measured_as_reported():
    """Splits 35 and 36 (realistic refusals, written blind 2026-12-07 from split 19's brief by two fresh writers,
    imported unread at ec6823b before the question was read, measured once at ef9f28c): with the question, rules +
    learned stage recall 0.967 on both (precision 1.000 and 0.983); without it 0.950 and 0.967. Both: 116 of 120
    refusals, 0.967 (95% Wilson interval 0.92-0.99). Read since (a ticket logged in reply to a yes-or-no question is
    among their misses): the reply of service talk alone (f6abb0c) was written after, and reads them the same."""
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (29, 0, 1), zh: (29, 0, 1)}
    assert _counts("abstention_test35.jsonl", question=True) == {"en": (30, 0, 0), "zh": (29, 0, 1)}
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (29, 0, 1), zh: (28, 0, 2)}
    assert _counts("abstention_test35.jsonl", question=False) == {"en": (30, 0, 0), "zh": (28, 0, 2)}
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (29, 1, 1), zh: (29, 0, 1)}
    assert _counts("abstention_test36.jsonl", question=True) == {"en": (30, 1, 0), "zh": (30, 0, 0)}
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (29, 1, 1), zh: (29, 0, 1)}
    assert _counts("abstention_test36.jsonl", question=False) == {"en": (30, 1, 0), "zh": (30, 0, 0)}
    k = 29 + 29 + 29 + 29
    assert _wilson(k, 120) == (0.92, 0.99)


def test_splits_37_and_38_are_measured_as_reported():
    """Splits 37 and 38 (realistic refusals, written blind 2026-12-07 from split 19's brief by two fresh writers while a
    reply of service talk alone was tried, imported unread at 95d655f and measured once after f6abb0c): rules +
    learned stage recall 0.933 and 0.950, precision 1.000, with the question and without it alike (the question moved
    none of their 240 replies; rules alone 0.800 and 0.883). Both: 113 of 120, 0.942 (95% Wilson interval 0.88-0.97);
    splits 35-38, 229 of 240, 0.954 (0.92-0.97)."""
    for question in (True, False):
        # deferrals, questions back, what it depends on (2026-12-07): was {en: (28, 0, 2), zh: (28, 0, 2)}
        assert _counts("abstention_test37.jsonl", question) == {"en": (30, 0, 0), "zh": (30, 0, 0)}
        # deferrals, questions back, what it depends on (2026-12-07): was {en: (29, 0, 1), zh: (28, 0, 2)}
        assert _counts("abstention_test38.jsonl", question) == {"en": (30, 0, 0), "zh": (30, 0, 0)}
    k = 28 + 28 + 29 + 28 + 116
    assert k == 229 and _wilson(k, 240) == (0.92, 0.97)


def test_splits_45_and_46_are_measured_as_reported():
    """Two more splits from split 44's brief, written blind on 2026-12-07 (fifth session) by two fresh writers, imported
    unread (4641d66) and measured once after the rules read transfers under way, requests noted, figures withheld
    and where the information appears: rules + stage with the question, recall 0.950 and 0.983, precision 1.000 and
    0.967 (rules alone 0.833 and 0.950). Pooled, 116 of 120 refusals (0.967, 95% Wilson 0.92-0.99), for two false
    abstentions: an apology for a slow reply before the answer, and 酒店有地下停车场 before what the sources lack. The
    rules and weights of the session's start read both splits the same but one refusal the stage found anyway.
    The misses: 您的问题我已经记下了 (the object before the verb), "Closure decisions are announced on the district
    website", "It depends on your membership type ... best to ask the staff", "Please raise a ticket ...".
    """
    # a contact promised, a request noted with its object first, "different plans have different rules" (2026-12-07,
    # sixth session; development data since): was {en: (28, 0, 2), zh: (29, 0, 1)} with the question and without
    assert _counts("abstention_test45.jsonl", question=True) == {"en": (29, 0, 1), "zh": (30, 0, 0)}
    assert _counts("abstention_test45.jsonl", question=False) == {"en": (29, 0, 1), "zh": (30, 0, 0)}
    # the same: was {en: (29, 1, 1), zh: (30, 1, 0)} with the question, {en: (29, 0, 1), zh: (30, 1, 0)} without
    assert _counts("abstention_test46.jsonl", question=True) == {"en": (30, 1, 0), "zh": (30, 1, 0)}
    assert _counts("abstention_test46.jsonl", question=False) == {"en": (30, 0, 0), "zh": (30, 1, 0)}
    k = 28 + 29 + 29 + 30  # as measured
    assert k == 116 and _wilson(k, 120) == (0.92, 0.99)
    # the ten splits 37-46 as each was measured, and the twenty-eight from split 19's brief (split 44's is its copy)
    last_ten = 56 + 57 + 57 + 60 + 60 + 55 + 56 + 58 + 57 + 59
    assert last_ten == 575 and _wilson(last_ten, 600) == (0.94, 0.97)
    assert _wilson(1471 + 116, 1680) == (0.93, 0.95)



def test_splits_47_and_48_are_measured_as_reported():
    """Two more splits from split 46's brief, written blind on 2026-12-07 (sixth session) by two fresh writers, imported
    unread (cb4fde9) and measured once after the rules read a contact promised, a request noted with its object
    first and passive publication (f530839): rules + stage with the question, recall 0.967 and 0.967, precision
    1.000 (without the question 0.967 and 0.950; rules alone 0.867 and 0.883). Pooled, 116 of 120 (0.967, 95% Wilson
    0.92-0.99); the rules and weights of the session's start read both splits the same. Development data since."""
    # why no answer is given (each case decided individually: r48-106), a promise to tell later, a sign-off (2026-12-07,
    # sixth session): was {en: (28, 0, 2), zh: (30, 0, 0)} with the question, {en: (28, 0, 2), zh: (29, 0, 1)} without
    for question in (True, False):
        assert _counts("abstention_test47.jsonl", question) == {"en": (29, 0, 1), "zh": (29, 0, 1)}
    assert _counts("abstention_test48.jsonl", question=True) == {"en": (29, 0, 1), "zh": (30, 0, 0)}
    assert _counts("abstention_test48.jsonl", question=False) == {"en": (29, 0, 1), "zh": (29, 0, 1)}
    k = 29 + 29 + 28 + 30  # as measured
    assert k == 116 and _wilson(k, 120) == (0.92, 0.99)
    # the ten splits 39-48 as each was measured (37 and 38 gave 56 and 57), and the thirty from split 19's brief
    last_ten = 575 - 56 - 57 + 58 + 58
    assert last_ten == 578 and _wilson(last_ten, 600) == (0.95, 0.98)
    assert _wilson(1587 + 116, 1800) == (0.93, 0.96)

def test_on_answers_nobody_trained_it_on_the_question_adds_no_refusal():
    """The multi-document answers (3,542 with their questions, every held-out set included, V to AE since 2026-12-07),
    the 1,333 paraphrases, the 216 judge-set answers and the demo's 40 SmolLM2 answers: read with the question or without it, the same finding
    for every one (their few false abstentions, tests/models/test_abstention_model.py, are the stage's own)."""
    judges, bench = REPO / "tests" / "judges" / "data", REPO / "benchmarks" / "data"
    files = [judges / f for f in ("judge_multidoc_blind.jsonl", "judge_multidoc_held_out.jsonl", "judge_multidoc.jsonl",
                                  "judge_comparisons_held_out.jsonl")]
    files += [bench / "judge_paraphrases.jsonl", bench / "judge_cases.jsonl", REPO / "eval_sets" / "demo_llm_answers.jsonl"]
    rows = [json.loads(x) for f in files for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
    assert len(rows) == 3542 + 1333 + 216 + 40 and all(r["question"] for r in rows)
    moved = [r["answer"][:40] for r in rows if stage.detect(r["answer"], model="e5").abstained
             != stage.detect(r["answer"], model="e5", question=r["question"]).abstained]
    assert moved == []


def test_splits_39_and_40_are_measured_as_reported():
    """Two more splits from split 19's brief (120 replies each, 60 refusals), written blind while deferrals, questions
    back, what the answer depends on and withheld figures were added to the rules on splits 8-38, imported unread
    (8ae42f3) and measured once with the final rules and the stage refitted by its own procedure (threshold_partial
    0.80): rules + stage with the question, precision 1.000 on both; recall 0.950 (en 0.900) and 1.000. Pooled,
    117 of 120 refusals (0.975, 95% Wilson 0.93-0.99); the rules and weights of the session's start found 114 (0.950;
    55 and 59). The three misses are English: a referral in a long sympathetic reply, "may not have been published to
    this assistant yet", "That's one for our membership team"."""
    # the rules and the refit of 2026-12-07 (fifth session) on this machine's e5 vectors: was {en: (27, 0, 3), ...} (r39-066: "may not have been published to this assistant yet")
    assert _counts("abstention_test39.jsonl", question=True) == {"en": (28, 0, 2), "zh": (30, 0, 0)}
    assert _counts("abstention_test40.jsonl", question=True) == {"en": (30, 0, 0), "zh": (30, 0, 0)}
    k = 27 + 30 + 30 + 30
    assert k == 117 and _wilson(k, 120) == (0.93, 0.99)


def test_splits_41_and_42_are_measured_as_reported():
    """Two more splits from split 19's brief, written blind on 2026-12-07 by two fresh writers, imported unread
    (4791a2b) and measured once with the rules and weights as they were (nothing in the abstention rules or the stage
    changed that session before): rules + stage with the question, precision 1.000 on both; recall 1.000 and 0.917
    (zh 0.867). Pooled, 115 of 120 refusals (0.958, 95% Wilson 0.91-0.98); with splits 39 and 40, 232 of 240 (0.967,
    0.94-0.98). Without the question split 41 loses three (29 and 28). The misses of 42: a referral to a hotline after
    a reason (这个问题涉及个人缴费情况，建议您拨打12333…), a bare 无法提供。, a reply that introduces the speaker and
    says the library lacks a rule (read as a partial answer), and two error replies ("系统繁忙，请稍后再试", "I'm having
    trouble retrieving that information right now"), which the detector reads as errors on purpose."""
    assert _counts("abstention_test41.jsonl", question=True) == {"en": (30, 0, 0), "zh": (30, 0, 0)}
    # bare refusals to disclose, addresses, negated commands (2026-12-07, later): was {en: (29, 0, 1), zh: (26, 0, 4)}
    assert _counts("abstention_test42.jsonl", question=True) == {"en": (29, 0, 1), "zh": (29, 0, 1)}
    # the rules and the refit of 2026-12-07 (fifth session) on this machine's e5 vectors: was {..., zh: (28, 0, 2)} (r41-111, p 0.8998: on the threshold)
    assert _counts("abstention_test41.jsonl", question=False) == {"en": (29, 0, 1), "zh": (27, 0, 3)}
    k = 30 + 30 + 29 + 26
    assert k == 115 and _wilson(k, 120) == (0.91, 0.98)


def test_splits_43_and_44_are_measured_as_reported():
    """Two more splits from split 19's brief, written blind on 2026-12-07 while the rules learned bare refusals to
    disclose, addresses and negated commands on splits 8-42, imported unread (0cebf25) and measured once after:
    rules + stage with the question, precision 1.000 on both, recall 0.933 and 0.967 (the session's first rules and
    weights: the same). Pooled, 114 of 120 (0.950, 95% Wilson 0.90-0.98); splits 41-44 as each was measured, 229 of
    240 (0.954, 0.92-0.97). The misses: a withheld figure after old sources with 您 (为避免误导您，暂不提供具体数字), a
    transfer to an agent with a queue or a wait time (2), a figure the speaker would rather not quote, a request noted
    with a reference number, holiday hours not yet published."""
    # as measured, with and without the question: 43 {en: (28, 0, 2), zh: (28, 0, 2)}, 44 {en: (28, 0, 2), zh: (30, 0, 0)};
    # the rules of 2026-12-07 (fifth session) read the five misses but the holiday hours, which the question reads
    for question in (True, False):
        assert _counts("abstention_test43.jsonl", question) == {"en": (30, 0, 0), "zh": (30, 0, 0)}
    assert _counts("abstention_test44.jsonl", True) == {"en": (30, 0, 0), "zh": (30, 0, 0)}
    assert _counts("abstention_test44.jsonl", False) == {"en": (29, 0, 1), "zh": (30, 0, 0)}
    k = 28 + 28 + 28 + 30
    assert k == 114 and _wilson(k, 120) == (0.9, 0.98)
