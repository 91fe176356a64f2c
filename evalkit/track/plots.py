"""Histograms of the top-1 rerank score, the figures logged with each variant's run.

Two figures, both over ``QueryResult.rerank_top1`` (the rerank score of the first
document after rerank; ``None`` when the variant has no rerank node or the query failed
before it):

- ``rerank_top1_by_hit5.png``: answerable queries, split by ``hit@5`` (a gold document
  in the top 5 of the reranked list) against a miss. A query without a ``hit@5`` metric
  (e.g. it failed) is left out.
- ``rerank_top1_by_answerable.png``: answerable (gold ids present) against unanswerable
  (empty ``gold_doc_ids``) queries.

These are the pictures behind a rerank-score threshold: if the hit and miss (or the
answerable and unanswerable) histograms overlap, no threshold separates them.

A figure with no scores to draw is skipped, and the reason is returned as a note.
matplotlib is imported inside the function and drawn on the Agg canvas directly (no
``pyplot``), so there is no global figure state and no GUI backend is ever chosen.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalkit.records import QueryResult

HIT_FIGURE = "rerank_top1_by_hit5.png"
ANSWERABLE_FIGURE = "rerank_top1_by_answerable.png"
BINS = 20


def split_by_hit(results: Sequence[QueryResult], metric: str = "hit@5") -> tuple[list[float], list[float]]:
    """Top-1 rerank scores of answerable queries: ``(hits, misses)`` by ``metric`` (> 0 is a hit)."""
    hits: list[float] = []
    misses: list[float] = []
    for r in results:
        if not r.gold_doc_ids or r.rerank_top1 is None or metric not in r.metrics:
            continue
        (hits if r.metrics[metric] > 0 else misses).append(float(r.rerank_top1))
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
    """Write the two histograms into ``out_dir``.

    Returns:
        ``(written PNG paths, notes)``; a note says why a figure was skipped.
    """
    out_dir = Path(out_dir)
    written: list[Path] = []
    notes: list[str] = []
    hits, misses = split_by_hit(results)
    if hits or misses:
        written.append(_histogram(
            out_dir / HIT_FIGURE, [("hit@5", hits), ("miss (no gold in top 5)", misses)],
            f"{title}: top-1 rerank score, answerable queries" if title else "top-1 rerank score, answerable queries"))
    else:
        notes.append(f"{HIT_FIGURE} skipped: no answerable query has both a top-1 rerank score and hit@5")
    answerable, unanswerable = split_by_answerable(results)
    if answerable or unanswerable:
        written.append(_histogram(
            out_dir / ANSWERABLE_FIGURE, [("answerable", answerable), ("unanswerable", unanswerable)],
            f"{title}: top-1 rerank score by answerability" if title else "top-1 rerank score by answerability"))
    else:
        notes.append(f"{ANSWERABLE_FIGURE} skipped: no query has a top-1 rerank score (no rerank node?)")
    return written, notes


def _histogram(path: Path, groups: list[tuple[str, list[float]]], title: str) -> Path:
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    values = [v for _, vs in groups for v in vs]
    edges = np.histogram_bin_edges(np.asarray(values, dtype=float), bins=BINS)
    fig = Figure(figsize=(6.4, 4.0), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for label, vs in groups:
        ax.hist(vs, bins=edges, alpha=0.55, label=f"{label} (n={len(vs)})")
    ax.set_xlabel("top-1 rerank score")
    ax.set_ylabel("queries")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path
