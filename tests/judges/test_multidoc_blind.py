"""The offline judge on multi-document cases written blind to its rules
(tests/judges/data/judge_multidoc_blind.jsonl), and the held-out figures the report quotes.

Four sets of 96 cases (24 scenarios each, 12 en / 12 zh; 3 correct wordings and 1 planted
error per scenario), each written by a helper that had read neither the judge nor any case
set. The first two are the dev split: the rules were changed on them (false alarms 72 of 144
-> 16). The last two are the test split, each measured once on the final rules: 96 of 144
correct answers flagged before the work, 87 after. The rules fit the wordings they were
written on and carry over little: most of what is left are values an answer computes from the
evidence (products, sums, ages from dates, conversions) that no rule derives.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.analysis.report import judge_notes
from evalkit.judges.offline import HELD_OUT, OfflineJudge
from evalkit.judges.scoring import load_cases, predict
from evalkit.records import EvalSetRef, RunSummary, VariantSummary

DATA = Path(__file__).resolve().parent / "data" / "judge_multidoc_blind.jsonl"


def _rows() -> list[dict]:
    return [json.loads(x) for x in DATA.read_text(encoding="utf-8").splitlines() if x.strip()]


def _counts(split: str) -> tuple[int, int, int, int]:
    """(correct answers flagged, correct answers, planted errors flagged, planted errors)."""
    ids = {r["id"] for r in _rows() if r["split"] == split}
    preds = predict(OfflineJudge(), [c for c in load_cases(DATA) if c.id in ids])
    correct = [p for p in preds if p.case.label == "supported"]
    wrong = [p for p in preds if p.case.label != "supported"]
    return sum(bool(p.flagged) for p in correct), len(correct), sum(bool(p.flagged) for p in wrong), len(wrong)


def test_the_case_file_is_well_formed():
    rows = _rows()
    assert len(rows) == 384 and len({r["id"] for r in rows}) == 384
    assert {r["split"] for r in rows} == {"dev", "test"}
    dev, test = ({r["scenario"] for r in rows if r["split"] == s} for s in ("dev", "test"))
    assert not dev & test
    for r in rows:
        assert r["lang"] in ("en", "zh") and 2 <= len(r["evidence"]) <= 3
        assert (r["label"] == "supported") == (r["error_type"] is None)


def test_the_held_out_figures_the_report_quotes_are_what_the_judge_does():
    flagged, n_correct, caught, n_wrong = _counts("test")
    assert (HELD_OUT.flagged, HELD_OUT.n_correct, HELD_OUT.caught, HELD_OUT.n_wrong) == (flagged, n_correct, caught,
                                                                                          n_wrong)


@pytest.mark.parametrize("judge", ["offline/v9:cov=0.35", None, "llm/v3:gpt"])
def test_the_answers_table_quotes_them_for_the_offline_judge_only(judge):
    v = VariantSummary(metrics={"hallucination_rate": 0.2}, n_failed=0, n_queries=1, n_excluded=0,
                       judge=judge)
    notes = judge_notes(RunSummary(eval_set=EvalSetRef("e", 1, "x", 1), variants={"a": v}))
    if judge is None or not judge.startswith("offline/"):
        assert notes == []
        return
    flagged, n_correct, caught, n_wrong = _counts("test")
    assert f"flagged {flagged / n_correct:.0%} of {n_correct} correct answers" in notes[0]
    assert f"{caught / n_wrong:.0%} of {n_wrong} planted errors" in notes[0] and "offline/v9" in notes[0]


def test_the_dev_split_keeps_what_the_rules_reached():
    flagged, n_correct, caught, n_wrong = _counts("dev")
    assert (n_correct, n_wrong) == (144, 48)
    assert flagged <= 16 and caught >= 44, (flagged, caught)
