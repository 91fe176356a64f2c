"""Negation and polarity, second blind round: words that end or lose a thing (dropped support,
失去资格, 闭馆, 停产), an exclusive ("only water") against a negation with an exception, a
lexical negative in the next clause of the evidence sentence (免收手续费 for 不收费), a question
that brings one cue but not the answer's other one, and a bound's comparator ("no less than",
最低, 上限) read with its number rather than as a content word. Each correct wording must pass;
the near-miss wrong one next to it must still be flagged (or, where judge v10 cannot tell, be
``unverified``, with a comment saying why; never ``supported``)."""
from __future__ import annotations

from judging import verdicts_by_id as verdicts
from judging import verdicts_with_reasons

from evalkit.text.lexicon import content_terms, negation_cues


def judged(judge, question, answer, evidence):
    """Each claim's (verdict, reason), the evidence given as ``{passage id: text}``."""
    return verdicts_with_reasons(judge, question, answer, list(evidence.items()))


def flagged(judge, question, answer, evidence):
    return "unsupported" in verdicts(judge, question, answer, evidence)


def test_words_that_end_a_thing_are_negation_cues():
    assert negation_cues("Version 5.0 dropped support for Windows 7.") == ["dropped"]
    assert negation_cues("The 2.x line ended compatibility with Java 8.") == ["ended"]
    assert negation_cues("该学生失去评优资格。") == ["失去"]
    assert negation_cues("图书馆每周一闭馆。") == ["闭馆"]
    assert negation_cues("该型号已停产。") == ["停产"]
    assert negation_cues("Support for Windows 7 was removed.") == ["removed"]
    assert negation_cues("Lumen 2.5 ended Python 3.8 support.") == ["ended"]
    # a drop that ends nothing: a change of a value
    assert negation_cues("The price dropped to $5 in May.") == []
    # an end with its date is a time bound ("supported until then"), not a negation
    assert negation_cues("Standard support for version 5.2 ends on 31 March 2026.") == []


RELEASE = {"orion-3.1": "Orion 3.1 (2024-02-01): Added dark mode.",
           "orion-3.2": "Orion 3.2 (2024-03-01): Fixed a crash on start-up. Dropped support for macOS 11; "
                        "macOS 12 or newer is now required."}


def test_no_longer_supports_restates_dropped_support(judge):
    q = "Which macOS version does Orion 3.2 require?"
    assert verdicts(judge, q, "Orion 3.2 no longer supports macOS 11, so you need macOS 12 or newer.",
                    RELEASE) == ["supported"]
    # the flipped claim is a flip
    assert flagged(judge, q, "Orion 3.2 still supports macOS 11.", RELEASE)


AWARD = {"attendance": "学生请事假须提前一天向班主任申请。",
         "award-rules": "一学年内累计缺勤超过20天（含病假、事假）的学生，不具备当年奖学金评选资格。"}


def test_a_loss_restates_a_negated_lack(judge):
    q = "一学年缺勤多久会失去奖学金评选资格？"
    assert verdicts(judge, q, "一学年累计缺勤超过20天：失去当年奖学金评选资格。", AWARD) == ["supported"]
    # the question's 失去 does not excuse the answer's other, unsupported 不; but the evidence has no negated
    # counterpart of "病假不计入" (its 含病假 includes them without a cue), so v10 leaves it unverified; never
    # "supported"
    ((verdict, reason),) = judged(judge, q, "累计缺勤超过20天会失去奖学金评选资格，但病假不计入缺勤天数。", AWARD)
    assert verdict == "unverified" and "negation '不' absent from best sentence" in reason, reason


SCIENCE = {"science-museum": "市科技馆实行免费预约参观，每周二闭馆（法定节假日除外）。",
           "zoo": "动物园全年开放，门票40元。"}


def test_closed_is_a_negation(judge):
    q = "周二能去市科技馆和动物园吗？"
    assert verdicts(judge, q, "非法定节假日的周二无法参观市科技馆，只能去动物园。", SCIENCE) == ["supported"]
    assert verdicts(judge, q, "动物园全年开放，市科技馆每周二闭馆。", SCIENCE) == ["supported"]
    # a negation of what the evidence states plainly, in the same sentence as the closure
    assert flagged(judge, q, "市科技馆无法免费预约参观。", SCIENCE)
    assert flagged(judge, q, "动物园全年不开放。", SCIENCE)


LAB = {"lab-hours": "The lab is open Monday to Friday 7:00-11:00.",
       "lab-prep": "Before a lipid panel, do not eat or drink anything except water for 12 hours before "
                   "the blood draw."}


