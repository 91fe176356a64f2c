"""The eval runner: every variant on every query, with traces, metrics, files and MLflow.

``run_eval`` is what ``evalkit run``, ``evalkit demo`` and ``runners/eval_runner.py``
call. Variants run one after another over shared resources (models load once, indexes
build once, identical node executions run once); queries within a variant run on
threads or on Ray (``run.executors``). Results do not depend on the executor or the
number of workers: each query runs on its own copy of the state, nothing random is
unseeded, and results are ordered by the eval set before anything is aggregated.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError
from evalkit.evalsets import EvalSet
from evalkit.evalsets.evalset import MAX_QUESTION_CHARS
from evalkit.extras import check as check_extra
from evalkit.graph import GraphConfig, build_graph
from evalkit.graph.memo import WorkMemo
from evalkit.graph.schema import Role
from evalkit.index.corpus import load_corpus
from evalkit.index.resources import Resources
from evalkit.judges import make_judge
from evalkit.locking import output_lock
from evalkit.machine import environment, environment_difference, git_commit
from evalkit.metrics import Scoring, parse_metric
from evalkit.metrics.agentic import add_loop_metrics
from evalkit.metrics.tenancy import document_tenants
from evalkit.models.abstention import identity as abstention_stage
from evalkit.records import RunSummary
from evalkit.run.executors import EXECUTORS, build_on_ray, run_local, run_ray
from evalkit.run.health import index_degradations
from evalkit.run.options import RunOptions
from evalkit.run.plan import work_keys
from evalkit.run.query import QueryContext
from evalkit.run.summarise import variant_metrics, variant_summary
from evalkit.run.tracking import (
    close_tracking,
    signals_interrupt,
    start_tracking,
    submit_variant,
    variant_log,
)
from evalkit.runstore import (
    VARIANT_NAME,
    VariantStore,
    check_output_path,
    long_lived_frozen,
    prepare_output,
    results_folder,
    write_json_atomic,
)

__all__ = ["RunOptions", "generates", "git_commit", "run_eval", "variant_metrics"]


def _note_another_machine(output: Path, here: dict[str, Any], echo: Callable[[str], None]) -> None:
    """Warn when ``--resume`` continues a run begun on another machine or stack: its kept queries were made there."""
    try:
        before = json.loads(Path(output).read_text(encoding="utf-8")).get("environment")
    except (OSError, ValueError, AttributeError):
        return
    diff = environment_difference(before, here, ("the run being resumed", "this process"))
    if diff:
        echo(f"warning: resuming a run begun on another machine or stack ({diff}): the queries it kept were "
             "computed there and the rest are computed here, so dense scores may differ in their last digits "
             "between the two groups; re-run without --resume to have them all from one machine")


def run_eval(eval_set: EvalSet, configs: Sequence[GraphConfig], options: RunOptions,
             echo: Callable[[str], None] = print) -> RunSummary:
    """Run every config on every record of ``eval_set``; write files; log to MLflow; return the summary."""
    names = [c.name for c in configs]
    unsafe = [n for n in names if not VARIANT_NAME.fullmatch(n) or n in (".", "..")]
    if unsafe:  # configs loaded from YAML are checked at load; this guards hand-built ones
        raise EvalkitError(f"variant name {unsafe[0][:80]!r} is not a safe identifier (letters, digits, '_', '.', "
                           "'-'): it names a folder under --output")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise EvalkitError(f"two graph configs share the variant name {dupes}; give each a distinct 'name:'")
    for m in options.metrics:
        parse_metric(m)

    for r in eval_set.records:  # eval sets read from files were checked with file:line; built ones here
        if len(r.question) > MAX_QUESTION_CHARS:
            raise EvalkitError(f"{eval_set.path}: record '{r.id}': question has {len(r.question):,} characters, "
                               f"more than the {MAX_QUESTION_CHARS:,} a question may have; shorten it")
    if options.executor == "ray":
        check_extra("ray", "--executor ray")  # before any index is built
    check_output_path(options.output)
    with output_lock(options.output, note=echo):  # one writer per output (evalkit.locking); reentrant for `run`
        return _run_locked(eval_set, configs, options, names, echo)


def _run_locked(eval_set: EvalSet, configs: Sequence[GraphConfig], options: RunOptions, names: list[str],
                echo: Callable[[str], None]) -> RunSummary:
    """``run_eval`` once its arguments are checked and the output is locked."""
    prepare_output(options.output, eval_set.ref(), overwrite=options.overwrite)  # before any work
    if options.mlflow:
        from evalkit.track.store import check_store

        check_store(options.tracking_uri, results_folder(options.output).parent)  # half-migrated: the fix, now
    corpus = eval_set.corpus or load_corpus(eval_set.corpus_path)
    resources = (Resources(corpus, cache_root=options.cache_root, make_judge=make_judge) if options.cache_root
                 else Resources(corpus, make_judge=make_judge))
    ref = eval_set.ref()
    ref.corpus, ref.corpus_sha256 = str(eval_set.corpus_path), corpus.sha256
    summary = RunSummary(eval_set=ref, variants={}, git_commit=git_commit(), environment=environment(),
                         scoring=options.scoring.to_dict(),
                         status="running", pending=list(names))
    if options.resume:
        _note_another_machine(options.output, summary.environment, echo)
    folder = results_folder(options.output)
    # a summary saying "running" before any per_query.jsonl is truncated: a run killed now must never leave the
    # summary of an earlier, finished run beside its half-written records (analysis would read them as finished)
    write_json_atomic(options.output, summary.to_dict())
    tracker = _start_tracking(summary, names, options, echo)
    try:
        with signals_interrupt():
            tracker = _run_variants(eval_set, configs, options, resources, corpus, summary, folder, tracker, echo)
            summary.status = "complete"
            if tracker is not None:
                close_tracking(tracker, summary, echo, folder=folder)
    except BaseException as exc:  # Ctrl-C, a signal (run.tracking.Interrupted) or an error: say what is missing
        summary.status = "interrupted"
        summary.interrupted = f"{type(exc).__name__}: {exc}" if not isinstance(exc, KeyboardInterrupt) \
            else (str(exc) or "SIGINT")
        try:
            write_json_atomic(options.output, summary.to_dict())
        except (OSError, EvalkitError):  # e.g. the disk that stopped the run is full: its error matters more
            pass
        if tracker is not None:
            tracker.abort("KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED", f"run interrupted: "
                          f"{summary.interrupted}; variants not finished: {', '.join(summary.pending) or 'none'}")
        raise
    write_json_atomic(options.output, summary.to_dict())
    return summary


def _start_tracking(summary: RunSummary, names: list[str], options: RunOptions, echo: Callable[[str], None]) -> Any:
    if not options.mlflow:
        return None
    try:
        return start_tracking(summary, names, options, echo)
    except Exception as exc:  # noqa: BLE001 - evaluation goes on; files are the record
        echo(f"warning: MLflow logging disabled ({type(exc).__name__}: {exc}); results go to {options.output}")
        return None


def _run_variants(eval_set: EvalSet, configs: Sequence[GraphConfig], options: RunOptions, resources: Resources,
                  corpus: Any, summary: RunSummary, folder: Path, tracker: Any, echo: Callable[[str], None]) -> Any:
    """Run every variant, writing its files and handing it to the tracker; returns the tracker (None if it failed)."""
    ref = summary.eval_set
    judge = _make_judge(options, configs, resources)
    memo = WorkMemo() if options.share_work else None
    tenants = document_tenants(corpus.documents)
    for position, config in enumerate(configs):
        t0 = time.perf_counter()
        view = resources.for_variant(config.chunking, config.seed, Path(config.source).parent)
        payload = _payload(config, eval_set, resources, options) if options.executor == "ray" else None
        if payload is not None:  # a Ray worker builds the indexes (encodes passages) into the shared cache
            build_on_ray(payload, options.workers, options.ray_address)
        try:
            graph = build_graph(config, view, check_mutation=options.check_mutation, memo=memo)
        except EvalkitError:
            raise
        except Exception as exc:
            raise EvalkitError(f"{config.source}: could not build variant '{config.name}': "
                               f"{type(exc).__name__}: {exc}") from exc
        build_s = time.perf_counter() - t0
        config_sha256 = config.sha256()  # a YAML dump: once per variant
        # what a node read from files the config names (a guard's calibration): changed files, new results
        read_in = {name: fp for name, node in graph.nodes.items() if (fp := node.resume_fingerprint())}
        fingerprint = {"eval_set_sha256": ref.sha256, "eval_set_version": ref.version,
                       "config_sha256": config_sha256, "metrics": list(options.metrics),
                       # non-default scoring only, so runs made before it existed still resume
                       **({"scoring": options.scoring.to_dict()} if options.scoring != Scoring() else {}),
                       "corpus_sha256": corpus.sha256,
                       "judge": judge.identity if judge is not None and generates(config) else None,
                       "abstention_rules": eval_set.abstention.sha256 if eval_set.abstention else None,
                       "abstention_stage": abstention_stage() if generates(config) else None,
                       **({"nodes": read_in} if read_in else {})}
        store = VariantStore(folder / config.name, fingerprint)
        kept = store.resumable() if options.resume else {}
        todo = [r for r in eval_set.records if r.id not in kept]
        if kept:
            echo(f"{config.name}: resuming, {len(kept)} finished queries kept, {len(todo)} to run")
        add_loop_metrics(kept.values())  # every per-query metric is in a result before its line is written
        store.start(kept[r.id] for r in eval_set.records if r.id in kept)
        results = dict(kept)
        try:
            ctx = QueryContext(graph, options.metrics, generates=generates(config),
                               judge=judge if generates(config) else None, passages=view.passages(),
                               scoring=options.scoring, abstention=eval_set.abstention, tenants=tenants)
            if payload is None and todo and options.prepare:
                graph.prepare([r.question for r in todo])  # batch work (e.g. query encoding) before the loop
            with long_lived_frozen(options.gc_freeze) as keep:
                for result in _run_all(ctx, payload, todo, options, config.name):
                    results[result.query_id] = result
                    add_loop_metrics([result])  # per-query loop metrics into per_query.jsonl and MLflow
                    store.append(result)
                    keep()
        except BaseException:
            store.close(quiet=True)
            raise
        ordered = [results[r.id] for r in eval_set.records]
        store.finish(ordered)
        summary.variants[config.name] = variant_summary(
            ordered, options.metrics, config_path=config.source, config_sha256=config_sha256,
            index=_index_meta(view), seconds=round(time.perf_counter() - t0, 3),
            timing={"build_s": round(build_s, 3)},
            judge=judge.identity if judge is not None and generates(config) else None)
        for d in index_degradations(summary.variants[config.name].index):
            echo(f"warning: {config.name}: its {d['index']} index was built while its LLM failed on {d['failed']} of "
                 f"{d['of']} passages; they add nothing to it, so every query searched a partial index and "
                 "'evalkit gate' refuses this variant as a candidate (see 'stats' under 'index' in the summary)")
        summary.sharing = memo.stats() if memo is not None else {}
        summary.pending.remove(config.name)
        write_json_atomic(options.output, summary.to_dict())
        if tracker is not None:
            tracker = submit_variant(tracker, variant_log(config, summary, ordered, store.path), echo)
        if memo is not None:  # the work the variants still to run cannot reuse is forgotten
            memo.retain(work_keys(configs[position + 1:], configs))
    return tracker


def generates(config: GraphConfig) -> bool:
    """Whether a variant produces answers (has a node with the generator role) that must be judged."""
    return Role.GENERATOR in config.roles()


def _make_judge(options: RunOptions, configs: Sequence[GraphConfig], resources: Resources) -> Any:
    if not any(generates(c) for c in configs):
        return None
    return make_judge(options.judge, cache_root=resources.cache_root, **options.judge_options)


def _payload(config: GraphConfig, eval_set: EvalSet, resources: Resources, options: RunOptions) -> dict[str, Any]:
    """What a Ray worker needs to rebuild this variant's query context (see run.executors)."""
    judge_options = {k: (v.model_dump() if hasattr(v, "model_dump") else v) for k, v in options.judge_options.items()}
    return {"config": config.to_dict(), "source": config.source, "corpus_path": str(eval_set.corpus_path),
            "cache_root": str(Path(resources.cache_root).resolve()), "metrics": list(options.metrics),
            "scoring": options.scoring.to_dict(), "prepare": options.prepare,
            "judge": options.judge if generates(config) else None, "judge_options": judge_options,
            "abstention": asdict(eval_set.abstention) if eval_set.abstention else None}


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
