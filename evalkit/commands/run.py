"""``evalkit run``: run graph variants on an eval set."""
from __future__ import annotations

from pathlib import Path

import click


def _env_quiet() -> None:
    """Offline, quiet defaults for every command that loads models or MLflow."""
    import os

    for key, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MLFLOW_DISABLE_TELEMETRY": "true",
                       "TOKENIZERS_PARALLELISM": "false", "RAGAS_DO_NOT_TRACK": "true"}.items():
        os.environ.setdefault(key, value)


def execute(eval_set_spec: str, config_paths: list[Path], output: Path, *, workers: int = 1, resume: bool = False,
            metrics: tuple[str, ...] = (), tracking_uri: str | None = None, experiment: str = "evalkit",
            mlflow: bool = True, progress: bool = True, judge: str = "offline",
            judge_llm: Path | None = None, traces: bool = True, trace_limit: int | None = None,
            share_work: bool = True) -> int:
    """Shared body of ``evalkit run``, ``evalkit demo`` and ``runners/eval_runner.py``."""
    _env_quiet()
    from evalkit.analysis.report import by_type_table, comparison_table
    from evalkit.evalsets import load_eval_set
    from evalkit.graph.sweep import load_variants
    from evalkit.metrics import DEFAULT_METRICS
    from evalkit.run.runner import RunOptions, run_eval

    eval_set = load_eval_set(eval_set_spec)
    configs = [c for p in config_paths for c in load_variants(p)]
    click.echo(f"eval set {eval_set.name} v{eval_set.version} ({len(eval_set.records)} queries, "
               f"sha256 {eval_set.sha256[:12]}); {len(configs)} variant(s)", err=True)
    judge_options = {}
    if judge_llm is not None:
        import yaml

        from evalkit.llm.base import LLMSpec

        judge_options["llm"] = LLMSpec(**(yaml.safe_load(judge_llm.read_text(encoding="utf-8")) or {}))
    options = RunOptions(output=output, workers=workers, resume=resume, metrics=tuple(metrics) or DEFAULT_METRICS,
                         tracking_uri=tracking_uri, experiment=experiment, mlflow=mlflow, progress=progress,
                         judge=judge, judge_options=judge_options, traces=traces, trace_limit=trace_limit,
                         share_work=share_work)
    summary = run_eval(eval_set, configs, options, echo=lambda m: click.echo(m, err=True))
    click.echo(comparison_table(summary))
    per_type = by_type_table(summary, "hit@5")
    if per_type:
        click.echo("\n" + per_type)
    click.echo(f"\nsummary: {output}\nper-query records and traces: {output.with_suffix('')}/<variant>/per_query.jsonl")
    if summary.mlflow:
        click.echo(f"MLflow: {summary.mlflow.get('tracking_uri')}  (open it: {summary.mlflow.get('ui_command')})")
    failed = sum(v.n_failed for v in summary.variants.values())
    if failed:
        click.echo(f"note: {failed} query run(s) failed; see 'error' and 'trace' in per_query.jsonl", err=True)
    return 0


@click.command("run")
@click.option("--eval-set", "eval_set", required=True, metavar="PATH[@vN]",
              help="Eval set JSONL, optionally pinned to a frozen version: eval_sets/demo_kb.jsonl@v1.")
@click.option("--graph-config", "graph_configs", required=True, multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A graph config YAML; repeat the option to compare several variants. A file with a "
                   "`sweep:` section runs one variant per combination of its values.")
@click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Summary JSON to write; per-variant per_query.jsonl go to the folder with the same stem.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Queries run in parallel threads; results are identical for any value.")
@click.option("--resume", is_flag=True, help="Keep finished queries of an interrupted run with the same inputs.")
@click.option("--metric", "metrics", multiple=True, metavar="NAME",
              help="Metric to compute (repeatable), e.g. recall@100, final:recall@20. Default: recall@20 "
                   "(retrieval stage), hit@5, mrr@10, ndcg@10 (after rerank).")
@click.option("--tracking-uri", default=None, help="MLflow tracking server (default: sqlite store beside --output).")
@click.option("--experiment", default="evalkit", show_default=True, help="MLflow experiment name.")
@click.option("--no-mlflow", is_flag=True, help="Skip MLflow logging (files are still written).")
@click.option("--no-progress", is_flag=True, help="Hide the progress bars.")
@click.option("--judge", default="offline", show_default=True,
              help="Judge of generated answers: offline (no LLM), llm or ragas (these need --judge-llm).")
@click.option("--judge-llm", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="YAML LLM spec for the llm/ragas judges, e.g. {backend: openai, base_url: ..., model: ..., "
                   "api_key_env: OPENAI_API_KEY}.")
@click.option("--no-share", is_flag=True,
              help="Run every node of every variant even when another variant already ran the identical "
                   "execution (by default such results are reused; numbers are the same either way).")
@click.option("--no-traces", is_flag=True, help="Do not log per-query MLflow traces (one span per node).")
@click.option("--trace-limit", type=click.IntRange(0), default=None,
              help="Log MLflow traces for at most N queries per variant (default: all).")
def run(eval_set: str, graph_configs: tuple[Path, ...], output: Path, workers: int, resume: bool,
        metrics: tuple[str, ...], tracking_uri: str | None, experiment: str, no_mlflow: bool, no_progress: bool,
        judge: str, judge_llm: Path | None, no_share: bool, no_traces: bool, trace_limit: int | None) -> int:
    """Run each graph variant on every query of an eval set.

    \b
    Example:
      evalkit run --eval-set eval_sets/demo_kb.jsonl@v1 \\
        --graph-config graph_configs/bm25.yaml --graph-config graph_configs/hybrid_rrf.yaml \\
        --output results/demo_kb.json

    Writes the summary to --output, per-query records (rankings, metrics, the full
    per-node trace, errors) to <output stem>/<variant>/per_query.jsonl, and one MLflow
    parent run with a nested run per variant. Prints a comparison table.
    """
    return execute(eval_set, list(graph_configs), output, workers=workers, resume=resume, metrics=metrics,
                   tracking_uri=tracking_uri, experiment=experiment, mlflow=not no_mlflow,
                   progress=not no_progress, judge=judge, judge_llm=judge_llm, traces=not no_traces,
                   trace_limit=trace_limit, share_work=not no_share)
