"""A value a list or table of the evidence gives to another item (evalkit.judges.rows), by hand-made cases."""
from __future__ import annotations

import pytest

from evalkit.judges.offline import OfflineJudge
from evalkit.judges.rows import list_rows, misbound
from evalkit.text.values import extract_atoms

RETENTION = ("Telemetry retention by plan\n"
             "Raw device telemetry is kept for a period that depends on the plan:\n"
             "- Free: 7 days\n- Team: 30 days\n- Business: 180 days\n- Enterprise: 365 days\n"
             "After the period ends, the data is deleted.")
WARRANTY = ("Standard warranty\nEvery device ships with a warranty counted from shipment:\n"
            "- LX-200: 24 months\n- LX-300: 24 months\n- LX-200 Pro: 36 months\n")
PRICES = ("价格表\n| SKU | 名称 | 目录价 |\n|---|---|---|\n| LX200P-STD | LX-200 Pro 标准版 | 7,999 元 |\n"
          "| LX200P-5G | LX-200 Pro 5G版 | 8,999 元 |\n")
TIERS = "渠道折扣\n- 银牌：10%；\n- 金牌：15%；\n- 白金：20%。\n年度返利另计。"


def verdict(question: str, answer: str, *texts: str) -> tuple[str, str]:
    r = OfflineJudge().judge(question, answer, [(f"d{i}", t) for i, t in enumerate(texts)])
    worst = next((c for v in ("unsupported", "unverified", "supported", "not_checkable")
                  for c in r.claims if c.verdict == v), None)
    assert worst is not None, r
    return worst.verdict, worst.reason


def check(question: str, claim: str, *texts: str) -> str | None:
    """misbound() for the claim's first value."""
    atoms = extract_atoms(claim)
    atom = next(a for a in atoms if a.kind in ("number", "duration", "date", "time"))
    return misbound(atom, question, claim, atoms, list(texts))


def test_rows_are_list_items_and_table_rows_with_a_value_and_a_label():
    rows = list_rows(RETENTION)
    assert [sorted(r.terms) for r in rows] == [["free"], ["team"], ["busi"], ["enterpris"]]
    assert len({r.list_id for r in rows}) == 1
    table = list_rows(PRICES)
    assert len(table) == 2  # the header has no value, the rule line is no row
    assert table[0].codes and table[0].codes != table[1].codes


def test_another_plans_value_for_the_plan_asked_is_unsupported_and_names_both_rows():
    v, reason = verdict("How long is telemetry data retained on the Business plan?", "365 days.", RETENTION)
    assert v == "unsupported"
    assert "Enterprise: 365 days" in reason and "Business: 180 days" in reason


@pytest.mark.parametrize("question,answer", [
    ("How long is telemetry data retained on the Business plan?", "180 days."),
    ("How long is telemetry retained for a customer on the top plan?", "That is the Enterprise plan, so 365 days."),
    ("How long do the Business and Enterprise plans keep telemetry?", "365 days on Enterprise, 180 on Business."),
    ("How long is telemetry kept?", "Between 7 and 365 days depending on the plan; Enterprise keeps it 365 days."),
])
def test_a_value_taken_from_the_row_the_text_names_is_not_another_items(question, answer):
    v, reason = verdict(question, answer, RETENTION)
    assert "another item" not in reason, (v, reason)


def test_a_label_inside_another_label_the_question_names_is_that_other_item():
    # "LX-200" is part of "LX-200 Pro": asked about the Pro, the LX-200's 24 months are another item's
    v, reason = verdict("How long is the standard warranty for the LX-200 Pro?", "24 months from shipment.", WARRANTY)
    assert v == "unsupported" and "another item" in reason
    assert verdict("How long is the standard warranty for the LX-200 Pro?", "36 months from shipment.",
                   WARRANTY)[0] == "supported"
    # asked about the LX-200, the rows say nothing against 24 months (two rows state it, one is the LX-200's)
    assert verdict("How long is the LX-200's warranty?", "24 months.", WARRANTY)[0] == "supported"


def test_a_table_row_of_another_sku_in_chinese():
    v, reason = verdict("SKU LX200P-5G 的目录价是多少？", "7,999 元（含税）。", PRICES)
    assert v == "unsupported" and "LX200P-STD" in reason
    assert verdict("SKU LX200P-5G 的目录价是多少？", "8,999 元。", PRICES)[0] == "supported"


def test_chinese_tiers():
    assert verdict("2026年金牌渠道合作伙伴的标准折扣是多少？", "20%。", TIERS)[0] == "unsupported"
    assert verdict("2026年金牌渠道合作伙伴的标准折扣是多少？", "金牌伙伴享受 15% 的标准折扣。", TIERS)[0] == "supported"


def test_a_value_running_text_also_states_is_left_to_the_other_checks():
    text = RETENTION + "\nExported reports are kept for 365 days on every plan."
    assert check("How long is telemetry data retained on the Business plan?", "365 days.", RETENTION)
    assert check("How long is telemetry data retained on the Business plan?", "365 days.", text) is None


def test_siblings_must_hold_a_value_of_the_same_kind_and_unit():
    text = "Limits\n- Team: 600 requests per minute\n- Business: 30 days of telemetry\n"
    assert check("What does the Team plan include?", "30 days.", text) is None


def test_two_lists_of_one_passage_are_not_siblings():
    text = "Rate limits\n- Team: 600 requests per minute\n\nRetention\nNotes on retention:\n- Business: 180 days\n"
    assert check("How long does the Team plan keep data?", "180 days.", text) is None


def test_a_long_list_is_read_in_reasonable_time_and_without_error():
    text = "Prices\n" + "\n".join(f"- Model X{i}: {100 + i} USD" for i in range(3000))
    assert check("What does Model X7 cost?", "9,999 USD", text) is None  # stated by no row
    assert "X5:" in (check("What does Model X7 cost?", "105 USD", text) or "")


def test_values_in_running_text_are_no_rows_even_in_a_list_like_sentence():
    # prose with semicolons or "label: value" lines binds too loosely to say whose a value is (measured: correct
    # answers flagged on the multi-document and paraphrase sets when such lines were read as rows)
    prose = ("Parental leave entitlements depend on the employee's region. Employees in Region A receive 16 weeks of "
             "fully paid parental leave; employees in Region B receive 12 weeks.")
    assert check("How many weeks of paid parental leave does an employee at the Lisbon office get?",
                 "Lisbon is in Region B, so employees there get 12 weeks of fully paid parental leave.", prose) is None
    keyed = "Rate limits\nTeam: 600 requests per minute\nBusiness: 3,000 requests per minute\n"
    assert check("What is the rate limit on the Team plan?", "3,000 requests per minute.", keyed) is None
    assert list_rows(prose) == () and list_rows(keyed) == ()
