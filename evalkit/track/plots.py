"""The top-1 rerank score histograms, the figure logged with each variant's run.

One figure per variant, ``rerank_top1.png``, drawn once, with two panels over
``QueryResult.rerank_top1`` (the rerank score of the first document after rerank;
``None`` when the variant has no rerank node or the query failed before it):

- *by hit@5*: answerable queries, split by ``hit@5`` (a gold document in the top 5 of the
  reranked list) against a miss. A query without a ``hit@5`` metric (e.g. it failed) is
  left out.
- *by answerability*: answerable (gold ids present) against unanswerable (empty
  ``gold_doc_ids``) queries.

These are the pictures behind a rerank-score threshold: if the hit and miss (or the
answerable and unanswerable) histograms overlap, no threshold separates them.

A panel with no scores to draw is left out, and the reason is returned as a note; with
neither, no figure is written. matplotlib is imported inside the function (once per
process; Python keeps the module) and drawn on the Agg canvas directly (no ``pyplot``),
so there is no global figure state and no GUI backend is ever chosen.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evalkit.records import QueryResult

FIGURE = "rerank_top1.png"
BINS = 20


def split_by_hit(results: Sequence[QueryResult], metric: str = "hit@5") -> tuple[list[float], list[float]]:
    """Top-1 rerank scores of answerable queries: ``(hits, misses)`` by ``metric`` (> 0 is a hit)."""
    hits: list[float] = []
    misses: list[float] = []
    for r in results:
        value = r.metrics.get(metric)
        if not r.gold_doc_ids or r.rerank_top1 is None or value is None:  # None: the metric is undefined here
            continue
        (hits if value > 0 else misses).append(float(r.rerank_top1))
    return hits, misses


def split_by_answerable(results: Sequence[QueryResult]) -> tuple[list[float], list[float]]:
    """Top-1 rerank scores split into ``(answerable, unanswerable)`` queries."""
    answerable: list[float] = []
    unanswerable: list[float] = []
    for r in results:
        if r.rerank_top1 is None:
            continue
        (answerable if r.gold_doc_ids else unanswerable).append(float(r.rerank_top1))
    return answerable, unanswerable


def rerank_histograms(results: Sequence[QueryResult], out_dir: Path, title: str = "") -> tuple[list[Path], list[str]]:
    """Write ``rerank_top1.png`` (both panels, or the one that has scores) into ``out_dir``.

    Returns:
        ``(written PNG paths, notes)``; a note says why a panel (or the figure) was skipped.
    """
    panels: list[tuple[str, list[tuple[str, list[float]]]]] = []
    notes: list[str] = []
    hits, misses = split_by_hit(results)
    if hits or misses:
        panels.append(("answerable queries, by hit@5", [("hit@5", hits), ("miss (no gold in top 5)", misses)]))
    else:
        notes.append("panel 'by hit@5' skipped: no answerable query has both a top-1 rerank score and hit@5")
    answerable, unanswerable = split_by_answerable(results)
    if answerable or unanswerable:
        panels.append(("by answerability", [("answerable", answerable), ("unanswerable", unanswerable)]))
    else:
        notes.append(f"{FIGURE} skipped: no query has a top-1 rerank score (no rerank node?)")
    if not panels:
        return [], notes
    return [_figure(Path(out_dir) / FIGURE, panels, title)], notes


def _figure(path: Path, panels: list[tuple[str, list[tuple[str, list[float]]]]], title: str) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.0 * len(panels), 3.8), dpi=90)
    FigureCanvasAgg(fig)
    fig.suptitle(f"{title}: top-1 rerank score" if title else "top-1 rerank score", fontsize=10)
    for i, (name, groups) in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), i + 1)
        values = [v for _, vs in groups for v in vs]
        edges = np.histogram_bin_edges(np.asarray(values, dtype=float), bins=BINS)
        for label, vs in groups:
            ax.hist(vs, bins=edges.tolist(), alpha=0.55, label=f"{label} (n={len(vs)})")
        ax.set_xlabel("top-1 rerank score", fontsize=8)
        ax.set_ylabel("queries", fontsize=8)
        ax.set_title(name, fontsize=9)
        ax.legend(fontsize=7)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.14, top=0.84, wspace=0.25)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path
