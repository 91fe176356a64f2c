"""``evalkit run``: run graph variants on an eval set."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import click

from evalkit import redact
from evalkit.analysis.labels import corrected_estimates, load_label_files
from evalkit.analysis.tables import Layout
from evalkit.commands.options import (
    ESCALATE_HELP,
    JUDGE_HELP,
    absolute_spec,
    env_quiet,
    judge_failed_everywhere,
    judge_options_for,
    mlflow_hint,
    output_file,
    scoring_options,
    summary_tables,
    table_options,
)
from evalkit.commands.options import layout as table_layout
from evalkit.evalsets import load_eval_set
from evalkit.graph.sweep import load_variants
from evalkit.judges.base import JUDGE_INFO, judges, takes_model_folder
from evalkit.judges.nli import options_from_path
from evalkit.locking import output_lock
from evalkit.metrics import DEFAULT_METRICS, Scoring
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import check_output_path, prepare_output, read_results, write_json_atomic

INVOCATION = "invocation.json"  # in the results folder: what `--resume OUTPUT` re-runs


@dataclass
class RunRequest:
    """One invocation of the runner, as typed on the command line (saved for ``--resume OUTPUT``)."""

    eval_set: str
    graph_configs: list[str]
    output: str
    workers: int = 1
    metrics: list[str] = field(default_factory=list)
    tracking_uri: str | None = None
    experiment: str = "evalkit"
    mlflow: bool = True
    mlflow_sync: bool = False
    judge: str = "offline"
    escalate: str | None = None
    judge_llm: str | None = None
    judge_model: str | None = None
    traces: bool = True
    trace_limit: int | None = None
    trace_all: bool = False
    share_work: bool = True
    executor: str = "local"
    ray_address: str | None = None
    relevance_level: int = 1
    ties: str = "pipeline"
    overwrite: bool = False
    labels: list[str] = field(default_factory=list)

    def save(self) -> None:
        """Write ``invocation.json`` (secrets masked: a credential in ``--tracking-uri`` is not kept)."""
        from evalkit.fileio import write_atomic

        write_atomic(Path(self.output).with_suffix("") / INVOCATION, redact.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, output: Path) -> RunRequest:
        path = output.with_suffix("") / INVOCATION
        if not path.exists():
            raise click.ClickException(f"{output}: nothing to resume ({path} not found); start the run with "
                                       "--eval-set, --graph-config and --output")
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


def execute(request: RunRequest, *, resume: bool = False, progress: bool = True, dry_run: bool = False,
            layout: Layout | None = None, source: str = "evalkit run") -> int:
    """Shared body of ``evalkit run``, ``evalkit demo`` and ``runners/eval_runner.py``.

    ``source`` names the command in MLflow's ``mlflow.source.name`` tag. A run stopped by
    Ctrl-C or SIGTERM exits 130 / 143 after saying what it left (a partial summary, MLflow
    runs marked KILLED) and how to resume.
    """
    env_quiet()

    scoring = Scoring(relevance_level=request.relevance_level, ties=request.ties)
    eval_set = load_eval_set(request.eval_set)
    for warning in eval_set.warnings:
        click.echo(f"warning: {warning}", err=True)
    configs = [c for p in request.graph_configs for c in load_variants(p)]
    click.echo(f"eval set {eval_set.name} v{eval_set.version} ({len(eval_set.records)} queries, "
               f"sha256 {eval_set.sha256[:12]}); {len(configs)} variant(s)", err=True)
    if dry_run:
        from evalkit.cachestore import default_cache_root
        from evalkit.run.plan import make_plan
        from evalkit.track.describe import logging_plan

        plan = make_plan(eval_set, configs, request.judge, default_cache_root(), request.share_work)
        if request.mlflow:
            plan.tracking = logging_plan(eval_set, configs, Path(request.output), request.tracking_uri,
                                         request.experiment, request.traces, request.trace_limit, request.trace_all,
                                         tuple(request.metrics) or DEFAULT_METRICS, background=not request.mlflow_sync)
        click.echo(plan.table())
        return 0
    judge_options: dict[str, Any] = judge_options_for(request.judge, request.escalate)
    if request.judge_llm:
        from evalkit.llm.base import LLMSpec

        judge_options["llm"] = LLMSpec.from_yaml(request.judge_llm)
    judge_options.update(judge_model_options(request.judge, request.judge_model))
    output = Path(request.output)
    options = RunOptions(output=output, workers=request.workers, resume=resume,
                         metrics=tuple(request.metrics) or DEFAULT_METRICS, tracking_uri=request.tracking_uri,
                         experiment=request.experiment, mlflow=request.mlflow, progress=progress,
                         judge=request.judge, judge_options=judge_options, traces=request.traces,
                         trace_limit=request.trace_limit, share_work=request.share_work,
                         trace_policy="all" if request.trace_all else "misses",
                         executor=request.executor, ray_address=request.ray_address, scoring=scoring,
                         overwrite=request.overwrite, mlflow_background=not request.mlflow_sync, source_name=source)
    if scoring != Scoring():
        click.echo(f"scoring: {scoring.describe()} (see docs/metrics.md)", err=True)

    check_output_path(output)  # a bad --output is refused before anything is locked or written
    try:
        with output_lock(output, note=lambda m: click.echo(m, err=True)):  # one writer: a second is refused (exit 2)
            prepare_output(output, eval_set.ref(), overwrite=request.overwrite)  # refuse a bad --output before work
            request.overwrite = False  # done: a later --resume must not delete what this run writes
            request.save()
            summary = run_eval(eval_set, configs, options, echo=lambda m: click.echo(m, err=True))
    except KeyboardInterrupt as exc:
        how = str(exc) or "SIGINT"
        click.echo(f"interrupted ({how}): partial summary in {output} (\"partial\": true); MLflow runs marked "
                   f"KILLED; continue with: evalkit run --resume {output}", err=True)
        return 143 if how == "SIGTERM" else 130
    if request.labels:
        _apply_labels(summary, output, request.labels)
    click.echo(summary_tables(summary, layout or Layout()))
    click.echo(f"\nsummary: {output}\nper-query records and traces: {output.with_suffix('')}/<variant>/per_query.jsonl")
    if summary.mlflow:
        click.echo(mlflow_hint(summary, layout or Layout()))
    corrected = [v.corrected for v in summary.variants.values() if v.corrected]
    if corrected:
        from evalkit.analysis.label_text import format_corrected
        from evalkit.analysis.labels import from_dict

        click.echo("\n" + format_corrected([from_dict(c) for c in corrected]))
    failed = sum(v.n_failed for v in summary.variants.values())
    if failed:
        click.echo(f"note: {failed} query run(s) failed; see 'error' and 'trace' in per_query.jsonl", err=True)
    if problem := judge_failed_everywhere(summary):
        click.echo(f"error: {problem}", err=True)
        return 1
    return 0


def judge_model_options(judge: str, judge_model: str | None) -> dict[str, Any]:
    """``--judge-model PATH`` as judge options (``{model: FOLDER, ...}``); only judges using a model folder take it."""
    if not judge_model:
        return {}
    if not takes_model_folder(judge):
        judges()
        folders = " or ".join(n for n, j in JUDGE_INFO.items() if j.model_folder)
        raise click.BadParameter(f"--judge-model applies to --judge {folders}, not '{judge}'", param_hint="--judge-model")

    return options_from_path(judge_model)


@click.command("run")
@click.option("--eval-set", "eval_set", metavar="PATH[@vN]",
              help="Eval set JSONL, optionally pinned to a frozen version: eval_sets/demo_kb.jsonl@v1.")
@click.option("--graph-config", "graph_configs", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A graph config YAML; repeat the option to compare several variants. A file with a "
                   "`sweep:` section runs one variant per combination of its values.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), callback=output_file,
              help="Summary JSON to write; per-variant per_query.jsonl go to the folder with the same stem.")
@click.option("--resume", "resume", is_flag=False, flag_value="", default=None, metavar="[OUTPUT]",
              help="Continue an interrupted run: keep every finished query, run the rest. Alone "
                   "(`--resume results/x.json`) it re-reads the original options from the run's folder.")
@click.option("--workers", default=None, type=click.IntRange(1, 64),
              help="Parallel query threads (local) or Ray CPUs; results are identical for any value. [default: 1]")
@click.option("--executor", type=click.Choice(["local", "ray"]), default=None,
              help="Where queries run: local threads, or Ray tasks. [default: local]")
@click.option("--ray-address", default=None, help="An existing Ray cluster (e.g. ray://head:10001); "
              "without it --executor ray starts a local Ray.")
@click.option("--dry-run", is_flag=True, help="Estimate the work (node executions after sharing, LLM calls, "
              "passages to encode) from the configs and cache state, and exit.")
@scoring_options
@click.option("--metric", "metrics", multiple=True, metavar="NAME",
              help="Metric to compute (repeatable), e.g. recall@100, final:recall@20. Default: recall@20 "
                   "(retrieval stage), hit@5, mrr@10, ndcg@10 (after rerank).")
@click.option("--tracking-uri", default=None, help="MLflow tracking server (default: sqlite store beside --output).")
@click.option("--experiment", default=None, help="MLflow experiment name. [default: evalkit]")
@click.option("--no-mlflow", is_flag=True, help="Skip MLflow logging (files are still written).")
@click.option("--mlflow-sync", is_flag=True, help="Log to MLflow in this process after each variant instead of "
              "in a background worker beside the query loop (same content, slower).")
@click.option("--no-progress", is_flag=True, help="Hide the progress bars.")
@click.option("--overwrite", is_flag=True,
              help="Replace the results of another eval set found in the --output folder (refused otherwise).")
@click.option("--judge", default=None, help=JUDGE_HELP + " [default: offline]")
@click.option("--escalate", default=None, metavar="VERDICT,...", help=ESCALATE_HELP)
@click.option("--judge-llm", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="YAML LLM spec for the llm/ragas judges, e.g. {backend: openai, base_url: ..., model: ..., "
                   "api_key_env: OPENAI_API_KEY}.")
@click.option("--judge-model", metavar="PATH", default=None,
              help="For --judge nli: a local Hugging Face model folder (NLI or fact-checking classifier; nothing "
                   "is downloaded), or a YAML file of nli judge options {model: FOLDER, entailment_threshold: ...}.")
@click.option("--no-share", is_flag=True,
              help="Run every node of every variant even when another variant already ran the identical "
                   "execution (by default such results are reused; numbers are the same either way).")
@click.option("--no-traces", is_flag=True, help="Do not log per-query MLflow traces (one span per node).")
@click.option("--trace-all", is_flag=True, help="Log an MLflow trace for every query (default: every miss or "
              "failure, plus the first 10 other queries of each variant; all of them are in per_query.jsonl).")
@click.option("--trace-limit", type=click.IntRange(0), default=None,
              help="Log MLflow traces for at most N queries per variant.")
@click.option("--labels", "labels", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Human labels (from `evalkit label`, repeatable): the summary adds judge-corrected "
                   "hallucination rate and faithfulness with confidence intervals, and the judge's agreement.")
@table_options
def run(eval_set: str | None, graph_configs: tuple[Path, ...], output: Path | None, resume: str | None,
        workers: int | None, executor: str | None, ray_address: str | None, dry_run: bool, metrics: tuple[str, ...],
        tracking_uri: str | None, experiment: str | None, no_mlflow: bool, mlflow_sync: bool, no_progress: bool,
        judge: str | None, escalate: str | None, judge_llm: Path | None, judge_model: str | None,
        no_share: bool, no_traces: bool, trace_all: bool, trace_limit: int | None, relevance_level: int | None,
        ties: str | None, overwrite: bool, wide: bool, columns: str | None, labels: tuple[Path, ...]) -> int:
    """Run each graph variant on every query of an eval set.

    \b
    Example:
      evalkit run --eval-set eval_sets/demo_kb.jsonl@v1 \\
        --graph-config graph_configs/bm25.yaml --graph-config graph_configs/hybrid_rrf.yaml \\
        --output results/demo_kb.json
    After an interruption (Ctrl-C, a killed process):
      evalkit run --resume results/demo_kb.json

    Writes the summary to --output, per-query records (rankings, metrics, answers, the
    full per-node trace, errors) to <output stem>/<variant>/per_query.jsonl, and one
    MLflow parent run with a nested run per variant. Prints a comparison table.
    """
    if resume:  # --resume OUTPUT: the saved invocation, with any option given now on top
        request = RunRequest.load(Path(resume))
        if output is not None and Path(output).absolute() != Path(resume).absolute():
            raise click.BadParameter(f"--output {output} differs from the run being resumed ({resume})",
                                     param_hint="--output")
        # the run goes on where its files are now: the recorded --output may be relative to another folder, or
        # the results may have been moved since; resuming there would start a second run elsewhere
        if Path(request.output).absolute() != Path(resume).absolute():
            click.echo(f"note: the run was started with --output {request.output}; resuming it in {resume}", err=True)
        request.output = str(resume)
    else:
        missing = [n for n, v in (("--eval-set", eval_set), ("--graph-config", graph_configs), ("--output", output))
                   if not v]
        if missing or eval_set is None:  # eval_set None is in missing
            raise click.UsageError(f"missing {', '.join(missing)} (or use --resume OUTPUT to continue a run)")
        request = RunRequest(eval_set=absolute_spec(eval_set), output=str(output),
                             graph_configs=[str(Path(p).resolve()) for p in graph_configs])
    if resume and tracking_uri is None and request.tracking_uri and "***" in request.tracking_uri:
        raise click.UsageError(f"the run being resumed used a --tracking-uri with credentials, which evalkit never "
                               f"stores ({request.tracking_uri}); give --tracking-uri again, or pass the credentials "
                               "in MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD / MLFLOW_TRACKING_TOKEN")
    if eval_set and resume:
        request.eval_set = absolute_spec(eval_set)
    if graph_configs and resume:
        request.graph_configs = [str(Path(p).resolve()) for p in graph_configs]
    overrides = {"workers": workers, "executor": executor, "ray_address": ray_address, "tracking_uri": tracking_uri,
                 "experiment": experiment, "judge": judge, "escalate": escalate,
                 "judge_llm": str(judge_llm) if judge_llm else None,
                 "judge_model": _absolute_path(judge_model) if judge_model else None,
                 "trace_limit": trace_limit, "metrics": list(metrics) or None, "relevance_level": relevance_level,
                 "ties": ties}
    if labels:
        overrides["labels"] = [str(Path(p).resolve()) for p in labels]
    for key, value in overrides.items():
        if value is not None:
            setattr(request, key, value)
    for key, flag in (("mlflow", no_mlflow), ("share_work", no_share), ("traces", no_traces)):
        if flag:
            setattr(request, key, False)
    request.overwrite = overwrite
    if mlflow_sync:
        request.mlflow_sync = True
    if trace_all:
        request.trace_all = True
    return execute(request, resume=resume is not None, progress=not no_progress, dry_run=dry_run,
                   layout=table_layout(wide, columns))


def _apply_labels(summary: Any, output: Path, label_files: list[str]) -> None:
    """Judge-corrected estimates for every variant the label files name, into summary.json."""
    apply_labels(summary, output, load_label_files(label_files))


def apply_labels(summary: Any, output: Path, labels: list[Any]) -> None:
    """Judge-corrected estimates for every variant ``labels`` name (from files or MLflow), into summary.json."""
    for name, v in summary.variants.items():
        results = read_results(output.with_suffix("") / name / "per_query.jsonl")
        c = corrected_estimates(results, labels, name, run=output.stem)
        if c is not None:
            v.corrected = c.to_dict()
    write_json_atomic(output, summary.to_dict())


def _absolute_path(path: str) -> str:
    """``path`` made absolute when it exists (so a resume works from anywhere); as given otherwise."""
    p = Path(path).expanduser()
    return str(p.resolve()) if p.exists() else path