def test_only_restates_a_negation_with_an_exception(judge):
    q = "How should I prepare for a lipid panel?"
    assert verdicts(judge, q, "Only water for 12 hours before the blood draw.", LAB) == ["supported"]
    assert verdicts(judge, q, "Drink nothing but water for 12 hours before the blood draw.", LAB) == ["supported"]
    # no "only": the claim allows what the evidence forbids
    assert flagged(judge, q, "You may eat and drink for 12 hours before the blood draw.", LAB)
    # "only" against a negation without an exception is still a flip
    no_water = {"lab-prep": "Before a lipid panel, do not drink water for 12 hours before the blood draw."}
    assert flagged(judge, q, "Only water for 12 hours before the blood draw.", no_water)


def test_only_must_name_the_exception(judge):
    ev = {"policy": "Refunds are not available for opened items except defective ones, within 14 days."}
    q = "Can I get a refund for an opened item?"
    assert verdicts(judge, q, "Refunds for opened items are only available for defective ones, within 14 days.",
                    ev) == ["supported"]
    # an "only" about something else does not make the flip an exclusive
    assert flagged(judge, q, "Refunds for opened items are available within 14 days, only with a receipt.", ev)


FEES = {"counter": "B银行柜台跨行汇款手续费：2万元（含）至5万元（含）每笔15元。",
        "app": "自2024年1月1日起，B银行个人客户通过手机银行办理境内跨行汇款，免收手续费。"}


def test_a_negation_in_the_next_clause_of_the_evidence_sentence(judge):
    q = "个人客户在B银行境内跨行汇款3万元，柜台和手机银行分别收多少手续费？"
    assert verdicts(judge, q, "柜台收15元，手机银行不收费。", FEES) == ["supported"]
    # the counter has a fee: a negation the evidence does not state for it
    assert flagged(judge, q, "柜台跨行汇款不收费。", FEES)
    # a negation of another thing
    assert flagged(judge, q, "手机银行跨行汇款不限额。", FEES)
    # the dropped negation is a flip
    assert flagged(judge, q, "手机银行跨行汇款需要收取手续费。", FEES)


def test_a_bound_comparator_is_not_a_content_word():
    assert "less" not in content_terms("no less than ninety days' written notice")
    assert "least" not in content_terms("at least 90 days' notice")
    assert "上限" not in content_terms("其转速上限为每分钟一万五千转")


CONTRACT = {"clause-9": "Clause 9.1: Either party may terminate for convenience by giving not less than "
                        "30 days' written notice to the other party.",
            "amendment": "Amendment No. 2: Clause 9.1 is amended by replacing \"30 days\" with \"45 days\"."}


def test_a_bound_worded_otherwise_passes(judge):
    q = "How much notice must the Supplier give to terminate for convenience?"
    assert verdicts(judge, q, "The Supplier must give no less than forty-five days' written notice.",
                    CONTRACT) == ["supported"]
    # a value neither passage states: reach reads "no less than" as a lower bound, which the stated 30 days
    # do not satisfy, so sixty days is absent
    sixty = "The Supplier must give no less than sixty days' written notice."
    (c,) = judge.judge(q, sixty, list(CONTRACT.items())).claims
    assert c.verdict == "unsupported" and "duration sixty days not in evidence" in c.reason, c


BEARING = {"datasheet": "KX-7 型轴承的极限转速为每分钟18000转。",
           "series-note": "KX系列轴承的工作温度范围为-30℃至110℃。"}


def test_bound_words_in_chinese(judge):
    q = "KX-7轴承能否满足每分钟1.5万转的转速要求？"
    assert verdicts(judge, q, "其转速上限为每分钟一万八千转，超过所需的一万五千转。", BEARING) == ["supported"]
    # a wrong limit
    assert flagged(judge, q, "其转速上限为每分钟两万转，超过所需的一万五千转。", BEARING)


WIRE = {"fees": "Outgoing international wire transfer: $45 per transfer.",
        "terms": "Gold Savings customers receive a waiver of the fee for outgoing international wire transfers. "
                 "Basic customers pay the standard fees."}


