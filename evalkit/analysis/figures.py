"""The figures analysis commands draw, returned as PNG bytes.

matplotlib is imported inside each function and draws on the Agg canvas directly (no
``pyplot``): no global figure state, no GUI backend. Every function returns the PNG
bytes, so callers decide whether to write a file, embed base64 in HTML, or log to MLflow.
"""
from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

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


def variant_colors(names: Sequence[str]) -> dict[str, str]:
    """One distinct colour per variant, in order: tab20's ten dark shades, its ten light ones, then tab20b/c.

    Sixty colours before any repeats; every figure and the HTML tables use this mapping,
    so a variant has the same colour everywhere in a report.
    """
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    tab20 = colormaps["tab20"]
    palette = [to_hex(tab20(i)) for i in (*range(0, 20, 2), *range(1, 20, 2))]
    palette += [to_hex(colormaps[m](i)) for m in ("tab20b", "tab20c") for i in range(20)]
    return {n: palette[i % len(palette)] for i, n in enumerate(names)}


PANEL_COLUMNS = 3
FIGURE_WIDTH_IN = 12.0  # x 100 dpi = 1200 px: shown at its own size in the report, never squeezed


def metric_panels(panels: Sequence[tuple[str, Sequence[str]]], variants: Sequence[str], colors: dict[str, str],
                  means: dict[tuple[str, str], float], intervals: dict[tuple[str, str], tuple[float, float]],
                  labels: dict[str, str] | None = None) -> bytes:
    """Small multiples: one panel per metric family (its metrics on the x axis), one bar per variant.

    Each variant keeps its colour of ``colors`` in every panel; one legend for all (the
    caption is the page's: no title in the image); ``labels`` are short tick labels. Bars
    show the mean, whiskers the confidence interval; a variant without the metric has no bar.
    1200 px wide, about 280 px per row of three panels.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    rows = max(1, math.ceil(len(panels) / PANEL_COLUMNS))
    legend_rows = math.ceil(len(variants) / 6)
    fig = Figure(figsize=(FIGURE_WIDTH_IN, 0.3 + 0.25 * legend_rows + 2.6 * rows), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, PANEL_COLUMNS, squeeze=False)
    for ax, (family, metrics) in zip(axes.flat, panels):
        present = [v for v in variants if any((v, m) in means for m in metrics)]
        width = 0.8 / max(1, len(present))
        for i, v in enumerate(present):
            xs, ys, lo, hi = [], [], [], []
            for j, m in enumerate(metrics):
                if (v, m) not in means:
                    continue
                y = means[(v, m)]
                a, b = intervals.get((v, m), (y, y))
                xs.append(j + (i - (len(present) - 1) / 2) * width)
                ys.append(y)
                lo.append(max(0.0, y - a))
                hi.append(max(0.0, b - y))
            ax.bar(xs, ys, width * 0.92, yerr=[lo, hi], capsize=1.5, color=colors[v], error_kw={"linewidth": 0.8})
        ax.set_xticks(range(len(metrics)))
        ax.set_xticklabels([labels.get(m, m) if labels else m for m in metrics], fontsize=9)
        ax.set_ylim(0, 1.05)
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(axis="y", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
        ax.set_title(family, fontsize=11, loc="left")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.legend(handles=[Patch(color=colors[v], label=v) for v in variants], loc="outside upper center",
               ncol=min(6, len(variants)), fontsize=9, frameon=False)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
