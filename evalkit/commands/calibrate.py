"""``evalkit calibrate``: recommend a guard threshold from a finished run's rerank scores."""
from __future__ import annotations

import json
from pathlib import Path

import click

from evalkit.analysis.artifacts import log_artifacts, tracking_uri_for
from evalkit.analysis.calibrate import calibrate as run_calibration
from evalkit.analysis.calibrate import collect, figures, format_calibration
from evalkit.analysis.guard_config import with_guard, write_config
from evalkit.analysis.runs import load_run
from evalkit.commands.options import env_quiet, layout, render_checked, table_options
from evalkit.evalsets.evalset import display_path


@click.command("calibrate")
@click.argument("run_ref", metavar="RUN")
@click.option("--variant", "variants", multiple=True, metavar="NAME",
              help="Variant to calibrate (repeatable); default: every variant with rerank scores.")
@click.option("--objective", type=click.Choice(["f1", "precision", "recall"]), default="f1", show_default=True,
              help="f1: maximise F1 of abstention; precision: the highest abstention recall with precision >= "
                   "--target (at the lowest such t); recall: the lowest t with recall >= --target.")
@click.option("--target", type=click.FloatRange(0, 1), default=None, help="Target for --objective precision/recall.")
@click.option("--positive", type=click.Choice(["unanswerable", "unanswerable-or-miss"]), default="unanswerable",
              show_default=True, help="Which queries should be abstained on: unanswerable ones, or also answerable "
                                      "ones whose gold is not in the final top 5.")
@click.option("--percentile", type=click.FloatRange(0, 100), default=10.0, show_default=True,
              help="Relative rule: t = this percentile of answerable queries' scores.")
