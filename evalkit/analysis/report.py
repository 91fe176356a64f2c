"""The comparison a reader wants after a run: one row per variant, the metrics side by side.

The best value of each quality column is marked with ``*`` (highest, except for the
lower-is-better metrics of :mod:`evalkit.analysis.direction`: abstention on answerable
queries, hallucination, invalid citations, latency). Plain text for terminals and Markdown for
``reports/``; both come from the same rows.
"""
from __future__ import annotations

from typing import Any

from evalkit.analysis.direction import LowerIsBetter
from evalkit.records import RunSummary

LOWER_IS_BETTER = LowerIsBetter()  # the one rule of evalkit.analysis.direction (hallucination, latency, ...)
SHORT = {"abstain_rate_answerable": "abstain(ans)", "abstain_rate_unanswerable": "abstain(unans)"}


def _columns(summary: RunSummary) -> list[str]:
    cols: list[str] = []
    for v in summary.variants.values():
        for name in v.metrics:
            if name not in cols:
                cols.append(name)
    return cols


def _rows(summary: RunSummary) -> tuple[list[str], list[list[str]]]:
    cols = _columns(summary)
    best: dict[str, float] = {}
    for c in cols:
        values = [v.metrics[c] for v in summary.variants.values() if c in v.metrics]
        if len(values) > 1 and len(set(values)) > 1:
            best[c] = min(values) if c in LOWER_IS_BETTER else max(values)
    header = ["variant", *[SHORT.get(c, c) for c in cols], "failed", "s/query"]
    rows = []
    for name, v in summary.variants.items():
        cells = [name]
        for c in cols:
            if c not in v.metrics:
                cells.append("-")
                continue
            mark = "*" if best.get(c) == v.metrics[c] else ""
            cells.append(f"{v.metrics[c]:.4f}{mark}")
        per_q = v.timing.get("latency_ms_mean")
        cells += [str(v.n_failed), f"{per_q / 1000:.3f}" if per_q is not None else "-"]
        rows.append(cells)
    return header, rows


def comparison_table(summary: RunSummary) -> str:
    """A fixed-width table of every variant's metrics (``*`` = best in column)."""
    header, rows = _rows(summary)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    ref = summary.eval_set
    n_ex = next(iter(summary.variants.values())).n_excluded if summary.variants else 0
    title = (f"eval set {ref.name} v{ref.version} ({ref.n_queries} queries; {n_ex} without gold documents "
             "are excluded from retrieval metrics)")
    notes = "recall@k: retrieval stage (before rerank); hit/mrr/ndcg: final ranking (after rerank if any). * = best"
    return "\n".join([title, line(header), line(["-" * w for w in widths]), *[line(r) for r in rows], notes])


def by_type_table(summary: RunSummary, metric: str = "hit@5") -> str:
    """One metric per question type (rows) and variant (columns): where each variant wins or loses."""
    types: list[str] = []
    for v in summary.variants.values():
        types += [t for t in v.by_type if t not in types]
    if not types:
        return ""
    names = list(summary.variants)
    header = [f"{metric} by type", "n", *names]
    rows = []
    for t in types:
        n = next((int(v.by_type[t]["n"]) for v in summary.variants.values() if t in v.by_type), 0)
        cells = [t, str(n)]
        for name in names:
            value = summary.variants[name].by_type.get(t, {}).get(metric)
            cells.append("-" if value is None else f"{value:.4f}")
        rows.append(cells)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return "\n".join([fmt(header), fmt(["-" * w for w in widths]), *[fmt(r) for r in rows]])


def comparison_markdown(summary: RunSummary, extra: dict[str, Any] | None = None) -> str:
    """The same table as Markdown, for committed reports."""
    header, rows = _rows(summary)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)
