"""Whether a guard threshold refuses the wrong questions: the warning the run table and
``evalkit calibrate`` print.

A guard exists to stop unanswerable questions. A threshold that stops a larger *share* of
the answerable questions than of the unanswerable ones does worse than chance at its own
job: a *warning*, with the fix. The comparison is of shares: eval sets hold far more
answerable questions. A guard that is better than chance yet stops more answerable
questions than unanswerable ones in number (on the demo the relative P10 rule of the
module-graph design stopped 11 of 107 answerable and 2 of 13 unanswerable questions) gets a
*note* under the run table saying what each correct refusal costs.
"""
from __future__ import annotations

from dataclasses import dataclass

from evalkit.records import RunSummary

RATE_ANSWERABLE, RATE_UNANSWERABLE = "abstain_rate_answerable", "abstain_rate_unanswerable"


@dataclass(frozen=True)
class Refusals:
    """How many answerable and unanswerable questions one guard threshold refused, of how many."""

    answerable: int
    n_answerable: int
    unanswerable: int
    n_unanswerable: int

    @property
    def inverted(self) -> bool:
        """True when the share of answerable questions refused exceeds the share of unanswerable ones."""
        if not self.n_answerable or not self.n_unanswerable:
            return False
        return self.answerable / self.n_answerable > self.unanswerable / self.n_unanswerable


def warning(who: str, r: Refusals, fix: str) -> str | None:
    """The warning for an inverted guard (None when it is not): counts, shares and what to do."""
    if not r.inverted:
        return None
    return (f"warning: {who} refuses more answerable than unanswerable questions: {r.answerable} of "
            f"{r.n_answerable} answerable ({r.answerable / r.n_answerable:.0%}) against {r.unanswerable} of "
            f"{r.n_unanswerable} unanswerable ({r.unanswerable / r.n_unanswerable:.0%}); {fix}")


def cost_note(who: str, r: Refusals) -> str | None:
    """The note for a guard better than chance that still refuses more answerable than unanswerable
    questions in number: how many false refusals each correct one costs."""
    if r.inverted or not r.unanswerable or r.answerable <= r.unanswerable:
        return None
    return (f"note: {who} refuses {r.answerable} answerable questions ({r.answerable / r.n_answerable:.0%}) for "
            f"{r.unanswerable} unanswerable ones ({r.unanswerable / r.n_unanswerable:.0%}): "
            f"{r.answerable / r.unanswerable:.1f} false refusals per correct one")


def summary_warnings(summary: RunSummary) -> list[str]:
    """Per variant of a finished run whose guard refuses more answerable than unanswerable questions (from
    its abstention rates): a warning when by share (worse than chance), else a note when by number."""
    out = []
    for name, v in summary.variants.items():
        if RATE_ANSWERABLE not in v.metrics or RATE_UNANSWERABLE not in v.metrics:
            continue
        n_ans = v.n_queries - v.n_excluded
        r = Refusals(round(v.metrics[RATE_ANSWERABLE] * n_ans), n_ans,
                     round(v.metrics[RATE_UNANSWERABLE] * v.n_excluded), v.n_excluded)
        msg = warning(f"the guard of {name}", r, "lower its threshold, or recalibrate it with `evalkit calibrate "
                      f"<this run's summary JSON> --variant {name}`")
        msg = msg or cost_note(f"the guard of {name}", r)
        if msg:
            out.append(msg)
    return out