def test_a_waiver_noun_is_a_negation(judge):
    q = "What does an outgoing international wire cost, and do Gold Savings customers pay it?"
    assert verdicts(judge, q, "Outgoing international wires are fee-exempt for Gold Savings customers.", WIRE) \
        == ["supported"]
    # the dropped waiver is a flip
    assert flagged(judge, q, "Gold Savings customers pay the fee for outgoing international wire transfers.", WIRE)
    # a waiver the evidence gives to others only: the evidence about Basic customers says "pay", an antonym and
    # no negation, so v10 leaves the missing negation unverified; never "supported"
    ((verdict, reason),) = judged(judge, q, "Basic customers have the outgoing wire fee waived.", WIRE)
    assert verdict == "unverified" and "negation 'waived' absent from best sentence" in reason, reason


LEASE = {"supplement": "补充协议第三条：承租人逾期支付租金超过15日的，出租人有权解除合同，且无需退还押金。"}


def test_a_flip_after_a_connective(judge):
    q = "承租人逾期交租超过多少天，出租人可以解除合同？"
    assert verdicts(judge, q, "逾期超过15日，出租人有权解除合同，且不必退还押金。", LEASE) == ["supported"]
    assert flagged(judge, q, "逾期超过15日，出租人有权解除合同，但须全额退还押金。", LEASE)


def test_a_claims_end_word_needs_no_cue_in_its_synonym(judge):
    # 下线 / 停售 are verbs as well: evidence saying 终止 / 结束 states the same
    assert verdicts(judge, "这款礼盒什么时候不再销售？", "这款礼盒将于3月31日停售。",
                    {"notice": "这款礼盒的销售将于3月31日结束。"}) == ["supported"]
    # 停止 is no cue: evidence saying it does not make 结束 a flip
    assert verdicts(judge, "这项促销活动什么时候结束？", "促销活动将于3月31日结束。",
                    {"notice": "本次促销活动于3月31日停止。"}) == ["supported"]
    assert verdicts(judge, "该服务何时终止？", "该服务将于6月30日下线。",
                    {"notice": "该服务将于6月30日终止。"}) == ["supported"]
    # a wrong day is still flagged
    assert flagged(judge, "该服务何时终止？", "该服务将于7月30日下线。", {"notice": "该服务将于6月30日终止。"})


def test_a_dated_end_of_support_is_a_time_bound(judge):
    ev = {"lifecycle": "Standard support for Nimbus DB 7.1 ends on 30 June 2027."}
    q = "Until when is Nimbus DB 7.1 supported?"
    assert verdicts(judge, q, "Nimbus DB 7.1 has standard support until 2027-06-30.", ev) == ["supported"]
    assert flagged(judge, q, "Nimbus DB 7.1 has standard support until 2028-06-30.", ev)


def test_free_stands_for_a_negated_charge(judge):
    q = "个人客户在C银行跨行转账，手机银行收手续费吗？"
    assert verdicts(judge, q, "通过手机银行跨行转账不收手续费。",
                    {"notice": "C银行个人客户通过手机银行办理跨行转账，免费。"}) != ["unsupported"]
    assert verdicts(judge, q, "通过手机银行跨行转账免费。",
                    {"notice": "C银行个人客户通过手机银行办理跨行转账，不收取手续费。"}) != ["unsupported"]
    kids = {"prices": "科技馆门票成人30元，身高1.2米以下儿童免票。"}
    q = "带孩子去科技馆要买几张票？"
    assert verdicts(judge, q, "身高1.2米以下的儿童不用买票，成人门票30元。", kids) == ["supported"]
    assert flagged(judge, q, "身高1.2米以下的儿童门票15元。", kids)


def test_a_dropped_not_free_is_a_flip(judge):
    # "免费" is a plain word in a claim: the flip of "并不免费"
    assert flagged(judge, "博物馆停车要钱吗？", "博物馆停车免费。", {"notice": "博物馆停车不免费，每小时5元。"})
    assert flagged(judge, "Is admission to the gallery free?", "Admission to the gallery is free.",
                   {"prices": "Admission to the gallery is not free; adults pay 12 dollars."})


def test_free_negates_only_a_charge(judge):
    museum = {"notice": "古城博物馆实行免费预约参观，每周一闭馆。"}
    q = "去古城博物馆参观要注意什么？"
    # 免费预约参观 does not say 预约 is not needed
    assert flagged(judge, q, "古城博物馆参观无需预约，直接入馆即可。", museum)
    # nor is a plain 需要预约 its flip
    assert verdicts(judge, q, "古城博物馆参观免费，但需要提前预约。", museum) == ["supported"]


