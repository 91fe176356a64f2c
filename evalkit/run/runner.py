"""The eval runner: every variant on every query, with traces, metrics, files and MLflow.

``run_eval`` is what ``evalkit run``, ``evalkit demo`` and ``runners/eval_runner.py``
call. Variants run one after another over shared resources (models load once, indexes
build once); queries within a variant may run on several threads. Results do not depend
on the number of workers: each query runs on its own copy of the state, nothing random
is unseeded, and results are ordered by the eval set before anything is aggregated.
"""
from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError
from evalkit.evalsets import EvalSet
from evalkit.graph import GraphConfig, build_graph
from evalkit.graph.memo import NodeMemo
from evalkit.index.corpus import load_corpus
from evalkit.index.resources import Resources
from evalkit.llm.usage import Usage
from evalkit.metrics import DEFAULT_METRICS, aggregate, parse_metric
from evalkit.metrics.agentic import add_loop_metrics, aggregate_loops
from evalkit.metrics.answer import aggregate_answers
from evalkit.records import QueryResult, RunSummary, VariantSummary
from evalkit.run.query import QueryContext, run_query
from evalkit.run.store import VariantStore, results_folder, write_json_atomic

NO_EVIDENCE = "no_reliable_evidence"


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


def variant_metrics(results: Sequence[QueryResult], retrieval: Sequence[str] = DEFAULT_METRICS
                    ) -> tuple[dict[str, float], int]:
    """Retrieval means over answerable queries, guard abstention rates, answer metrics.

    ``abstain_rate_answerable``: share of answerable queries the guard stopped (false
    abstentions); ``abstain_rate_unanswerable``: share of unanswerable queries it stopped
    (correct abstentions). Answer metrics (faithfulness, hallucination...) come from
    ``evalkit.metrics.answer.aggregate_answers`` for variants that generate; loop metrics
    (rescued / harmed / futile, loop cost) from ``evalkit.metrics.agentic.aggregate_loops``
    for variants with agentic nodes. Returns the metrics and the number of queries
    excluded from the retrieval metrics (no gold).
    """
    answerable = [r for r in results if r.gold_doc_ids]
    metrics = aggregate([{m: r.metrics[m] for m in retrieval} for r in answerable])
    if any(r.outcome in (NO_EVIDENCE, "evidence_found") or _guard_ran(r) for r in results):
        unanswerable = [r for r in results if not r.gold_doc_ids]
        for name, group in (("abstain_rate_answerable", answerable), ("abstain_rate_unanswerable", unanswerable)):
            if group:
                metrics[name] = sum(_guard_tripped(r) for r in group) / len(group)
    metrics.update(aggregate_answers([(bool(r.gold_doc_ids), r.metrics) for r in results]))
    metrics.update(aggregate_loops(results))  # reflection loops / router: evalkit.metrics.agentic
    return metrics, len(results) - len(answerable)


def _guard_ran(r: QueryResult) -> bool:
    return any(e["type"] == "guard" for e in r.trace)


def _guard_tripped(r: QueryResult) -> bool:
    return any(e["type"] == "guard" and e["wrote"].get("guard_triggered") for e in r.trace)


def usage_totals(results: Sequence[QueryResult]) -> dict[str, dict[str, float]]:
    """LLM usage summed over queries, by purpose (generate, judge, ...)."""
    totals: dict[str, Usage] = {}
    for r in results:
        for purpose, u in r.usage.items():
            totals.setdefault(purpose, Usage()).add(Usage(**u))
    return {k: v.to_dict() for k, v in sorted(totals.items())}


def metrics_by_type(results: Sequence[QueryResult], retrieval: Sequence[str] = DEFAULT_METRICS
                    ) -> dict[str, dict[str, float]]:
    """The same metrics per question type (single, multi_hop, ..., unanswerable), with ``n``."""
    types = sorted({r.type or "" for r in results})
    out = {}
    for t in types:
        group = [r for r in results if (r.type or "") == t]
        out[t] = {"n": float(len(group)), **variant_metrics(group, retrieval)[0]}
    return out


def _timing(results: Sequence[QueryResult]) -> dict[str, float]:
    per_query = sorted(sum(e["duration_ms"] for e in r.trace) for r in results)
    if not per_query:
        return {}
    p95 = per_query[min(len(per_query) - 1, int(round(0.95 * (len(per_query) - 1))))]
    reused = sum(bool(e.get("reused")) for r in results for e in r.trace)
    return {"latency_ms_mean": round(sum(per_query) / len(per_query), 3), "latency_ms_p95": round(p95, 3),
            "node_executions": float(sum(len(r.trace) for r in results)), "node_executions_reused": float(reused)}


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
    corpus = eval_set.corpus or load_corpus(eval_set.corpus_path)
    resources = Resources(corpus, **({"cache_root": options.cache_root} if options.cache_root else {}))
    ref = eval_set.ref()
    ref.corpus, ref.corpus_sha256 = str(eval_set.corpus_path), corpus.sha256
    summary = RunSummary(eval_set=ref, variants={}, git_commit=git_commit())
    folder = results_folder(options.output)
    judge = _make_judge(options, configs, resources)
    memo = NodeMemo() if options.share_work else None
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
                               judge=judge if generates(config) else None, passages=view.passages())
            for result in _run_all(ctx, todo, options, config.name):
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
            seconds=round(time.perf_counter() - t0, 3), timing={**_timing(ordered), "build_s": round(build_s, 3)},
            by_type=metrics_by_type(ordered, options.metrics), usage=usage_totals(ordered),
            judge=judge.identity if judge is not None and generates(config) else None)
        all_results[config.name] = ordered
        stores[config.name] = store
        write_json_atomic(options.output, summary.to_dict())
    if options.mlflow:
        _log_mlflow(summary, configs, all_results, stores, options, echo)
    write_json_atomic(options.output, summary.to_dict())
    return summary


def generates(config: GraphConfig) -> bool:
    """Whether a variant produces answers (has a generate or fallback node) that must be judged."""
    return any(spec["type"] in ("generate", "fallback") for spec in config.nodes.values())


def _make_judge(options: RunOptions, configs: Sequence[GraphConfig], resources: Resources) -> Any:
    if not any(generates(c) for c in configs):
        return None
    from evalkit.judges import make_judge

    return make_judge(options.judge, cache_root=resources.cache_root, **options.judge_options)


def _run_all(ctx: QueryContext, records: list, options: RunOptions, name: str):
    """Yield results as queries finish (completion order); callers re-order by the eval set."""
    bar = None
    if options.progress and records:
        from tqdm import tqdm

        bar = tqdm(total=len(records), desc=name, unit="q", file=sys.stderr, leave=True)
    try:
        if options.workers <= 1:
            for rec in records:
                yield run_query(ctx, rec)
                bar and bar.update(1)
        else:
            with ThreadPoolExecutor(max_workers=options.workers) as pool:
                futures = [pool.submit(run_query, ctx, rec) for rec in records]
                for fut in futures:
                    yield fut.result()
                    bar and bar.update(1)
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
