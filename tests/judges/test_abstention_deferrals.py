"""Deferrals, a self-introduced speaker and withheld figures (evalkit.text.abstention, data/refusal_deferrals.txt).

A reply that logs or hands on the question ("已为您创建工单…", "Your request has been logged") declines to answer it,
unless it answers something beside the deferral, or its deferral comes with a value of its own (an appointment
answers "when will the engineer come?"). A Chinese inability verb whose speaker was introduced earlier in the
sentence (我是AI助手，暂时无法获取…) is the speaker's; a worldly subject keeps it an answer. The speaker withholding
a figure it cannot vouch for (为避免误导，暂不提供具体数字) refuses; a shop that does not provide a service answers.
Every reply here was written for this test, none copied from a labelled split."""
from __future__ import annotations

import pytest

from evalkit.text.abstention import detect_abstention
from evalkit.text.asked_values import states_value
from evalkit.text.partial_answers import service_talk
from evalkit.text.refusal_rules import deferral_spans, normalise


@pytest.mark.parametrize("reply", [
    "已为您创建售后服务单，售后专员会在2个工作日内与您联系。",
    "您好，已帮您提交退款申请（申请号RF-20931），财务同事将在3个工作日内回复您。",
    "您的咨询已转交社区网格员，工作人员会尽快与您联系，请保持电话畅通。",
    "您的投诉已受理，编号#88120，我们会在5个工作日内通过短信告知处理结果。",
    "正在为您转接人工客服，请稍候。",
    "Your enquiry has been forwarded to the lettings team (ref. LT-40817). Someone will email you within 2 business days.",
    "Thanks for asking! I'm going to pass this on to our billing team, who will get back to you by Friday.",
    "Let me connect you with one of our nurses. Please hold, the current wait time is about 6 minutes.",
    "I've created a support request for you (ticket #SR-55102). A service coordinator will review it and get back to "
    "you within 48 hours.",
])
def test_a_deferral_alone_declines(reply):
    finding = detect_abstention(reply)
    assert finding.abstained and finding.reason == "refusal", (reply, finding)


@pytest.mark.parametrize("reply", [
    # a value of its own: the appointment answers "when will the engineer come?"
    "已为您登记报修，师傅会在周六上午10:00到12:00之间上门，请留意来电。",
    "I've opened a ticket for your repair. The engineer will be with you on 14 March between 8am and noon.",
    # an answer beside the deferral
    "The late fee is $25 per day. I've passed your question on to our billing team in case you want it waived.",
    "押金为500元，退租后7个工作日内原路退回。已为您提交退租申请，管家会与您联系验房。",
])
def test_a_deferral_with_an_answer_or_an_appointment_answers(reply):
    finding = detect_abstention(reply)
    assert not finding.abstained and finding.reason == "partial", (reply, finding)


def test_deferral_spans_are_refusal_spans_of_their_own_kind():
    text = normalise("已为您创建工单，工单号：KD-20931。")
    assert [text[s:e] for s, e in deferral_spans(text)] == ["已为您创建"]
    assert deferral_spans(normalise("The refund was processed on 3 May.")) == []


@pytest.mark.parametrize("clause,talk", [
    ("门店经理会在48小时内与您联系", True), ("A service coordinator will review it", True),
    ("You'll receive an email at the address on file", True), ("the current wait time is about 6 minutes", True),
    ("编号#88120", True), ("Your request has been logged", True),
    ("门店在48小时内完成退款", False), ("You'll receive a refund of $40", False), ("The course lasts 6 minutes", False),
])
def test_the_service_talking(clause, talk):
    assert service_talk(normalise(clause)) is talk, clause


def test_a_ticket_and_its_promise_state_no_value_but_an_appointment_does():
    assert not states_value("您的问题已记录，编号#30418，我们会在3个工作日内通过短信回复您。")
    assert not states_value("Your request has been logged (ref. CR-55012). An officer will email you within 3 days.")
    assert states_value("已为您登记报修，师傅会在周六上午10:00到12:00之间上门。")


