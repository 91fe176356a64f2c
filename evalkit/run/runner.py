"""The eval runner: every variant on every query, with traces, metrics, files and MLflow.

``run_eval`` is what ``evalkit run``, ``evalkit demo`` and ``runners/eval_runner.py``
call. Variants run one after another over shared resources (models load once, indexes
build once, identical node executions run once); queries within a variant run on
threads or on Ray (``run.executors``). Results do not depend on the executor or the
number of workers: each query runs on its own copy of the state, nothing random is
unseeded, and results are ordered by the eval set before anything is aggregated.
"""
from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError
from evalkit.evalsets import EvalSet
from evalkit.extras import check as check_extra
from evalkit.graph import GraphConfig, build_graph
from evalkit.graph.memo import WorkMemo
from evalkit.graph.schema import Role
from evalkit.index.corpus import load_corpus
from evalkit.index.resources import Resources
from evalkit.metrics import DEFAULT_METRICS, parse_metric
from evalkit.metrics.agentic import add_loop_metrics
from evalkit.metrics.tenancy import document_tenants
from evalkit.records import QueryResult, RunSummary, VariantSummary
from evalkit.run.executors import EXECUTORS, run_local, run_ray
from evalkit.run.query import QueryContext
from evalkit.run.store import VariantStore, results_folder, write_json_atomic
from evalkit.run.summarise import metrics_by_type, timing, usage_totals, variant_metrics

__all__ = ["RunOptions", "generates", "run_eval", "variant_metrics"]


