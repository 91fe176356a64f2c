"""The comparison a reader wants after a run: one row per variant, the metrics side by side.

Tables are split by concern (:mod:`evalkit.analysis.concerns`): retrieval, answers
(generating variants), agentic (loops and routers), cost (failures, latency, LLM
usage), then anything else. Each table lists only the variants that have one of its
columns; empty columns are hidden and the tables are fitted to the output width by
:mod:`evalkit.analysis.tables` (``--wide`` / ``--columns`` on ``run`` and ``demo``).

The best value of each quality column is marked with ``*`` (highest, except for the
metrics registered as lower-is-better, :mod:`evalkit.analysis.direction`). Plain text for terminals
and Markdown for ``reports/``; both come from the same rows.
"""
from __future__ import annotations

from evalkit.analysis import concerns
from evalkit.analysis.direction import LowerIsBetter, is_descriptive
from evalkit.analysis.guard_check import summary_warnings
from evalkit.analysis.loop_reading import loop_readings
from evalkit.analysis.tables import Column, Layout, TableData, markdown, render, wrap
from evalkit.metrics.catalog import columns
from evalkit.records import RunSummary, VariantSummary

LOWER_IS_BETTER = LowerIsBetter()  # each metric's registered direction (evalkit.analysis.direction)
TITLES = {"retrieval": "retrieval", "answers": "answers (generating variants; judged claims)",
          "agentic": "agentic (reflection loops)", "routes": "routes (share of queries per route)",
          "safety": "safety (share of queries an input_filter / moderate node blocked)", "cost": "cost",
          "other": "other"}
NOTES = {"retrieval": [("recall@k: retrieval stage (before rerank); hit/mrr/ndcg: final ranking (after rerank if any); "
                  "guard(ans/unans): share of answerable / unanswerable queries the guard stopped. * = best")],
         "agentic": [("looped: share of queries that took a second attempt; rescued / harmed / futile: queries "
                     "(definitions in evalkit/metrics/agentic.py)")]}


def _cells(name: str, values: list[float | None], best: float | None) -> list[str]:
    """One column's cells: counts as integers, rates with 4 decimals, larger means with 2; ``*`` on the best."""
    if concerns.is_count(name):
        return ["-" if x is None else f"{x:g}" for x in values]
    digits = 4 if all(x is None or 0.0 <= x <= 1.0 for x in values) else 2
    return ["-" if x is None else f"{x:.{digits}f}" + ("*" if best is not None and x == best else "") for x in values]


def _best(summary: RunSummary, name: str) -> float | None:
    values = [v.metrics[name] for v in summary.variants.values() if name in v.metrics]
    if len(values) < 2 or len(set(values)) < 2 or concerns.is_count(name) or is_descriptive(name):
        return None
    return min(values) if name in LOWER_IS_BETTER else max(values)


def judge_notes(summary: RunSummary) -> list[str]:
    """What the answers table's figures can be trusted for, when the offline judge made them.

    The rule judge cannot follow values an answer computes in more than one step: it leaves most
    of them unverified, and still marks some correct ones unsupported, so its hallucination
    figures run high on such answers. The note gives its measured held-out rates
    (:data:`evalkit.judges.held_out.HELD_OUT`) and what to do about it.
    """
    judges = sorted({v.judge.split(":")[0] for v in summary.variants.values() if v.judge})
    offline = [j for j in judges if j.startswith("offline/")]
    if not offline:
        return []
    from evalkit.judges.held_out import HELD_OUT  # loaded only when the offline judge's verdicts are on show

    h = HELD_OUT
    return [f"judge {', '.join(offline)} (rules, no LLM): on multi-document answers written blind to its rules it "
            f"marked {h.false_alarm:.0%} of {h.n_correct} correct answers unsupported ({h.unverified / h.n_correct:.0%} "
            f"unverified) and {h.recall:.0%} of {h.n_wrong} planted errors (docs/judges.md, Limits): on answers that "
            "compute values, halluc is overstated. --labels FILE (from `evalkit label`) corrects it with confidence "
            "intervals; --judge offline+llm has a model decide what the rules cannot"]


def _metric_table(summary: RunSummary, concern: str, names: list[str]) -> TableData:
    names = concerns.ordered([n for n in names if n not in concerns.SENTENCE_ONLY])
    variants = [(n, v) for n, v in summary.variants.items() if any(m in v.metrics for m in names)]
    columns = [_cells(m, [v.metrics.get(m) for _, v in variants], _best(summary, m)) for m in names]
    rows = [[name, *[col[i] for col in columns]] for i, (name, _) in enumerate(variants)]
    cols = [Column("variant", numeric=False), *[Column(n, concerns.header(n)) for n in names]]
    notes = NOTES.get(concern, []) + (judge_notes(summary) if concern == "answers" else []) + (
        loop_readings(summary) if concern == "agentic" else [])
    if concern == "retrieval":
        notes += summary_warnings(summary)  # a guard refusing a larger share of answerable than unanswerable
    return TableData(TITLES[concern], cols, rows, notes=notes)


