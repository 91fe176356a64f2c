"""``evalkit export``: a finished run as TREC run/qrels files, parquet, CSV or ragas samples."""
from __future__ import annotations

from pathlib import Path

import click

from evalkit.evalsets.evalset import display_path
from evalkit.interop.export import export_run


@click.command("export")
@click.argument("run_ref", metavar="RUN")
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv", "trec", "ragas"]), default="parquet",
              show_default=True,
              help="parquet/csv: one row per variant x query, every per-query metric a column (docs/export.md); "
                   "trec: qrels.txt plus "
                   "<variant>.retrieval.run and <variant>.final.run; ragas: <variant>.jsonl, a ragas "
                   "EvaluationDataset (question, answer, the passage texts, reference; docs/interop.md).")
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None,
              help="File to write (parquet/csv) or folder (trec, ragas). Default: beside the summary, "
                   "results/NAME.parquet, results/NAME.csv, results/NAME.trec/ or results/NAME.ragas/.")
@click.option("--variant", "variants", multiple=True, metavar="NAME", help="Export only these variants (repeatable).")
@click.option("--scores", type=click.Choice(["rank", "native"]), default=None,
              help="TREC scores: rank (n - position, so trec_eval keeps evalkit's order) or native (pipeline "
                   "scores; trec_eval re-sorts ties by document id). Default: what the run scored: rank, or "
                   "native for a run made with --ties trec.")
@click.option("--tracking-uri", default=None, help="MLflow store, when RUN is an MLflow run id.")
def export(run_ref: str, fmt: str, output: Path | None, variants: tuple[str, ...], scores: str | None,
           tracking_uri: str | None) -> int:
    """Export a finished run for pandas, trec_eval, ranx or a spreadsheet.

    RUN is a summary JSON (results/NAME.json), its results folder, or an MLflow run id
    (with --tracking-uri). Nothing is re-run.

    \b
    Examples:
      evalkit export results/demo_kb.json                    # -> results/demo_kb.parquet
      evalkit export results/demo_kb.json --format trec      # -> results/demo_kb.trec/
      evalkit export results/demo_kb.json --format ragas     # -> results/demo_kb.ragas/VARIANT.jsonl
      trec_eval -m recall.20 results/demo_kb.trec/qrels.txt results/demo_kb.trec/bm25.retrieval.run
    """
    paths = export_run(run_ref, fmt, output, list(variants) or None, scores=scores, tracking_uri=tracking_uri)
    if fmt in ("trec", "ragas"):
        click.echo(f"wrote {len(paths)} files to {display_path(paths[0].parent)}/: "
                   + ", ".join(p.name for p in paths))
    else:
        click.echo(f"wrote {display_path(paths[0])}")
    return 0
