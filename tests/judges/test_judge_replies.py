"""The figures reports/judges.md quotes for the fresh reply sets S1 to S6 (``benchmarks/judge_replies.py``),
recomputed here by a tally of their own: the abstention detector first (the default: the rules, then the learned
stage), then the offline judge's worst claim."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evalkit.judges.offline import OfflineJudge
from evalkit.models.abstention import DEFAULT, detect

DATA = Path(__file__).parent / "data" / "judge_replies_held_out.jsonl"


@pytest.fixture(scope="module")
def tallies() -> dict[str, Counter]:
    """Per pair of sets (each measured one round of judge v14 once, then development data of the next; ``S5+S6``
    measured the last), the count of (label, outcome)."""
    judge, out = OfflineJudge(), {"S1+S2": Counter(), "S3+S4": Counter(), "S5+S6": Counter()}
    for line in DATA.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        pair = {"S1": "S1+S2", "S2": "S1+S2", "S3": "S3+S4", "S4": "S3+S4"}.get(row["id"][:2], "S5+S6")
        if detect(row["answer"], model=DEFAULT).abstained:
            out[pair][(row["label"], "abstained")] += 1
            continue
        verdicts = {c.verdict for c in judge.judge(row["question"], row["answer"],
                                                   [(e["id"], e["text"]) for e in row["evidence"]]).claims}
        worst = next((v for v in ("unsupported", "unverified", "supported") if v in verdicts), "none")
        out[pair][(row["label"], worst)] += 1
    return out


OUTCOMES = ("abstained", "unsupported", "unverified", "supported", "none")


def test_the_sets_are_what_their_readme_says():
    rows = [json.loads(x) for x in DATA.read_text(encoding="utf-8").splitlines()]
    assert Counter((r["id"][:2], r["label"], r["lang"]) for r in rows) == {
        (s, lab, lang): 10 for s in ("S1", "S2", "S3", "S4", "S5", "S6")
        for lab in ("abstained", "supported", "unsupported") for lang in ("en", "zh")}
    assert all(r["note"] for r in rows if r["label"] == "unsupported") and len({r["id"] for r in rows}) == 360


def test_sets_s5_s6(tallies):
    # measured once with v14 final (d1bd2b9); v13 on the same replies: refusals 13 unsupported, correct answers 11,
    # errors 26 caught and 3 supported; v14's second round: 12, 11, 26
    t = tallies["S5+S6"]
    # the rules alone find 17 of 40 refusals ([17, 10, 10, 3, 0]); with the learned stage, on by default since 2026-12-06:
    # ([24, 8, 8, 0, 0] with the weights fitted on dev to 22; [26, 8, 6, 0, 0] on dev to 26; dev to 28 since 2026-12-07)
    # deferrals, questions back, what it depends on and withheld figures read, the stage refitted (2026-12-07): was
    # [27, 8, 5, 0, 0]
    assert [t[("abstained", v)] for v in OUTCOMES] == [28, 7, 5, 0, 0]
    # v17-v19 (readings found on other sets): one correct answer of S5 no longer unsupported
    assert [t[("supported", v)] for v in OUTCOMES] == [0, 9, 15, 16, 0]
    # "It depends on your membership level." is no claim since the abstention rules of 2026-12-06 ("it depends" in
    # place of an answer): S5-en-27's one unverified sentence goes, and the error in its other sentences is missed
    assert [t[("unsupported", v)] for v in OUTCOMES] == [0, 26, 10, 4, 0]


def test_sets_s3_s4(tallies):
    # measured once with v14's second round (c33e2f4): refusals 15 unsupported, correct answers 8, errors 23 caught
    # and 5 supported (v13: 19, 10, 23, 5); then development data of the third round (referrals, lead-ins, sentences
    # of clauses that assert nothing)
    t = tallies["S3+S4"]
    # the rules alone find 14 of 40 refusals ([14, 7, 9, 7, 3]); with the learned stage (the default):
    # ([21, 5, 8, 5, 1] with the weights fitted on dev to 22)
    # deferrals, questions back ... (2026-12-07): was [26, 4, 5, 4, 1]
    assert [t[("abstained", v)] for v in OUTCOMES] == [27, 4, 5, 4, 0]
    # v15: one correct answer unverified -> supported (S3-zh-16: "60至69周岁" is an age in years since v15, no
    # longer weeks, and its 60 now grounds the answer's 60元 with the evidence's half of 120元)
    # v23: S4-zh-19's "一次最多用300积分" is reached in two steps, (100 积分 x 3 h) / 1 h: unverified, no longer unsupported
    assert [t[("supported", v)] for v in OUTCOMES] == [1, 7, 14, 18, 0]
    assert [t[("unsupported", v)] for v in OUTCOMES] == [0, 23, 12, 5, 0]


def test_sets_s1_s2(tallies):
    # v13: refusals 21 unsupported, correct answers 11, errors 29 caught; v14's first round, measured once: 11, 10, 28;
    # then development data (second round: 10, 7, 28; third round, below: 9, 7, 28)
    t = tallies["S1+S2"]
    # the rules alone: [14, 9, 12, 5, 0]; the weights fitted on dev to 22: [20, 8, 7, 5, 0]; judge v21: a refusal
    # that states what the passages say, "..., but I can't tell ...", is supported for what it states (was unverified)
    # ([22, 6, 6, 6, 0] with the weights fitted on dev to 26; dev to 28 since 2026-12-07)
    # deferrals, questions back ... (2026-12-07): was [27, 5, 6, 2, 0]
    assert [t[("abstained", v)] for v in OUTCOMES] == [29, 5, 5, 1, 0]
    # the weights fitted on dev to 26 read one correct answer of S2 as a refusal (it was unverified); on dev to 28, not
    # judge v24: S2-en-13's plain "GBP 128" (4 hours at GBP 32) is finer than any GBP value of its passages: was
    # [0, 7, 17, 16, 0]
    assert [t[("supported", v)] for v in OUTCOMES] == [0, 6, 18, 16, 0]
    assert [t[("unsupported", v)] for v in OUTCOMES] == [0, 28, 10, 2, 0]