@pytest.mark.parametrize("reply,abstained", [
    ("我是AI助手，暂时无法获取该小区的物业费标准。建议您咨询物业服务中心。", True),
    ("很抱歉，我是智能客服，无法查询您的社保缴费记录。请登录社保App查看。", True),
    ("作为人工智能助手，我无法提供实时的航班动态。", True),
    ("该小区暂时无法提供车位租赁，车位已全部售出。", False),   # a worldly subject: an answer
    ("网上暂时无法办理，需要本人到窗口办理。", False),
])
def test_a_self_introduced_speaker(reply, abstained):
    assert detect_abstention(reply).abstained is abstained, reply


@pytest.mark.parametrize("reply,abstained", [
    ("我手头的收费标准是2020年的，可能已经调整，为避免误导，暂不提供具体金额，请以官网公布的为准。", True),
    ("资料版本较旧，所以先不给您报价，建议直接致电门店确认。", True),
    ("我查到的两份通知说法不一致，其中一份是2018年的旧规定，我无法确定现在按哪个执行，建议咨询社保经办机构。", True),
    ("I found two conflicting figures and the newer notice is dated March 2021, so I can't confirm the current fee. "
     "Please check the council's website.", True),
    ("本店暂不提供外卖服务，只能堂食。", False),
    ("新规定取代了2019年的旧规定，现在每人每年最多报销3000元。", False),
])
def test_withheld_figures_and_old_or_conflicting_sources(reply, abstained):
    assert detect_abstention(reply).abstained is abstained, reply


# --- bare refusals to disclose, addresses, "someone will answer you", negated commands (2026-12-07) ----------------
@pytest.mark.parametrize("reply", ["无法提供。", "抱歉，不便透露。", "不能告诉您这个信息。", "Unable to share that.",
                                   "Sorry, we cannot provide that information.", "Not able to help with that."])
def test_a_bare_refusal_to_disclose_declines(reply):
    finding = detect_abstention(reply)
    assert finding.abstained and finding.reason == "refusal", (reply, finding)


@pytest.mark.parametrize("reply", [
    "无法提供发票。",                                   # an object of its own: "Can I get an invoice?" -- "No."
    "本店暂不提供外卖服务。",
    "We cannot provide refunds for opened software.",
    "The heater cannot provide more than 2 kW.",
    "不能。",
])
def test_a_refusal_with_an_object_of_its_own_answers(reply):
    assert not detect_abstention(reply).abstained, reply


def test_the_dots_of_an_address_end_no_sentence():
    """"发邮件到hr@example.com询问" is one referral, not a referral and a sentence "com询问" with content."""
    assert normalise("请发邮件到hr@example.com询问。") == "请发邮件到hr@example_com询问。"
    assert normalise("See www.example.org/help. Then call.") == "See www_example_org/help. Then call."
    reply = "目前我手头的资料里没有这项规定，建议您发邮件到benefits@example.com咨询。"
    assert detect_abstention(reply).abstained, reply
    answer = "Forward it to abuse@example.net, then change your password: the IT policy requires it within 24 hours."
    assert not detect_abstention(answer).abstained, answer


def test_someone_who_will_answer_you_is_the_service_talking():
    assert service_talk(normalise("建议您拨打服务热线咨询，会有专人为您解答。"))
    assert not service_talk(normalise("会员卡每年10月1日续费，逾期作废。"))


@pytest.mark.parametrize("reply", ["Don't reply or click anything; report the email to the service desk.",
                                   "Do not answer calls that ask for your PIN."])
def test_a_negated_command_is_advice_not_a_refusal(reply):
    assert not detect_abstention(reply).abstained, reply
    assert detect_abstention("Sorry, I can't answer that.").abstained


# --- a transfer under way, a request noted, a figure withheld "to avoid misleading you", where the information
# appears (2026-12-07, fifth session) -----------------------------------------------------------------------------
@pytest.mark.parametrize("reply", [
    "I'm going to transfer you to our claims team now. Expected wait: about 4 minutes.",
    "We'll connect you with a specialist shortly - please stay on the line.",
    "正在为您转接售后专员，请稍候，前面还有3位用户在排队。",
    "正在为您转接人工客服，当前排队人数：12人，预计等待时间8分钟。",
    "I've noted your request, and someone from the lettings office will call you back within 2 working days (ref. "
    "LO-5531).",
    "我们已经记录了您的需求，专员会在两个工作日内联系您。",
    "手头的收费标准是三年前的，为避免误导你，暂不提供具体金额，请以物业最新公示为准。",
])
def test_a_transfer_a_request_noted_or_a_figure_withheld_declines(reply):
    finding = detect_abstention(reply)
    assert finding.abstained and finding.reason == "refusal", (reply, finding)


