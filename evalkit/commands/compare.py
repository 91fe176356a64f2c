"""``evalkit compare``: paired per-query comparison of variants, with fusion diagnostics."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from evalkit.analysis.compare import (
    TooFewVariantsError,
    compare_variants,
    format_comparison,
    reference_note,
    resolve_variants,
)
from evalkit.analysis.fusion_diag import channel_diagnostics, format_fusion, is_hybrid, weight_sweep
from evalkit.analysis.label_text import format_corrected
from evalkit.analysis.labels import corrected_for_runs
from evalkit.analysis.runs import LoadedRun, load_run
from evalkit.analysis.tables import WIDE, Column, TableData, render, wrap_lines
from evalkit.analysis.tool_diag import format_tools, has_tools, tool_diagnostics
from evalkit.commands.options import layout, records_held, render_checked, table_options
from evalkit.metrics.routing import confusion_rows, route_confusion
from evalkit.recordview import ANALYSIS


@click.command("compare")
@click.argument("runs", nargs=-1, required=True, metavar="RUN [RUN...]")
@click.option("--variants", default=None, metavar="A,B[,C...]",
              help="Variants to compare, the first is the reference. With several runs write RUN:NAME "
                   "(RUN = position 1.. or summary file stem). Default: every variant of the one run.")
@click.option("--reference", default=None, metavar="NAME",
              help="The variant every other one is compared with (NAME or RUN:NAME). Default: the first of "
                   "--variants, else the run's first variant (announced in the output).")
@click.option("--metric", "metrics", multiple=True, metavar="NAME",
              help="Compare only these metrics (repeatable); default: every metric all variants have.")
@click.option("--resamples", type=click.IntRange(100, 1_000_000), default=10_000, show_default=True,
              help="Bootstrap resamples and permutation-test resamples.")
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Level of the bootstrap confidence intervals.")
@click.option("--correction", type=click.Choice(["holm", "bh", "none"]), default="holm", show_default=True,
              help="Multiple-testing correction over every test in the table (bh = Benjamini-Hochberg).")
@click.option("--alpha", type=click.FloatRange(0.0001, 0.5), default=0.05, show_default=True,
              help="Significance level for the verdict column (on corrected p-values).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of every resampling.")
@click.option("--sweep-metric", default="ndcg@10", show_default=True,
              help="Metric the fusion weight sweep optimises (a retrieval metric).")
@click.option("--folds", type=click.IntRange(2, 50), default=5, show_default=True,
              help="Cross-validation folds of the fusion weight sweep.")
@click.option("--no-fusion", is_flag=True, help="Skip the fusion and per-tool diagnostics.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write every number as JSON to this file.")
@click.option("--tracking-uri", default=None, help="MLflow store, when a RUN is an MLflow run id.")
@click.option("--labels", "labels", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Human labels from `evalkit label` (repeatable): when both variants of a pair have labels, "
                   "hallucinated and faithfulness compare judge-corrected (PPI++) estimates.")
@table_options
@records_held
def compare(runs: tuple[str, ...], variants: str | None, reference: str | None, metrics: tuple[str, ...],
            resamples: int, confidence: float, correction: str, alpha: float, seed: int, sweep_metric: str, folds: int,
            no_fusion: bool, json_path: Path | None, tracking_uri: str | None, wide: bool, columns: str | None,
            labels: tuple[Path, ...]) -> int:
    """Is the difference between variants real? Paired tests on per-query metrics.

    Each variant is compared with the first on the same queries: mean difference with a
    paired bootstrap CI, a sign-flip permutation p-value, p corrected for all tests in
    the table (Holm, or --correction bh), and win/tie/loss counts with the ids of the
    queries behind them (all of them in --json). Retrieval metrics use answerable
    queries only. Name the reference with --reference or as the first of --variants;
    otherwise it is the run's first variant, and the output says so. Variants may come from several runs of the same eval set
    version; other eval sets are refused.

    For hybrid variants it adds fusion diagnostics from the retrieve trace: gold
    documents only one channel found (top 20), channel overlap (Jaccard), and for
    weighted fusion a dense-weight sweep with a k-fold cross-validated estimate. For
    agent-scheduler variants it adds per-tool diagnostics: how many of the fused top 20
    documents each tool supplied (and alone), gold documents supplied, search latency, and
    which classes were chosen by rule, llm or default.

    \b
    Examples:
      evalkit compare results/demo_kb.json --variants hybrid_rrf,hybrid_weighted
      evalkit compare results/a.json results/b.json --variants a:bm25,b:bm25 --correction bh
    """
    loaded: list[LoadedRun] = []
    for spec in runs:
        run = load_run(spec, tracking_uri, view=ANALYSIS)
        if any(run.label == other.label for other in loaded):
            run.label = f"{run.label}#{len(loaded) + 1}"
        loaded.append(run)
    try:
        refs = resolve_variants(loaded, variants, reference)
    except TooFewVariantsError as exc:
        raise click.UsageError(str(exc)) from exc
    note = reference_note(variants, reference, refs)
    if note and not sys.stdout.isatty() and sys.stderr.isatty():
        # stdout piped to a file while a person watches the terminal: tell them too. The table's head
        # says it always; in a terminal, or a notebook (neither stream a TTY, streams shown out of
        # order), once is enough and it comes first.
        click.echo(note, err=True)
    corrected = {}
    if labels:
        corrected = corrected_for_runs([(r.label, r.run, r.variant) for r in refs], labels, confidence=confidence)
    result = compare_variants(refs, metrics or None, n_resamples=resamples, confidence=confidence, seed=seed,
                              correction=correction, alpha=alpha, corrected=corrected)
    result.reference_note = note
    lay = layout(wide, columns)
    click.echo(render_checked(lambda lay: format_comparison(result, lay), lay))
    if labels:
        click.echo("\n" + (format_corrected(list(corrected.values())) if corrected else
                           "--labels: no label line names a compared variant"))
    if not no_fusion:
        for ref in refs:
            results = ref.run.results(ref.variant)
            if not is_hybrid(results):
                continue
            diag = channel_diagnostics(results)
            from evalkit.metrics import Scoring

            sweep = weight_sweep(results, ref.run.config(ref.variant), sweep_metric, folds, seed, resamples,
                                 confidence, scoring=Scoring.from_dict(ref.run.summary.scoring))
            result.fusion.append({"variant": ref.label, "channels": diag, "sweep": sweep})
            click.echo("\n" + wrap_lines(format_fusion(ref.label, diag, sweep), WIDE if lay.wide else lay.width))
        for ref in refs:
            results = ref.run.results(ref.variant)
            if has_tools(results):
                tools = tool_diagnostics(results)
                result.tools.append({"variant": ref.label, **tools})
                click.echo("\n" + wrap_lines(format_tools(ref.label, tools), WIDE if lay.wide else lay.width))
    for ref in refs:  # routers on an eval set with gold routes: where the wrong routes went
        confusion = route_confusion(ref.run.results(ref.variant))
        if confusion:
            header, rows = confusion_rows(confusion)
            cols = [Column(header[0], numeric=False), *(Column(h) for h in header[1:])]
            table = TableData(f"routes: {ref.label} (rows: gold route, columns: chosen route)", cols, rows)
            click.echo("\n" + render([table], lay))
    for run in loaded:
        for msg in run.warnings:
            click.echo(f"warning: {msg}", err=True)
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result.to_dict(), indent=2, default=float) + "\n", encoding="utf-8")
        click.echo(f"\nwrote {json_path}")
    return 0