@dataclass
class RunOptions:
    """How to run: output location, parallelism, resume, metrics, MLflow target."""

    output: Path
    workers: int = 1
    resume: bool = False
    metrics: Sequence[str] = DEFAULT_METRICS
    tracking_uri: str | None = None
    experiment: str = "evalkit"
    mlflow: bool = True
    progress: bool = True
    cache_root: Path | None = None
    check_mutation: bool = False
    tags: dict[str, str] = field(default_factory=dict)
    share_work: bool = True  # compute identical node executions once across variants (graph.memo)
    traces: bool = True  # also log each query's node path as an MLflow trace
    trace_limit: int | None = None
    judge: str = "offline"  # judge backend for generating variants (evalkit.judges registry)
    judge_options: dict[str, Any] = field(default_factory=dict)
    executor: str = "local"  # local (threads) or ray
    ray_address: str | None = None


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def run_eval(eval_set: EvalSet, configs: Sequence[GraphConfig], options: RunOptions,
             echo: Callable[[str], None] = print) -> RunSummary:
    """Run every config on every record of ``eval_set``; write files; log to MLflow; return the summary."""
    names = [c.name for c in configs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise EvalkitError(f"two graph configs share the variant name {dupes}; give each a distinct 'name:'")
    for m in options.metrics:
        parse_metric(m)
    if options.executor == "ray":
        check_extra("ray", "--executor ray")  # before any index is built
    corpus = eval_set.corpus or load_corpus(eval_set.corpus_path)
    resources = Resources(corpus,
                          **({"cache_root": options.cache_root} if options.cache_root else {}))
    ref = eval_set.ref()
    ref.corpus, ref.corpus_sha256 = str(eval_set.corpus_path), corpus.sha256
    summary = RunSummary(eval_set=ref, variants={}, git_commit=git_commit())
    folder = results_folder(options.output)
    judge = _make_judge(options, configs, resources)
    memo = WorkMemo() if options.share_work else None
    tenants = document_tenants(corpus.documents)
    all_results: dict[str, list[QueryResult]] = {}
    stores: dict[str, VariantStore] = {}
    for config in configs:
        t0 = time.perf_counter()
        view = resources.for_variant(config.chunking, config.seed, Path(config.source).parent)
        try:
            graph = build_graph(config, view, check_mutation=options.check_mutation, memo=memo)
        except EvalkitError:
            raise
        except Exception as exc:
            raise EvalkitError(f"{config.source}: could not build variant '{config.name}': "
                               f"{type(exc).__name__}: {exc}") from exc
        build_s = time.perf_counter() - t0
        fingerprint = {"eval_set_sha256": ref.sha256, "eval_set_version": ref.version,
                       "config_sha256": config.sha256(), "metrics": list(options.metrics),
                       "corpus_sha256": corpus.sha256,
                       "judge": judge.identity if judge is not None and generates(config) else None}
        store = VariantStore(folder / config.name, fingerprint)
        kept = store.resumable() if options.resume else {}
        todo = [r for r in eval_set.records if r.id not in kept]
        if kept:
            echo(f"{config.name}: resuming, {len(kept)} finished queries kept, {len(todo)} to run")
        store.start(kept[r.id] for r in eval_set.records if r.id in kept)
        results = dict(kept)
        try:
            ctx = QueryContext(graph, options.metrics, generates=generates(config),
                               judge=judge if generates(config) else None, passages=view.passages(),
                               tenants=tenants)
            payload = _payload(config, eval_set, resources, options) if options.executor == "ray" else None
            if payload is None and todo:
                graph.prepare([r.question for r in todo])  # batch work (e.g. query encoding) before the loop
            for result in _run_all(ctx, payload, todo, options, config.name):
                results[result.query_id] = result
                store.append(result)
        except BaseException:
            store.close()
            raise
        ordered = [results[r.id] for r in eval_set.records]
        add_loop_metrics(ordered)  # per-query loop metrics into per_query.jsonl and MLflow
        store.finish(ordered)
        metrics, excluded = variant_metrics(ordered, options.metrics)
        summary.variants[config.name] = VariantSummary(
            metrics=metrics, n_failed=sum(r.error is not None for r in ordered), n_queries=len(ordered),
            n_excluded=excluded, config_path=config.source, config_sha256=config.sha256(), index=_index_meta(view),
            seconds=round(time.perf_counter() - t0, 3), timing={**timing(ordered), "build_s": round(build_s, 3)},
            by_type=metrics_by_type(ordered, options.metrics), usage=usage_totals(ordered),
            judge=judge.identity if judge is not None and generates(config) else None)
        all_results[config.name] = ordered
        stores[config.name] = store
        summary.sharing = memo.stats() if memo is not None else {}
        write_json_atomic(options.output, summary.to_dict())
    if options.mlflow:
        _log_mlflow(summary, configs, all_results, stores, options, echo)
    write_json_atomic(options.output, summary.to_dict())
    return summary


def generates(config: GraphConfig) -> bool:
    """Whether a variant produces answers (has a node with the generator role) that must be judged."""
    return Role.GENERATOR in config.roles()


def _make_judge(options: RunOptions, configs: Sequence[GraphConfig], resources: Resources) -> Any:
    if not any(generates(c) for c in configs):
        return None
    from evalkit.judges import make_judge

    return make_judge(options.judge, cache_root=resources.cache_root, **options.judge_options)


def _payload(config: GraphConfig, eval_set: EvalSet, resources: Resources, options: RunOptions) -> dict[str, Any]:
    """What a Ray worker needs to rebuild this variant's query context (see run.executors)."""
    judge_options = {k: (v.model_dump() if hasattr(v, "model_dump") else v) for k, v in options.judge_options.items()}
    return {"config": config.to_dict(), "source": config.source, "corpus_path": str(eval_set.corpus_path),
            "cache_root": str(Path(resources.cache_root).resolve()), "metrics": list(options.metrics),
            "judge": options.judge if generates(config) else None, "judge_options": judge_options}


def _run_all(ctx: QueryContext, payload: dict[str, Any] | None, records: list, options: RunOptions, name: str):
    """Yield results in record order from the chosen executor, with a progress bar."""
    if options.executor not in EXECUTORS:
        raise EvalkitError(f"unknown executor '{options.executor}'; valid: {', '.join(EXECUTORS)}")
    bar = None
    if options.progress and records:
        from evalkit.progress import progress

        bar = progress(len(records), name, unit="q")
    try:
        if payload is not None:
            results = run_ray(payload, records, options.workers, options.ray_address)
        else:
            results = run_local(ctx, records, options.workers)
        for result in results:
            yield result
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()


def _index_meta(view: Any) -> dict[str, Any]:
    keep = ("index_type", "embedder", "tokenizer", "kind", "n", "dim", "corpus_sha256", "chunking", "created", "path",
            "k1", "b", "idf", "nlist", "extraction", "aliases_sha256", "algorithm", "resolution", "seed", "stats")
    out: dict[str, Any] = {}
    for m in view.used:
        kind = m.get("index_type") or ("dense" if "embedder" in m else "bm25")
        name = kind if kind not in out else f"{kind}_{len(out)}"
        out[name] = {k: m[k] for k in keep if k in m}
    return out


def _log_mlflow(summary: RunSummary, configs: Sequence[GraphConfig], results: dict[str, list[QueryResult]],
                stores: dict[str, VariantStore], options: RunOptions, echo: Callable[[str], None]) -> None:
    from evalkit.track import VariantLog, log_invocation

    logs = [VariantLog(name=c.name, params=c.flat_params(), config_yaml=c.to_yaml(),
                       summary=summary.variants[c.name], results=results[c.name],
                       per_query_path=stores[c.name].path) for c in configs]
    out_dir = results_folder(options.output).parent
    tags = dict(options.tags)
    for name, v in summary.variants.items():  # the parent run names every index it used
        for kind, meta in v.index.items():
            model = meta.get("embedder") or meta.get("tokenizer") or meta.get("algorithm")
            tags[f"index.{name}.{kind}"] = f"{model} n={meta.get('n')} chunking={meta.get('chunking')}"
    try:
        info = log_invocation(summary, logs, out_dir, tracking_uri=options.tracking_uri,
                              experiment=options.experiment, tags=tags, traces=options.traces,
                              trace_limit=options.trace_limit)
    except Exception as exc:  # results are on disk already; say so rather than lose them
        echo(f"warning: MLflow logging failed ({type(exc).__name__}: {exc}); results are in {options.output}")
        return
    summary.mlflow = info
