"""``evalkit report``: build a run's HTML and Markdown report and write it next to the summary.

Default outputs for ``results/NAME.json``: ``results/NAME.report.html`` and
``results/NAME.report.md``. The numbers come from :mod:`evalkit.analysis.report_data`,
the per-query views from :mod:`evalkit.analysis.report_queries`, the pages from
:mod:`evalkit.analysis.report_html` (jinja2 templates), the figures from
:mod:`evalkit.analysis.figures`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.analysis import concerns
from evalkit.analysis import figures as fig
from evalkit.analysis.report_data import VariantReport, variant_reports
from evalkit.analysis.report_html import context, render_html, render_markdown
from evalkit.analysis.report_queries import (
    PairView,
    chunking_of,
    load_sources,
    pair_view,
    query_view,
)
from evalkit.analysis.runs import LoadedRun
from evalkit.errors import EvalkitError


@dataclass
class Report:
    """A rendered report: both pages, the figures embedded in the HTML, and what they show."""

    html: str
    markdown: str
    figures: dict[str, bytes]
    variants: list[VariantReport]
    pairs: list[PairView] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _meta(run: LoadedRun) -> list[str]:
    es = run.summary.eval_set
    meta = [f"eval set {es.name} v{es.version} ({es.n_queries} queries, sha256 {es.sha256[:12]})",
            f"run: {run.source}" + (f"; git commit {run.summary.git_commit[:12]}" if run.summary.git_commit else "")]
    if run.summary.mlflow.get("parent_run_id"):
        meta.append(f"MLflow parent run {run.summary.mlflow['parent_run_id']} in {run.summary.mlflow.get('tracking_uri')}")
    return meta


PANEL_METRICS = 4  # metrics per panel at most (a family with more continues in the next panel)


def panels(reports: Sequence[VariantReport]) -> list[tuple[str, list[str]]]:
    """The small-multiple panels: metric family -> its metrics (0-1 quantities only), in first-seen order."""
    out: dict[str, list[str]] = {}
    for m in concerns.ordered(list(dict.fromkeys(m for v in reports for m in v.metrics))):
        family = concerns.chart_family(m)
        if family and all(0.0 <= v.metrics[m]["mean"] <= 1.0 for v in reports if m in v.metrics):
            out.setdefault(family, []).append(m)
    return [(family if i == 0 else f"{family} (continued)", ms[i:i + PANEL_METRICS])
            for family, ms in out.items() for i in range(0, len(ms), PANEL_METRICS)]


def default_pair(reports: Sequence[VariantReport]) -> tuple[str, str] | None:
    """The two variants with the highest primary metric (ties: report order); None with one variant."""
    if len(reports) < 2:
        return None
    primary = reports[0].primary
    def mean(i: int) -> float:  # no primary metric: every variant ties, report order decides
        return reports[i].metrics.get(primary, {}).get("mean", -1.0) if primary is not None else -1.0

    ranked = sorted(range(len(reports)), key=lambda i: (-mean(i), i))
    a, b = sorted(ranked[:2])
    return reports[a].name, reports[b].name


def build_report(run: LoadedRun, variants: list[str] | None = None, n_resamples: int = 2000,
                 confidence: float = 0.95, seed: int = 0, pairs: Sequence[tuple[str, str]] | None = None) -> Report:
    """Compute and render the report of ``run`` (all variants unless ``variants``).

    ``pairs``: the (reference, other) variants shown query by query; default: the two
    variants best on the primary metric (:func:`default_pair`).
    """
    names = variants or run.variant_names
    reports = variant_reports(run, names, n_resamples, confidence, seed)
    colors = fig.variant_colors(names)
    figures: dict[str, bytes] = {}
    chart = panels(reports)
    if chart:
        figures["metrics.png"] = fig.metric_panels(
            chart, names, colors, {(v.name, m): v.metrics[m]["mean"] for v in reports for m in v.metrics},
            {(v.name, m): (v.metrics[m]["low"], v.metrics[m]["high"]) for v in reports for m in v.metrics},
            {m: concerns.header(m) for _, ms in chart for m in ms})
    for v in reports:
        if v.scores and any(v.scores.values()):
            lines = [("guard threshold", v.guard_threshold)] if v.guard_threshold is not None else []
            figures[f"scores-{v.name}.png"] = fig.score_histogram(
                list(v.scores.items()), f"{v.name}: top-1 rerank score\n{v.reranker}", lines)
    src = load_sources(run)
    worst: dict[str, dict[str, Any]] = {}
    for v in reports:
        rows = {r["query_id"]: r for r in run.rows(v.name)}
        chunking = chunking_of(run, v.name)
        worst[v.name] = {w["query_id"]: query_view(run, v.name, rows[w["query_id"]], w["label"], src, chunking)
                         for w in v.worst}
    wanted = list(pairs) if pairs is not None else [p for p in [default_pair(reports)] if p]
    labels = {v.name: v.labels for v in reports}
    for a, b in wanted:
        for n in (a, b):
            if n not in labels:
                raise EvalkitError(f"--pair: variant '{n}' is not in the report ({', '.join(names)})")
    views = [pair_view(run, a, b, reports[names.index(a)].primary or "hit@5", labels, src) for a, b in wanted]
    title = f"evalkit report: {run.label}"
    ctx = context(title, _meta(run), reports, figures, colors, worst, views, notes=list(dict.fromkeys([*src.notes, *run.warnings])))
    return Report(render_html(ctx), render_markdown(ctx), figures, reports, views, src.notes)


def default_paths(run: LoadedRun) -> tuple[Path, Path]:
    """``results/NAME.report.html`` and ``results/NAME.report.md`` for ``results/NAME.json``."""
    stem = run.output_stem()
    return stem.with_name(stem.name + ".report.html"), stem.with_name(stem.name + ".report.md")


def write_report(report: Report, html_path: Path, md_path: Path) -> tuple[Path, Path]:
    """Write both pages (folders created); returns their paths."""
    from evalkit.fileio import write_atomic

    for path, text in ((html_path, report.html), (md_path, report.markdown)):
        write_atomic(path, text, hint="choose another --output")
    return html_path, md_path