def test_a_negated_end_is_not_the_end(judge):
    # "从未闭馆" / "never dropped support" negate the end the evidence states: still flagged
    assert flagged(judge, "这座博物馆曾经闭馆过吗？", "没有，该博物馆自1990年开馆以来从未闭馆。",
                   {"history": "该博物馆自1990年开馆以来曾两次闭馆维修。"})
    assert flagged(judge, "Did Lumen 2.4.1 drop support for Python 3.8?",
                   "No, Lumen 2.4.1 never dropped support for Python 3.8.",
                   {"changelog": "Lumen 2.4.1: Dropped support for Python 3.8; Python 3.9 or newer is now required."})
    # the question's 失去 does not bring the answer's 不会
    assert flagged(judge, "该学生会失去奖学金资格吗？", "不会，该学生不会失去奖学金评选资格。",
                   {"rules": "累计缺勤超过20天的学生失去当年奖学金评选资格。该学生累计缺勤25天。"})


def test_a_cue_that_describes_a_thing_or_a_time_negates_no_clause():
    # judge v16 (found on the demo-document held_out split and held_out A, I): "rejected" of "three rejected lots",
    # "failed" of "a failed upload batch", "fail" of "students who fail a module", 失败 of "投递失败后" (after a
    # failed delivery) describe a thing or a time; the clause's predicate is plain
    assert negation_cues("Three rejected lots from the same supplier trigger an audit.") == []
    assert negation_cues("LanAgent retries a failed upload batch 3 times.") == []
    assert negation_cues("Students who fail a module at first attempt may resit once.") == []
    assert negation_cues("投递失败后最多重试 5 次。") == []
    # ... but as the predicate they still negate
    assert negation_cues("The application was rejected by the board.") == ["rejected"]
    assert negation_cues("Upload failed.") == ["failed"]
    assert negation_cues("The request failed because of a timeout.") == ["failed"]
    assert negation_cues("Cards are blocked when overdue.") == ["blocked"]
    assert negation_cues("投递失败。") == ["失败"]
    assert negation_cues("未在规定时间内缴费的，不予受理。") == ["未", "不予"]  # 时间 is no time clause
    assert negation_cues("切勿在无水时启动。") == ["切勿"]  # a time inside the scope of a plain cue
    assert negation_cues("支付失败时会提示。") == []


def test_a_clause_restating_what_a_descriptive_cue_leaves_plain_is_no_flip(judge):
    ev = {"api-005": "Webhook 投递失败后最多重试 5 次，间隔依次为 1 分钟、5 分钟、30 分钟、2 小时和 6 小时。"}
    assert not flagged(judge, "Webhook 投递失败会重试几次？", "最多重试 5 次。", ev)
    ev = {"agent": "retry.max_attempts: maximum number of times LanAgent retries a failed upload batch. Default 3."}
    assert not flagged(judge, "How often does LanAgent retry?", "LanAgent retries an upload batch up to 3 times.", ev)


def test_a_negated_case_outside_a_rules_condition_or_bound_is_no_flip(judge):
    # judge v16 (found on held_out F, G, K, L after their measurement): the rule covers the cases its condition or
    # bound picks out, so a case outside it is negated by the rule too: unverified, not a flip
    ev = {"port": "Vessels of more than 200 metres length overall must engage a licensed pilot."}
    v = verdicts(judge, "Does the 150 m Marit need a pilot?", "No, the Marit doesn't need to engage a pilot.", ev)
    assert "unsupported" not in v
    ev = {"ip": "If the renewal fee is not paid within the grace period, the patent lapses with effect from the due date."}
    assert "unsupported" not in verdicts(judge, "Is the patent still valid?", "The patent hasn't lapsed.", ev)
    # a negation inside the rule's condition states no fact either: "the fee was paid" flips nothing
    assert "unsupported" not in verdicts(judge, "Was the fee paid?", "The renewal fee was paid within the grace period.", ev)
    # a bound of another clause of the sentence (after a semicolon) leaves the flip
    ev = {"sla": "Callouts are included in the monthly fee; parts costing more than $500 are billed separately."}
    assert flagged(judge, "Is a callout extra?", "Callouts are not included in the monthly fee.", ev)


def test_a_negation_the_claim_restates_across_its_clauses_is_no_flip(judge):
    """Found on held_out3 after its measurement: the plain clause names what the negated clause refuses."""
    q = "供应商送了我一张购物卡，我该怎么处理？"
    ev = {"e1": "任何情况下不得接受现金、购物卡、有价证券等现金等价物。"}
    assert not flagged(judge, q, "购物卡属于现金等价物，任何情况下都不能接受。", ev)
    # the plain claim alone is still a flip of the rule
    assert flagged(judge, q, "购物卡属于现金等价物，可以接受。", ev)