def _cost_cells(v: VariantSummary) -> dict[str, str]:
    """The cost table's cells of one variant, by registered column name (evalkit.metrics.cost)."""
    mean, p95 = v.timing.get("latency_ms_mean"), v.timing.get("latency_ms_p95")
    usage = {k: sum(u.get(k, 0) for u in v.usage.values()) for k in ("calls", "tokens_in", "tokens_out", "cache_hits")}
    executions = v.timing.get("node_executions")
    reused = v.timing.get("node_executions_reused")
    degraded = v.metrics.get("degraded")
    cells = {k: f"{x:g}" for k, x in v.metrics.items()}  # any other registered cost column: the metric itself
    cells.update({
        "failed": str(v.n_failed),
        "degraded_share": "-" if degraded is None else
        f"{degraded:g} ({v.metrics.get('degraded_share', 0):.0%})" if degraded else "0",
        "s/query": "-" if mean is None else f"{mean / 1000:.3f}",
        "p95 s": "-" if p95 is None else f"{p95 / 1000:.3f}",
        **{key: "-" if not v.usage else f"{usage[k]:g}" for key, k in (
            ("llm_calls", "calls"), ("tokens_in", "tokens_in"), ("tokens_out", "tokens_out"), ("cache_hits", "cache_hits"))},
        "reused": f"{reused:g}/{executions:g}" if executions and reused else "-"})
    return cells


def _cost_row(name: str, v: VariantSummary) -> list[str]:
    cells = _cost_cells(v)
    return [name, *[cells.get(m.name, "-") for m in columns("cost")]]


def _cost_table(summary: RunSummary) -> TableData:
    cols = [Column("variant", numeric=False), *[Column(m.name, m.header) for m in columns("cost")]]
    rows = [_cost_row(name, v) for name, v in summary.variants.items()]
    causes = {name: ", ".join(f"{k.removeprefix('degraded.')} {n:g}" for k, n in v.metrics.items()
                              if k.startswith("degraded.") and n) for name, v in summary.variants.items()}
    notes = [f"degraded: queries with no usable answer, a call that failed after retries or a reply that was empty, "
             f"filtered or an error message (left out of the answer metrics; evalkit.run.health); "
             f"{'; '.join(f'{n}: {c}' for n, c in causes.items() if c)}"] if any(causes.values()) else []
    return TableData(TITLES["cost"], cols, rows, notes=[*notes,
        ("s/query: mean pipeline latency (sum of node durations; a step reused from another variant counts the "
        "time it took there); reused steps: node executions shared with another variant of this run"), *(
        ["claims to model: claims a cascade judge (offline+llm) sent to its model, against the claims judged "
         "(what a model-only judge would have been asked)"] if any("n_claims_escalated" in v.metrics
                                                                     for v in summary.variants.values()) else [])])


def summary_tables(summary: RunSummary) -> list[TableData]:
    """The run's tables, one per concern that has a column (before hiding and fitting)."""
    by_concern: dict[str, list[str]] = {c: [] for c in concerns.CONCERNS}
    for v in summary.variants.values():
        for name in v.metrics:
            c = concerns.concern(name)
            if name not in by_concern[c]:
                by_concern[c].append(name)
    out = []
    for c in concerns.CONCERNS:
        if c == "cost":
            out.append(_cost_table(summary))
        elif by_concern[c]:
            out.append(_metric_table(summary, c, by_concern[c]))
    return out


def _heading(summary: RunSummary) -> str:
    ref = summary.eval_set
    n_ex = next(iter(summary.variants.values())).n_excluded if summary.variants else 0
    return (f"eval set {ref.name} v{ref.version} ({ref.n_queries} queries; {n_ex} without gold documents are "
            "excluded from retrieval metrics)")


def comparison_table(summary: RunSummary, layout: Layout | None = None) -> str:
    """Every variant's metrics by concern, fitted to ``layout`` (``*`` = best in column)."""
    lay = layout or Layout()
    heading = _heading(summary) if lay.wide else wrap(_heading(summary), lay.width)
    return heading + "\n" + render(summary_tables(summary), layout)


def by_type_tables(summary: RunSummary, metric: str = "hit@5") -> list[TableData]:
    """One metric per variant (rows) and question type (columns, with the number of queries)."""
    types: list[str] = []
    for v in summary.variants.values():  # the types some variant has the metric for (answers alone have no hit@5)
        types += [t for t in v.by_type if t not in types and v.by_type[t].get(metric) is not None]
    if not types:
        return []
    n = {t: next((int(v.by_type[t]["n"]) for v in summary.variants.values() if t in v.by_type), 0) for t in types}
    cols = [Column("variant", numeric=False), *[Column(t, f"{t} ({n[t]})") for t in types]]
    rows = []
    for name, v in summary.variants.items():
        values = [v.by_type.get(t, {}).get(metric) for t in types]
        rows.append([name, *["-" if x is None else f"{x:.4f}" for x in values]])
    return [TableData(f"{metric} by question type (queries per type in brackets)", cols, rows)]


def by_type_table(summary: RunSummary, metric: str = "hit@5", layout: Layout | None = None) -> str:
    """:func:`by_type_tables` rendered; ``""`` when the run has no per-type breakdown."""
    tables = by_type_tables(summary, metric)
    if layout is not None and layout.columns:  # --columns names metrics, not question types
        layout = Layout(width=layout.width, wide=layout.wide)
    return render(tables, layout) if tables else ""


def comparison_markdown(summary: RunSummary, layout: Layout | None = None) -> str:
    """The same tables as Markdown, for committed reports."""
    return markdown(summary_tables(summary), layout)
