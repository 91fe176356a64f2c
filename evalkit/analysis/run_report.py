"""``evalkit report``: build a run's HTML and Markdown report and write it next to the summary.

Default outputs for ``results/NAME.json``: ``results/NAME.report.html`` and
``results/NAME.report.md``. The numbers come from :mod:`evalkit.analysis.report_data`,
the pages from :mod:`evalkit.analysis.report_html`, the figures from
:mod:`evalkit.analysis.figures`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalkit.analysis import figures as fig
from evalkit.analysis.report_data import VariantReport, variant_report
from evalkit.analysis.report_html import render_html, render_markdown
from evalkit.analysis.runs import LoadedRun


@dataclass
class Report:
    """A rendered report: both pages and the figures embedded in the HTML."""

    html: str
    markdown: str
    figures: dict[str, bytes]
    variants: list[VariantReport]


def _meta(run: LoadedRun) -> list[str]:
    es = run.summary.eval_set
    meta = [f"eval set {es.name} v{es.version} ({es.n_queries} queries, sha256 {es.sha256[:12]})",
            f"run: {run.source}" + (f"; git commit {run.summary.git_commit[:12]}" if run.summary.git_commit else "")]
    if run.summary.mlflow.get("parent_run_id"):
        meta.append(f"MLflow parent run {run.summary.mlflow['parent_run_id']} in {run.summary.mlflow.get('tracking_uri')}")
    return meta


def build_report(run: LoadedRun, variants: list[str] | None = None, n_resamples: int = 2000,
                 confidence: float = 0.95, seed: int = 0) -> Report:
    """Compute and render the report of ``run`` (all variants unless ``variants``)."""
    names = variants or run.variant_names
    reports = [variant_report(run, n, n_resamples, confidence, seed) for n in names]
    figures: dict[str, bytes] = {}
    unit = [m for m in dict.fromkeys(m for v in reports for m in v.metrics)
            if all(0.0 <= v.metrics[m]["mean"] <= 1.0 for v in reports if m in v.metrics)]
    if unit:
        figures["metrics.png"] = fig.metric_bars(
            [v.name for v in reports], unit, {(v.name, m): v.metrics[m]["mean"] for v in reports for m in v.metrics},
            {(v.name, m): (v.metrics[m]["low"], v.metrics[m]["high"]) for v in reports for m in v.metrics},
            f"{run.summary.eval_set.name} v{run.summary.eval_set.version}: means with {confidence:.0%} bootstrap CIs")
    for v in reports:
        if v.scores and any(v.scores.values()):
            lines = [("guard threshold", v.guard_threshold)] if v.guard_threshold is not None else []
            figures[f"scores-{v.name}.png"] = fig.score_histogram(
                list(v.scores.items()), f"{v.name}: top-1 rerank score\n{v.reranker}", lines)
    title = f"evalkit report: {run.label}"
    meta = _meta(run)
    return Report(render_html(title, meta, reports, figures), render_markdown(title, meta, reports), figures, reports)


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
