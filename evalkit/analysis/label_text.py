"""How judge-corrected estimates read in text: the block ``run``, ``score`` and ``compare`` print
after their tables, and the one line ``evalkit demo`` prints under its answers table."""
from __future__ import annotations

from collections.abc import Sequence

from evalkit.analysis.labels import Corrected


def format_corrected(items: Sequence[Corrected]) -> str:
    """The corrected figures as plain text: per variant and metric, the judge's figure beside the estimate."""
    lines = ["judge-corrected estimates (prediction-powered inference, PPI++; evalkit.analysis.ppi):"]
    for c in items:
        a = c.agreement
        agree = (f"judge vs labels on {a.n}: precision {_f(a.precision)}, recall {_f(a.recall)}, "
                 f"balanced accuracy {_f(a.balanced_accuracy)}") if a else "no hallucination label to compare"
        lines.append(f"  {c.variant}: {c.n_labels} labels; {agree}")
        for metric, e in c.estimates.items():
            lines.append(f"    {metric:20s} judge {c.raw.get(metric, float('nan')):.4f}  corrected {e.estimate:.4f}  "
                         f"{e.confidence:.0%} CI [{e.ci_low:.4f}, {e.ci_high:.4f}]  (n={e.n_labelled} of N={e.n_total})")
        lines += [f"    note: {n}" for n in c.notes]
    return "\n".join(lines)


def corrected_line(c: Corrected, metric: str = "hallucination_rate") -> str | None:
    """One line for a labelled variant: the judge-corrected ``metric`` with its interval, the labels and agreement.

    ``judge-corrected 0.42 [0.27, 0.57] from 31 labels (judge agreement: precision 0.80, recall 0.62)``;
    None when ``metric`` was not corrected (no label in a stratum, labels of mixed rules).
    """
    e = c.estimates.get(metric)
    if e is None:
        return None
    a = c.agreement
    agree = f"precision {_f2(a.precision)}, recall {_f2(a.recall)}" if a else "no hallucination label to compare"
    return (f"judge-corrected {e.estimate:.2f} [{e.ci_low:.2f}, {e.ci_high:.2f}] from "
            f"{e.n_labelled} labels (judge agreement: {agree})")


def _f2(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"