@click.option("--resamples", type=click.IntRange(100, 100_000), default=2000, show_default=True,
              help="Bootstrap resamples for the interval on t.")
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Level of the bootstrap intervals.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where figures and calibration.json go (default: <run>.calibrate/ beside the summary).")
@click.option("--write-config", "write_config", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the variant's graph config with the calibrated guard to this YAML (one variant only).")
@click.option("--rule", type=click.Choice(["absolute", "relative"]), default="absolute", show_default=True,
              help="Which threshold --write-config writes: the objective's absolute t, or the relative rule.")
@click.option("--tracking-uri", default=None, help="MLflow store (a run id as RUN needs it; default: the run's own).")
@click.option("--experiment", default="evalkit", show_default=True, help="Experiment for a new MLflow run.")
@click.option("--no-mlflow", is_flag=True, help="Do not log the figures to MLflow.")
@table_options
def calibrate(run_ref: str, variants: tuple[str, ...], objective: str, target: float | None, positive: str,
              percentile: float, resamples: int, confidence: float, seed: int, out_dir: Path | None,
              write_config: Path | None, rule: str, tracking_uri: str | None, experiment: str, no_mlflow: bool,
              wide: bool, columns: str | None) -> int:
    """Recommend a guard threshold on the top-1 rerank score of a finished run.

    RUN is a summary JSON (results/NAME.json), its results folder, or an MLflow run id
    (with --tracking-uri). Nothing is re-run: the scores come from per_query.jsonl.

    \b
    Examples:
      evalkit calibrate results/demo_kb.json --variant hybrid_rrf_rerank_guard
      evalkit calibrate results/demo_kb.json --variant hybrid_rrf_rerank_guard \\
          --objective precision --target 0.9 --write-config graph_configs/guard_p90.yaml

    Prints, per variant: the reranker, the positive definition, the recommended t with
    a seeded bootstrap interval and the expected abstention precision/recall, the
    relative rule (P10 of answerable scores) and the current guard. Writes overlaid
    histograms, ROC and precision-recall curves (PNG) and calibration.json, and logs them
    to the variant's MLflow run (or a new run).
    """
    env_quiet()
    if objective != "f1" and target is None:
        raise click.BadParameter(f"--objective {objective} needs --target, e.g. --target 0.9", param_hint="--target")
    run = load_run(run_ref, tracking_uri)
    names = list(dict.fromkeys(variants)) or [n for n in run.variant_names
                                              if any(r.get("rerank_top1") is not None for r in run.rows(n))]
    if not names:
        raise click.UsageError(f"no variant of {run_ref} has rerank scores; calibrate needs a rerank node")
    if write_config and len(names) != 1:
        raise click.BadParameter("--write-config needs exactly one --variant", param_hint="--write-config")
    out_dir = out_dir or run.output_stem().with_name(run.output_stem().name + ".calibrate")
    cals, written = [], {}
    for name in names:
        run.variant(name)
        scores = collect(run.results(name), name, positive)
        cal = run_calibration(scores, objective, target, positive, percentile, resamples, confidence, seed)
        cals.append(cal)
        folder = out_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        files = {}
        for fname, png in figures(cal, scores).items():
            (folder / fname).write_bytes(png)
            files[fname] = folder / fname
        (folder / "calibration.json").write_text(json.dumps(cal.to_dict(), indent=2, default=float) + "\n",
                                                 encoding="utf-8")
        files["calibration.json"] = folder / "calibration.json"
        written[name] = files
    click.echo(render_checked(lambda lay: format_calibration(cals, lay), layout(wide, columns)))
    (out_dir / "calibration.txt").write_text(format_calibration(cals) + "\n", encoding="utf-8")
    click.echo(f"\nfigures and calibration.json: {display_path(out_dir)}/<variant>/")
    for msg in run.warnings:
        click.echo(f"warning: {msg}", err=True)
    if write_config:
        _write(run, cals[0], rule, write_config)
    if not no_mlflow:
        _log(run, cals, written, tracking_uri, experiment)
    return 0


def _write(run, cal, rule: str, path: Path) -> None:
    config = run.config(cal.variant)
    for msg in run.warnings:
        click.echo(f"warning: {msg}", err=True)
    if config is None:
        raise click.UsageError(f"the graph config of '{cal.variant}' is not available; cannot write --write-config")
    if rule == "absolute":
        if cal.chosen is None:
            raise click.UsageError("no threshold meets the objective; nothing to write (lower --target?)")
        new = with_guard(config, threshold=cal.chosen["threshold"])
        what = f"absolute t = {cal.chosen['threshold']:.6f} ({cal.objective}" + \
               (f" >= {cal.target}" if cal.target is not None else "") + ")"
        if cal.threshold_ci:
            what += f", {cal.settings['confidence']:.0%} CI [{cal.threshold_ci[0]:.4f}, {cal.threshold_ci[1]:.4f}]"
    else:
        per_query = run.per_query_path(cal.variant)
        new = with_guard(config, percentile=cal.relative["percentile"], calibration=str(per_query))
        what = f"relative: P{cal.relative['percentile']:g} of answerable scores (t = {cal.relative['threshold']:.6f} now)"
    header = [f"calibrated by `evalkit calibrate` from {run.source}, variant {cal.variant}",
              f"reranker: {', '.join(cal.reranker)} (this threshold is valid for this reranker only)",
              f"guard: {what}; positive = {cal.positive}"]
    write_config(new, path, header)
    click.echo(f"wrote {path} (variant '{new.name}')")


def _log(run, cals, written, tracking_uri, experiment) -> None:
    uri = tracking_uri_for(run, tracking_uri)
    for cal in cals:
        run_id = run.variant(cal.variant).mlflow_run_id
        tag = {"evalkit.calibrate.threshold": f"{cal.chosen['threshold']:.6f}" if cal.chosen else "none",
               "evalkit.calibrate.reranker": ", ".join(cal.reranker)}
        try:
            info = log_artifacts(written[cal.variant], tracking_uri=uri, run_id=run_id,
                                 artifact_path=f"calibration/{cal.objective}-{cal.positive}", experiment=experiment,
                                 run_name=f"calibrate {cal.variant}", tags=tag,
                                 artifact_root=run.summary_path.parent if run.summary_path else None)
        except Exception as exc:  # noqa: BLE001  (the files are on disk already; say so, keep going)
            click.echo(f"warning: MLflow logging failed ({type(exc).__name__}: {exc})", err=True)
            return
        where = "the variant's run" if run_id else "a new run"
        click.echo(f"MLflow: logged {cal.variant}'s figures to {where} {info['run_id']} in {uri}")
