"""The pure parts of ``benchmarks/judge_ceiling.py``: which rule decided a claim, read from the real judge's
verdicts, and the two ranking figures it prints, recomputed by hand and by scikit-learn."""
from __future__ import annotations

import numpy as np
import pytest
from benchfiles import load_benchmark

from evalkit.judges.offline import OfflineJudge

ceiling = load_benchmark("judge_ceiling")
EVIDENCE = [("fees", "The standard callout fee is £85 on weekdays and £125 at weekends."),
            ("pets", "Pets are not allowed in the cabins.")]


@pytest.mark.parametrize("answer, rules", [
    ("The weekday callout costs £97.", ["unsupported: number not in evidence: another value stated"]),
    ("You pay 85 + 125 = 300 in total.", ["unsupported: its own arithmetic"]),
    ("Pets are allowed in the cabins.", ["unsupported: evidence negated, claim not"]),
    ("Dr Mallory Finch approves every callout.", ["unsupported: entity not in evidence: other",
                                                  "unsupported: an added sentence"]),
    ("The weekend callout is £125.", ["supported"]),
])
def test_each_claim_is_filed_under_the_rule_that_decided_it(answer, rules):
    r = OfflineJudge().judge("What does a callout cost?", answer, EVIDENCE)
    got = [("unsupported: " if c.verdict == "unsupported" else "") + name for c in r.claims
           for name in ceiling.rule_of(c)]
    assert got == rules, [c.reason for c in r.claims]


def test_errors_caught_at_a_false_alarm_rate_by_hand():
    correct = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0])  # 10 correct answers
    wrong = np.array([0.95, 0.85, 0.75, 0.65])
    scores, is_wrong = np.concatenate([correct, wrong]), np.array([False] * 10 + [True] * 4)
    # 10% of 10 correct: one may lie above the cut (0.9), so the cut is 0.8: 0.95 and 0.85 are above it
    assert ceiling.caught_at(scores, is_wrong, 0.10) == 0.5
    assert ceiling.caught_at(scores, is_wrong, 0.0) == 0.25   # nothing correct above: the cut is 0.9
    assert ceiling.caught_at(scores, is_wrong, 0.25) == 0.75  # two above (floor of 2.5): the cut is 0.7
    assert ceiling.caught_at(scores, is_wrong, 1.0) == 1.0


def test_auc_is_scikit_learns():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(7)
    scores = rng.integers(0, 5, 200).astype(float)  # many ties: they count half
    wrong = rng.random(200) < 0.3
    assert ceiling.auc(scores, wrong) == pytest.approx(roc_auc_score(wrong, scores), abs=1e-12)
