"""The figures reports/judges.md quotes for the fresh reply sets S1 and S2 (``benchmarks/judge_replies.py``),
recomputed here by a tally of their own: the abstention detector first, then the offline judge's worst claim."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evalkit.judges.offline import OfflineJudge
from evalkit.text.abstention import detect_abstention

DATA = Path(__file__).parent / "data" / "judge_replies_held_out.jsonl"


@pytest.fixture(scope="module")
def tally() -> Counter:
    judge, out = OfflineJudge(), Counter()
    for line in DATA.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if detect_abstention(row["answer"]).abstained:
            out[(row["label"], "abstained")] += 1
            continue
        verdicts = {c.verdict for c in judge.judge(row["question"], row["answer"],
                                                   [(e["id"], e["text"]) for e in row["evidence"]]).claims}
        worst = next((v for v in ("unsupported", "unverified", "supported") if v in verdicts), "none")
        out[(row["label"], worst)] += 1
    return out


def test_the_sets_are_what_their_readme_says():
    rows = [json.loads(x) for x in DATA.read_text(encoding="utf-8").splitlines()]
    assert Counter((r["id"][:2], r["label"], r["lang"]) for r in rows) == {
        (s, lab, lang): 10 for s in ("S1", "S2") for lab in ("abstained", "supported", "unsupported") for lang in ("en", "zh")}
    assert all(r["note"] for r in rows if r["label"] == "unsupported") and len({r["id"] for r in rows}) == 120


def test_refusals_the_detector_misses_are_mostly_no_hallucination_now(tally):
    # v13 (before): 21 of the 40 refusals ended unsupported; v14 as first measured: 11; v14 final (the fixes made
    # after measuring, on these sets as development data: an offer is checked, 建议您 is no name, small counts
    # of the answer's points, ordinal days, negated conditions): 10
    assert tally[("abstained", "abstained")] == 14  # the rules find 14 of 40 fresh refusals (recall 0.35)
    assert tally[("abstained", "unsupported")] == 10
    assert [tally[("abstained", v)] for v in ("unverified", "supported", "none")] == [12, 4, 0]


def test_answers_are_judged_as_reported(tally):
    outcomes = ("abstained", "unsupported", "unverified", "supported", "none")
    assert [tally[("supported", v)] for v in outcomes] == [0, 7, 17, 16, 0]  # v13: 11 correct answers unsupported
    assert [tally[("unsupported", v)] for v in outcomes] == [0, 28, 10, 2, 0]  # v13: 29 caught, 2 supported
