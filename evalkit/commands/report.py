"""``evalkit report``: one self-contained HTML report and its Markdown twin per run."""
from __future__ import annotations

from pathlib import Path

import click

from evalkit.analysis.run_report import build_report, default_paths, write_report
from evalkit.analysis.runs import load_run
from evalkit.commands.options import records_held
from evalkit.evalsets.evalset import display_path
from evalkit.recordview import ANALYSIS


@click.command("report")
@click.argument("run_ref", metavar="RUN")
@click.option("--variant", "variants", multiple=True, metavar="NAME", help="Report only these variants (repeatable).")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="HTML file to write (default: results/NAME.report.html beside the summary).")
@click.option("--markdown", "md_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Markdown file to write (default: results/NAME.report.md).")
@click.option("--resamples", type=click.IntRange(100, 100_000), default=2000, show_default=True,
              help="Bootstrap resamples of the confidence intervals.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--tracking-uri", default=None, help="MLflow store (a run id as RUN needs it; default: the run's own).")
@click.option("--no-mlflow", is_flag=True, help="Do not log the report to the run's MLflow parent run.")
@click.option("--pair", "pairs", multiple=True, metavar="A,B",
              help="Show variant B against A query by query (won / lost / changed, side by side); repeatable. "
                   "Default: the two variants best on the primary metric.")
@records_held
def report(run_ref: str, variants: tuple[str, ...], html_path: Path | None, md_path: Path | None, resamples: int,
           seed: int, tracking_uri: str | None, no_mlflow: bool, pairs: tuple[str, ...]) -> int:
    """Write a run's report: self-contained HTML (embedded PNGs) and Markdown.

    RUN is a summary JSON (results/NAME.json), its results folder, or an MLflow run id
    (with --tracking-uri). The report holds: a summary table with bootstrap confidence
    intervals (headline metrics; every metric behind a details element), one chart panel
    per metric family with one colour per variant, a per-variant funnel (gold in top 20
    -> gold in top 5 -> passed guard -> answered with citations -> supported; n/a where
    the run has no such stage), a failure label per query, two variants query by query
    (--pair), rerank score histograms, per-node latency p50/p95 and LLM usage, and the
    worst queries with their reference answer, answer, claim verdicts, the passages that
    decided them (text on demand) and their traces. When the run was logged to
    MLflow, both files are logged as artifacts of its parent run.

    \b
    Example:
      evalkit report results/demo_kb.json     # -> results/demo_kb.report.html / .md
    """
    run = load_run(run_ref, tracking_uri, view=ANALYSIS)
    for name in variants:
        run.variant(name)
    wanted = []
    for spec in pairs:
        parts = [p.strip() for p in spec.split(",") if p.strip()]
        if len(parts) != 2 or parts[0] == parts[1]:
            raise click.BadParameter(f"'{spec}': write two different variants, A,B", param_hint="--pair")
        for name in parts:
            run.variant(name)
        wanted.append((parts[0], parts[1]))
    built = build_report(run, list(variants) or None, n_resamples=resamples, seed=seed, pairs=wanted or None)
    default_html, default_md = default_paths(run)
    html_out, md_out = write_report(built, html_path or default_html, md_path or default_md)
    click.echo(f"wrote {display_path(html_out)} ({len(built.html) // 1024} KB, {len(built.figures)} figures "
               "embedded, no external assets)")
    click.echo(f"wrote {display_path(md_out)}")
    from evalkit.analysis.tables import output_width, wrap

    width = output_width()
    for note in built.notes:
        click.echo(f"note: {note}", err=True)
    for p in built.pairs:
        c = p.counts
        click.echo(f"  {p.b} vs {p.a} on {p.metric}: won {c['won']}, lost {c['lost']}, changed {c['changed']}, "
                   f"same {c['same']}")
    for v in built.variants:
        funnel = " -> ".join("n/a" if s["count"] is None else str(s["count"]) for s in v.funnel)
        labels = ", ".join(f"{k} {c}" for k, c in v.label_counts.items())
        click.echo(wrap(f"  {v.name}: funnel {funnel} (of {v.n_answerable} answerable); {labels}", width, "      "))
    parent = run.mlflow_parent()
    if not no_mlflow and parent:
        from evalkit.analysis.artifacts import log_artifacts, tracking_uri_for

        uri = tracking_uri_for(run, tracking_uri)
        try:
            log_artifacts({"report.html": html_out, "report.md": md_out}, tracking_uri=uri, run_id=parent,
                          artifact_path="report")
            click.echo(f"MLflow: logged the report to parent run {parent} in {uri}")
        except Exception as exc:  # noqa: BLE001  (the files are written already; say so, keep going)
            click.echo(f"warning: MLflow logging failed ({type(exc).__name__}: {exc})", err=True)
    elif not no_mlflow:
        click.echo("MLflow: the run has no MLflow parent run; report not logged (files only)")
    return 0