@pytest.mark.parametrize("reply", [
    "The fee is $40. If you need more help, I'll connect you with an agent.",          # answered, then handed over
    "正在为您转接人工客服，维修师傅明天上午9点上门。",                                      # an appointment of its own
    "I've noted your request: your new plan starts on 1 June at $35 a month.",
    "为避免误导您，先说明一下：年费是300元，不含押金。",                                     # a caveat, then the answer
])
def test_beside_an_answer_or_an_appointment_they_answer(reply):
    assert not detect_abstention(reply).abstained, reply


def test_where_the_information_appears_is_no_content_but_what_it_says_is():
    """"The council publishes the new fees each April" points to the answer, as a referral does; a fact in the same
    sentence ("Last year's fee was $40") is still an answer's."""
    refusal = "I couldn't find the 2025 fee schedule in the documents. The council publishes the new fees each April."
    assert detect_abstention(refusal).abstained, refusal
    assert detect_abstention("资料里没有找到今年的补贴标准，新标准会在官网公布。").abstained
    partial = ("I couldn't find this year's fee schedule in the documents. Last year's fee was $40, and the council "
               "publishes the new fees each April.")
    assert detect_abstention(partial).reason == "partial", partial


def test_a_bare_domain_is_an_address():
    """"power.example.com/outages" has dots that end no sentence, as an e-mail's or a www address's do; an error
    message that points to one (a provider's help centre) is still an error."""
    assert normalise("The map at power.example.com/outages. Then call.") == "The map at power_example_com/outages. Then call."
    error = ("The model is currently overloaded with other requests. You can retry your request, or contact us "
             "through our help center at help.example.com if the error persists.")
    assert detect_abstention(error).reason == "error_reply", error


# --- a contact promised, a request noted with its object first, passive publication, what it depends on; why no
# answer is given, a promise to tell later, a sign-off (2026-12-07, sixth session: splits 45-48) ---------------------
@pytest.mark.parametrize("reply", [
    "Please log the fault in the facilities portal and a maintenance engineer will contact you.",
    "Thanks - one of our mortgage advisers will be in touch.",
    "Someone from the payroll office will get in touch about this.",
    "您的报修我们已经登记了，稍后会有物业工程师联系您。",
    "您的申请，我这边已经记下了，顾问会尽快联系您。",
    "I don't have this year's opening dates. They are usually announced on the museum's website.",
    "It depends on which scheme you joined. Different schemes have different rules, so please ask your HR partner.",
    "I'm not able to confirm the deposit amount: the tenancy guide and the 2022 fee sheet quote different figures.",
    "我查到的资料说法不一，其中部分文档已经过时，暂时无法回答您的问题。",
    "I can't tell you whether the appeal will succeed, because every appeal is considered on its own merits.",
    "抱歉，供应商报价属于公司内部保密信息，我无法提供。",
    "目前还没有查到相关安排，后续如有消息会及时通知您。",
    "I couldn't find anything about parking in what I have. Enjoy your visit!",
])
def test_a_contact_promised_a_pointer_or_a_reason_for_no_answer_declines(reply):
    finding = detect_abstention(reply)
    assert finding.abstained and finding.reason == "refusal", (reply, finding)


@pytest.mark.parametrize("reply", [
    "The replacement card costs $10. A specialist will contact you if it has not arrived in 7 days.",
    "工程师会在明天下午2点到4点之间上门，稍后会有客服联系您确认。",
    "I don't have next year's dates. This year's results were announced on 3 March and the fee was $25.",
    "It depends on the plan: basic plans include 2 guest passes, and different plans have different rules for "
    "the rest.",
    "The two branches list different opening times: 9am in Leeds and 10am in York.",   # the values themselves
    "您的驾驶证已经过期，需要先办理换证。",                                                # a fact about the user's document
    "Each application is assessed individually, and the fee is $120 whatever the outcome.",
    "I couldn't find the 2026 rate, but the 2025 rate is 4.1%. Enjoy your day!",
])
def test_beside_a_fact_or_an_appointment_they_still_answer(reply):
    assert not detect_abstention(reply).abstained, reply
