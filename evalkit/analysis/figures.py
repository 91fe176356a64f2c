"""The figures analysis commands draw, returned as PNG bytes.

matplotlib is imported inside each function and draws on the Agg canvas directly (no
``pyplot``): no global figure state, no GUI backend. Every function returns the PNG
bytes, so callers decide whether to write a file, embed base64 in HTML, or log to MLflow.
"""
from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

BINS = 20
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


def _figure(width: float = 6.4, height: float = 4.0) -> tuple[Any, Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot(1, 1, 1)


def _png(fig: Any) -> bytes:
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def score_histogram(groups: Sequence[tuple[str, Sequence[float]]], title: str,
                    lines: Sequence[tuple[str, float]] = (), xlabel: str = "top-1 rerank score") -> bytes:
    """Overlaid histograms on shared bins, with labelled vertical lines (thresholds)."""
    import numpy as np

    values = [v for _, vs in groups for v in vs] + [x for _, x in lines]
    edges = np.histogram_bin_edges(np.asarray(values or [0.0], dtype=float), bins=BINS)
    fig, ax = _figure()
    for (label, vs), color in zip(groups, COLORS):
        if len(vs):
            ax.hist(list(vs), bins=edges, alpha=0.5, color=color, label=f"{label} (n={len(vs)})")
    for (label, x), style in zip(lines, ("-", "--", ":", "-.")):
        ax.axvline(x, color="black", linestyle=style, linewidth=1.2, label=f"{label} = {x:.4f}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("queries")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    return _png(fig)


def roc_figure(fpr: Sequence[float], tpr: Sequence[float], auc: float, point: tuple[float, float] | None,
               title: str) -> bytes:
    """ROC curve of the abstention rule with the chosen operating point."""
    fig, ax = _figure(4.8, 4.4)
    ax.plot(fpr, tpr, color=COLORS[0], drawstyle="steps-post", label=f"abstain when score < t (AUC {auc:.3f})")
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1, label="chance")
    if point is not None:
        ax.plot([point[0]], [point[1]], "o", color=COLORS[3], label="chosen t")
    ax.set_xlabel("false positive rate (share of negatives abstained on)")
    ax.set_ylabel("true positive rate (abstention recall)")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    return _png(fig)


def pr_figure(recall: Sequence[float], precision: Sequence[float], base_rate: float,
              point: tuple[float, float] | None, title: str) -> bytes:
    """Precision-recall curve of abstention with the chosen operating point and the base rate."""
    fig, ax = _figure(4.8, 4.4)
    ax.plot(recall, precision, color=COLORS[0], marker=".", markersize=3, label="abstain when score < t")
    ax.axhline(base_rate, color="grey", linestyle=":", linewidth=1, label=f"share of positives {base_rate:.3f}")
    if point is not None:
        ax.plot([point[0]], [point[1]], "o", color=COLORS[3], label="chosen t")
    ax.set_xlabel("abstention recall")
    ax.set_ylabel("abstention precision")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="lower left")
    return _png(fig)


def metric_bars(variants: Sequence[str], metrics: Sequence[str], means: dict[tuple[str, str], float],
                intervals: dict[tuple[str, str], tuple[float, float]], title: str) -> bytes:
    """Grouped bars: one group per metric, one bar per variant, with confidence-interval error bars."""
    import numpy as np

    fig, ax = _figure(max(6.4, 1.4 * len(metrics) + 2), 4.0)
    width = 0.8 / max(1, len(variants))
    x = np.arange(len(metrics))
    for i, (v, color) in enumerate(zip(variants, COLORS * 10)):
        ys = [means.get((v, m), np.nan) for m in metrics]
        err = [[max(0.0, y - intervals.get((v, m), (y, y))[0]) for m, y in zip(metrics, ys)],
               [max(0.0, intervals.get((v, m), (y, y))[1] - y) for m, y in zip(metrics, ys)]]
        ax.bar(x + (i - (len(variants) - 1) / 2) * width, ys, width, yerr=err, capsize=2, color=color, label=v)
    ax.set_xticks(x)
    ax.set_xticklabels(metrics, fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    return _png(fig)
