"""A guard threshold that refuses a larger share of answerable than unanswerable questions is
reported: in `evalkit calibrate` (per rule) and under the run's retrieval table (per variant).
Every count is recomputed here from the hand-made scores."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from click.testing import CliRunner

from evalkit.analysis.calibrate import calibrate, collect, format_calibration
from evalkit.analysis.guard_check import Refusals, cost_note, summary_warnings, warning
from evalkit.analysis.report import comparison_table
from evalkit.cli import cli
from evalkit.records import EvalSetRef, RunSummary, VariantSummary

from .conftest import write_run
from .test_calibrate import _rows

# unanswerable queries score high, answerable ones partly low: a guard at 0.35 stops
# 2 of 5 answerable (0.2, 0.3: 40%) and 1 of 4 unanswerable (0.1: 25%): inverted
UNANSWERABLE = [0.1, 0.5, 0.6, 0.9]
ANSWERABLE = [0.2, 0.3, 0.7, 0.8, 0.85]


def test_refusals_compare_shares_not_counts():
    assert Refusals(2, 5, 1, 4).inverted                      # 40% > 25%
    assert not Refusals(11, 100, 4, 20).inverted               # 11% < 20%: more refused, smaller share
    assert Refusals(11, 100, 2, 20).inverted                   # 11% > 10%
    assert not Refusals(11, 107, 2, 13).inverted               # the demo's relative P10 guard: 10.3% < 15.4%...
    assert cost_note("the guard of p10", Refusals(11, 107, 2, 13)) == (  # ...but it costs 5.5 false refusals each
        "note: the guard of p10 refuses 11 answerable questions (10%) for 2 unanswerable ones (15%): "
        "5.5 false refusals per correct one")
    assert cost_note("g", Refusals(11, 100, 2, 20)) is None      # inverted: the warning says it
    assert cost_note("g", Refusals(2, 100, 2, 20)) is None and cost_note("g", Refusals(3, 100, 0, 20)) is None
    assert not Refusals(1, 4, 1, 4).inverted                   # equal shares: not worse than chance
    assert not Refusals(3, 5, 0, 0).inverted and not Refusals(0, 0, 1, 2).inverted  # nothing to compare
    msg = warning("the guard of v", Refusals(11, 100, 2, 20), "recalibrate")
    assert msg == ("warning: the guard of v refuses more answerable than unanswerable questions: 11 of 100 "
                   "answerable (11%) against 2 of 20 unanswerable (10%); recalibrate")
    assert warning("x", Refusals(1, 100, 2, 20), "fix") is None


def test_calibrate_warns_on_the_current_guard_and_not_on_a_sound_rule():
    s = collect(_rows(UNANSWERABLE, ANSWERABLE, threshold=0.35), "v")
    refused = s.scores < 0.35
    assert (int((refused & s.answerable).sum()), int((refused & ~s.answerable).sum())) == (2, 1)  # by hand above
    c = calibrate(s, n_resamples=100)
    current = [w for w in c.warnings if "current guard" in w]
    assert current == ["warning: the current guard (t = 0.3500) refuses more answerable than unanswerable questions: "
                       "2 of 5 answerable (40%) against 1 of 4 unanswerable (25%); a guard there stops answerable "
                       "questions more readily than unanswerable ones: lower t, or take another rule of the table"]
    for w in c.warnings:  # each warned rule really is inverted, recomputed from the scores
        t = float(w.split("(t = ")[1].split(")")[0])
        a, u = np.sum((s.scores < t) & s.answerable) / 5, np.sum((s.scores < t) & ~s.answerable) / 4
        assert a > u, w
    assert "current guard (t = 0.3500)" in format_calibration([c])
    assert c.to_dict()["warnings"] == c.warnings
    sound = calibrate(collect(_rows([0.1, 0.2, 0.3], [0.5, 0.6, 0.7, 0.8], threshold=0.35), "v"), n_resamples=100)
    assert sound.warnings == [] and "warning" not in format_calibration([sound])


def _summary(rates: dict[str, dict[str, float]], n: int = 120, unanswerable: int = 20) -> RunSummary:
    ref = EvalSetRef(name="demo", version=1, sha256="a" * 64, n_queries=n)
    return RunSummary(eval_set=ref, variants={name: VariantSummary(metrics={"hit@5": 0.8, **m}, n_failed=0,
                                                                    n_queries=n, n_excluded=unanswerable)
                                              for name, m in rates.items()})


def test_the_run_table_names_the_inverted_guard():
    summary = _summary({"p10_guard": {"abstain_rate_answerable": 0.11, "abstain_rate_unanswerable": 0.1},
                        "good_guard": {"abstain_rate_answerable": 0.05, "abstain_rate_unanswerable": 0.6},
                        "costly_guard": {"abstain_rate_answerable": 0.3, "abstain_rate_unanswerable": 0.5},
                        "no_guard": {}})
    notes = summary_warnings(summary)
    assert len(notes) == 2 and "p10_guard" in notes[0] and notes[0].startswith("warning:")
    # costly_guard: 30 of 100 answerable (30%) for 10 of 20 unanswerable (50%): better than chance, 3 each
    assert notes[1] == ("note: the guard of costly_guard refuses 30 answerable questions (30%) for 10 unanswerable "
                        "ones (50%): 3.0 false refusals per correct one")
    assert "11 of 100 answerable (11%) against 2 of 20 unanswerable (10%)" in notes[0]
    assert "evalkit calibrate" in notes[0] and "--variant p10_guard" in notes[0]
    table = comparison_table(summary)
    assert "warning: the guard of p10_guard" in " ".join(table.split())
    assert "good_guard refuses" not in table


def test_calibrate_command_prints_the_warning(tmp_path: Path):
    path = write_run(tmp_path, "run", {"v": _rows(UNANSWERABLE, ANSWERABLE, threshold=0.35)})
    result = CliRunner().invoke(cli, ["calibrate", str(path), "--resamples", "100", "--no-mlflow"])
    assert result.exit_code == 0, result.output
    assert "warning: the current guard (t = 0.3500) refuses more answerable" in " ".join(result.output.split())
