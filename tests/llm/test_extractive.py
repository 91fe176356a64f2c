"""The ``extractive`` backend: the evidence sentences that answer, with citations (real e5 model)."""
from __future__ import annotations

import re

import pytest

from evalkit.llm import INSUFFICIENT_EVIDENCE, LLMClient, LLMError, LLMSpec
from evalkit.llm.extractive import split_sentences

pytestmark = pytest.mark.integration  # loads real models (SmolLM2 / e5)

EN_EVIDENCE = (
    # hr-001 holds the answer in its second sentence
    ("hr-001", ("The handbook covers leave policies. New employees receive 15 days of paid annual leave per "
                "year. Unused days expire in March.")),
    ("it-004", "Passwords must be rotated every 90 days. VPN access requires version v2.3 of the client."),
    ("fin-002", "Travel expenses are reimbursed within 30 days. Receipts above 3.5 dollars must be attached."),
)
ZH_EVIDENCE = (
    ("fin-010", "差旅费用需在出差结束后提交。报销单须在费用发生后30天内提交，逾期不予受理！发票必须真实有效。"),
    ("hr-020", "新员工入职第一年享有15天带薪年假；年假不可跨年累计。"),
)


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> LLMClient:
    return LLMClient(LLMSpec(backend="extractive", cache="off"), tmp_path_factory.mktemp("extractive"))


def cited(answer: str) -> list[str]:
    return re.findall(r"\[([^\]]+)\]", answer)


@pytest.mark.parametrize("text, sentences", [
    ("退款在30天内处理。需要发票！可以吗？可以；谢谢", ["退款在30天内处理。", "需要发票！", "可以吗？", "可以；", "谢谢"]),
    ("Version v1.2 costs 3.5 dollars. Really? Yes, e.g. this one!", ["Version v1.2 costs 3.5 dollars.", "Really?",
                                                                    "Yes, e.g. this one!"]),
    ("Steps:\n1. Open the app.\n2. Click save.\n\nDone", ["Steps:", "1. Open the app.", "2. Click save.", "Done"]),
    # every line break ends a unit: knowledge-base documents hold one item per line
    ("Default: 3\nAllowed range: 0-10. End", ["Default: 3", "Allowed range: 0-10.", "End"]),
    ("他说：“好的。”然后走了。", ["他说：“好的。”", "然后走了。"]),
    ("系统支持Python 3.11。Press Ctrl+C.然后退出", ["系统支持Python 3.11。", "Press Ctrl+C.", "然后退出"]),
    ("   ", []),
])
def test_split_sentences(text, sentences):
    assert split_sentences(text) == sentences


def test_english_answer_is_the_right_sentence_with_its_citation(client):
    reply = client.chat("q", question="How many days of annual leave do new employees get?", evidence=EN_EVIDENCE)
    first = reply.text.split(" [hr-001]")[0]
    assert first == "New employees receive 15 days of paid annual leave per year."
    assert len(cited(reply.text)) == 2 and cited(reply.text)[0] == "hr-001"


def test_chinese_answer_is_the_right_sentence_with_its_citation(client):
    reply = client.chat("q", question="报销单需要在多少天内提交？", evidence=ZH_EVIDENCE)
    assert reply.text.startswith("报销单须在费用发生后30天内提交，逾期不予受理！ [fin-010]")


def test_codes_and_decimals_stay_whole(client):
    reply = client.chat("q", question="Which VPN client version is required?", evidence=EN_EVIDENCE)
    assert reply.text.startswith("VPN access requires version v2.3 of the client. [it-004]")


def test_empty_evidence_answers_insufficient_evidence(client):
    assert client.chat("q", question="Anything?", evidence=()).text == INSUFFICIENT_EVIDENCE
    assert client.chat("q", question="Anything?", evidence=(("d1", "  \n "),)).text == INSUFFICIENT_EVIDENCE
    assert "无法回答" in INSUFFICIENT_EVIDENCE and "no reliable evidence" in INSUFFICIENT_EVIDENCE


def test_repeated_sentence_counts_once_and_ties_keep_evidence_order(client):
    same = "Refunds are issued within 14 days."
    reply = client.chat("q", question="How fast are refunds issued?",
                        evidence=(("a-1", same), ("b-2", same), ("c-3", "The office opens at 9.")))
    assert reply.text == f"{same} [a-1]\nThe office opens at 9. [c-3]"


def test_question_falls_back_to_the_last_user_message(client):
    reply = client.chat("How many days of annual leave do new employees get?", evidence=EN_EVIDENCE)
    assert cited(reply.text)[0] == "hr-001"


def test_deterministic_and_cached(tmp_path):
    c = LLMClient(LLMSpec(backend="extractive"), tmp_path)
    a = c.chat("q", question="报销单需要在多少天内提交？", evidence=ZH_EVIDENCE)
    b = c.chat("q", question="报销单需要在多少天内提交？", evidence=ZH_EVIDENCE)
    assert a.text == b.text and b.cache_hit
    assert (tmp_path / "embeddings.sqlite").exists()  # sentence vectors are cached too
    assert "extractive/v2" in c.identity
    from evalkit.models.embedders import ModelSpec, embedder_identity

    assert f"e5={embedder_identity(ModelSpec(name='e5'))}|" in c.identity  # the identity names the model that scored the sentences


def test_json_mode_is_refused(client):
    with pytest.raises(LLMError, match="plain text"):
        client.chat("q", question="x", evidence=EN_EVIDENCE, json_mode=True)
