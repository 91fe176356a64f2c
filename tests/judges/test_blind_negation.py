"""Negation and polarity as answers written blind to the offline judge phrase them: lexical
negatives (lacks, exempt from, 缺少, 免收), synonymous prohibitions (请勿 / 不要), a negation in
another clause of the evidence sentence, bare yes/no answers and elliptical negations. Each
correct wording must pass; the near-miss wrong one next to it must still be flagged (or, where judge
v10 cannot tell, be ``unverified``, with a comment saying why; never ``supported``)."""
from __future__ import annotations

from judging import verdicts_by_id as verdicts
from judging import verdicts_with_reasons

from evalkit.text.lexicon import negation_cues


def judged(judge, question, answer, evidence):
    """Each claim's (verdict, reason), the evidence given as ``{passage id: text}``."""
    return verdicts_with_reasons(judge, question, answer, list(evidence.items()))


def test_lexical_negatives_are_negation_cues():
    assert negation_cues("The base model lacks a heated seat.") == ["lacks"]
    assert negation_cues("Students are exempt from the entry fee.") == ["exempt"]
    assert negation_cues("The late fee is waived for members.") == ["waived"]
    assert negation_cues("The spare key is missing from the box.") == ["missing"]
    assert negation_cues("该型号缺少蓝牙模块。") == ["缺少"]
    assert negation_cues("六十岁以上老人免收门票。") == ["免收"]
    # a word that only looks like one: an attribute, not a negation of the clause
    assert negation_cues("The missing pages were found later.") == []


LOCKER = {"gym-rules": "Lockers are available to all members. Students are exempt from the locker fee.",
          "gym-fees": "The locker fee is 5 euros per month."}


def test_a_quantity_negative_matches_a_lexical_negative(judge):
    q = "What does a locker cost at the gym?"
    assert verdicts(judge, q, "A locker costs 5 euros per month, but students pay nothing for it.", LOCKER) \
        == ["supported"]
    # the flipped claim is still a flip
    assert verdicts(judge, q, "Students must pay the locker fee.", LOCKER) == ["unsupported"]
    # an exemption the evidence gives to others only: the evidence has no negated clause about members, and
    # its best clause ("available to all members") does not state the claim's words unnegated, so v10 leaves
    # the missing negation unverified (antonyms negate without a cue); never "supported"
    assert judged(judge, q, "Members pay nothing for a locker.", LOCKER) \
        == [("unverified", "negation 'nothing' absent from best sentence ('Lockers are available to all members')")]


SCOOTER = {"scooter-a": "The Vela A is a city scooter with a 250 W motor. It does not support app unlocking.",
           "scooter-b": "The Vela B adds app unlocking and a 350 W motor."}


SCOOTER2 = {"scooter-a2": "The Vela A2 is a city scooter with a 250 W motor. It does not support app unlocking.",
            "scooter-b3": "The Vela B3 adds app unlocking and a 350 W motor."}


def test_lacks_restates_does_not(judge):
    q = "Can the Vela A and Vela B scooters be unlocked with the app?"
    assert verdicts(judge, q, "The Vela B supports app unlocking, whereas the Vela A lacks app unlocking support.",
                    SCOOTER) == ["supported"]
    assert verdicts(judge, q, "The Vela A supports app unlocking.", SCOOTER) == ["unsupported"]
    # a lack the evidence states for the other scooter only
    assert verdicts(judge, "Can the Vela A2 and Vela B3 scooters be unlocked with the app?",
                    "The Vela B3 lacks app unlocking support.", SCOOTER2) == ["unsupported"]


KETTLE = {"manual": "本款咖啡机容量1.2升，具备自动关机功能，但不支持预约。切勿在无水时启动。"}


def test_synonymous_prohibitions_match(judge):
    q = "这款咖啡机有什么使用注意事项？"
    assert verdicts(judge, q, "说明书提醒不要在无水时启动。", KETTLE) == ["supported"]
    assert verdicts(judge, q, "说明书提醒请勿在无水时启动。", KETTLE) == ["supported"]
    # the prohibition dropped is still a flip
    assert verdicts(judge, q, "说明书说明可以在无水时启动。", KETTLE) == ["unsupported"]


LEAFLET = {"leaflet": "Take one 400 mg capsule of Dormex at night. Dormex must not be taken with alcohol, "
                      "because the combination causes severe drowsiness."}


def test_a_negation_in_another_clause_of_the_evidence_sentence(judge):
    q = "How should Dormex be taken, and can it be taken with alcohol?"
    assert verdicts(judge, q, "It should not be combined with alcohol because of severe drowsiness.", LEAFLET) \
        == ["supported"]
    assert verdicts(judge, q, "Dormex can be taken with alcohol.", LEAFLET) == ["unsupported"]
    # a negation the evidence sentence does not make is still missing
    assert verdicts(judge, q, "Take one 400 mg capsule of Dormex, not at night.", LEAFLET) == ["unsupported"]


def test_a_bare_no_takes_the_question_predicate(judge):
    q = "Do the Vela A2 and Vela B3 scooters support app unlocking?"
    # a bare answer has too few words to be supported on its own: it must not be flagged
    assert "unsupported" not in verdicts(judge, q, "No for the Vela A2, yes for the Vela B3. The Vela B3 adds app "
                                                   "unlocking.", SCOOTER2)
    # the evidence negates it for the other scooter only
    assert verdicts(judge, q, "No for the Vela B3, yes for the Vela A2. The Vela B3 adds app unlocking.", SCOOTER2)[0] \
        == "unsupported"


HEATERS = {"h1": "暖阳H1取暖器功率2000瓦，具备倾倒断电保护，倒地时自动断电。",
           "h2": "暖阳H2为1500瓦静音款，支持遥控，但未配备倾倒断电保护，请勿无人看管时使用。"}


def test_an_elliptical_negation_takes_the_previous_clause(judge):
    q = "暖阳H1和暖阳H2是否都有倾倒断电保护？"
    assert verdicts(judge, q, "H1（2000瓦）有倾倒断电保护，H2（1500瓦，支持遥控）则没有。", HEATERS) == ["supported"]
    # the evidence negates it for H2, not for H1
    assert verdicts(judge, q, "H2（1500瓦）有倾倒断电保护，H1（2000瓦，倒地时自动断电）则没有。", HEATERS) \
        == ["unsupported"]


FANS = {"k1": "云雀K1风扇有三档风速，长按三秒可锁定按键。",
        "k2": "云雀K2为静音款，支持定时，但未配备童锁功能。"}


def test_a_flip_names_the_subject_of_an_earlier_evidence_clause(judge):
    q = "云雀K1和云雀K2风扇有童锁吗？"
    assert verdicts(judge, q, "K2未配备童锁功能，但支持定时。", FANS) == ["supported"]
    # "K2" is in the clause before "未配备童锁功能": the claim restates that sentence, flipped
    assert verdicts(judge, q, "K2也配备了童锁保护。", FANS) == ["unsupported"]


def test_a_negated_condition_states_no_fact(judge):
    # "If you haven't used it before" says "new users" in other words: at most unverified, never a flip
    ev = [("facility", "New users must complete induction training with facility staff before their first session.")]
    got = verdicts_with_reasons(judge, "Can I book the microscope?",
                                "If you haven't used it before, you'll need to do the induction with facility staff first.", ev)
    assert [v for v, _ in got] == ["unverified"], got
    # a plain negated claim against the same rule is still a flip
    got = verdicts_with_reasons(judge, "Can I book the microscope?",
                                "New users do not need to complete induction training with facility staff.", ev)
    assert [v for v, _ in got] == ["unsupported"], got
