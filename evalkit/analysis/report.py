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


# The terminal table is split by concern; each section lists its columns in order and
# a short header for each. Metrics in no section go to a final "other" table.
SECTIONS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("answers (generating variants; judged claims)", (
        ("faithfulness", "faithful"), ("hallucination_rate", "halluc"),
        ("claim_hallucination_rate", "halluc(claims)"), ("answer_f1", "F1"), ("answer_em", "EM"),
        ("citation_precision", "cite.prec"), ("invalid_citation_rate", "cite.invalid"),
        ("abstention_rate", "declined(ans)"), ("correct_abstention_rate", "declined(unans)"),
        ("unanswerable_hallucination_rate", "answered(unans)"), ("n_answered", "answered"),
        ("n_abstained", "declined"), ("n_no_checkable_claims", "no-claims"), ("n_judge_failed", "judge-failed"))),
)
COUNTS_PREFIX = "n_"


def _is_retrieval(name: str) -> bool:
    return "@" in name or name.startswith("abstain_rate_")


def _columns(summary: RunSummary, keep: Any) -> list[str]:
    cols: list[str] = []
    for v in summary.variants.values():
        for name in v.metrics:
            if keep(name) and name not in cols:
                cols.append(name)
    return cols


def _cell(name: str, value: float, best: float | None) -> str:
    if name.startswith(COUNTS_PREFIX):
        return str(int(round(value)))
    return f"{value:.4f}{'*' if best == value else ''}"


def _rows(summary: RunSummary, cols: list[str], short: dict[str, str] | None = None,
          extra: bool = True) -> tuple[list[str], list[list[str]]]:
    """Header and rows of one table: variants that have at least one of ``cols``."""
    short = {**SHORT, **(short or {})}
    best: dict[str, float] = {}
    for c in cols:
        values = [v.metrics[c] for v in summary.variants.values() if c in v.metrics]
        if len(values) > 1 and len(set(values)) > 1 and not c.startswith(COUNTS_PREFIX):
            best[c] = min(values) if c in LOWER_IS_BETTER else max(values)
    header = ["variant", *[short.get(c, c) for c in cols], *(["failed", "s/query"] if extra else [])]
    rows = []
    for name, v in summary.variants.items():
        if not any(c in v.metrics for c in cols):
            continue
        cells = [name] + [_cell(c, v.metrics[c], best.get(c)) if c in v.metrics else "-" for c in cols]
        if extra:
            per_q = v.timing.get("latency_ms_mean")
            cells += [str(v.n_failed), f"{per_q / 1000:.3f}" if per_q is not None else "-"]
        rows.append(cells)
    return header, rows


def _fixed_width(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return [line(header), line(["-" * w for w in widths]), *[line(r) for r in rows]]


def _tables(summary: RunSummary) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of every non-empty table: retrieval, each section, other."""
    out = [("retrieval", *_rows(summary, _columns(summary, _is_retrieval)))]
    placed = set()
    for title, cols in SECTIONS:
        names = [c for c, _ in cols]
        placed.update(names)
        present = [c for c in names if any(c in v.metrics for v in summary.variants.values())]
        if present:
            out.append((title, *_rows(summary, present, dict(cols), extra=False)))
    rest = _columns(summary, lambda n: not _is_retrieval(n) and n not in placed)
    if rest:
        out.append(("other", *_rows(summary, rest, extra=False)))
    return out


def comparison_table(summary: RunSummary) -> str:
    """Fixed-width tables of every variant's metrics, by concern (``*`` = best in column)."""
    ref = summary.eval_set
    n_ex = next(iter(summary.variants.values())).n_excluded if summary.variants else 0
    lines = [f"eval set {ref.name} v{ref.version} ({ref.n_queries} queries; {n_ex} without gold documents "
             "are excluded from retrieval metrics)"]
    for i, (title, header, rows) in enumerate(_tables(summary)):
        if i:
            lines += ["", title]
        lines += _fixed_width(header, rows)
        if i == 0:
            lines.append("recall@k: retrieval stage (before rerank); hit/mrr/ndcg: final ranking (after rerank "
                         "if any). * = best")
    return "\n".join(lines)


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
    """The same tables as Markdown, for committed reports."""
    out: list[str] = []
    for title, header, rows in _tables(summary):
        out += [f"**{title}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(r) + " |" for r in rows] + [""]
    return "\n".join(out).rstrip() + "\n"
