"""A scored variant written exactly as ``evalkit run`` writes one: summary JSON, per-query records, MLflow.

The files (summary JSON, ``<stem>/<variant>/per_query.jsonl`` and ``run.json``) and MLflow
runs are written by the runner's own code, so ``compare``, ``gate``, ``report`` and
``export`` read a scored variant like any other. Records are written as they come, one
line each (:class:`evalkit.runstore.VariantStore`), and the summary is made from what it
reads of them (:meth:`evalkit.scoring.scored.LazyRecords.summary_view`): a scored run's
records are never all held at once.
"""
from __future__ import annotations

import time
from collections.abc import Callable

import yaml

from evalkit.errors import EvalkitError
from evalkit.locking import output_lock
from evalkit.machine import git_commit
from evalkit.metrics import Scoring
from evalkit.records import QueryResult, RunSummary
from evalkit.run.options import RunOptions
from evalkit.run.summarise import variant_summary
from evalkit.run.tracking import log_variants
from evalkit.runstore import (
    VARIANT_NAME,
    VariantStore,
    check_output_path,
    long_lived_frozen,
    results_folder,
    write_json_atomic,
)
from evalkit.scoring.columnar import ColumnarRecords
from evalkit.scoring.scored import LazyRecords, Scored


def write_scored(scored: Scored, options: RunOptions, echo: Callable[[str], None] = print) -> RunSummary:
    """Write a scored variant exactly as ``evalkit run`` writes one (files, then MLflow unless disabled)."""
    if not VARIANT_NAME.fullmatch(scored.name) or scored.name in (".", ".."):  # the rule graph config names follow
        raise EvalkitError(f"variant name {scored.name[:80]!r} is not a safe identifier: use letters, digits, '_', "
                           "'.' and '-' only (it names the variant's folder under --output), e.g. my_rag-v2")

    check_output_path(options.output)
    with output_lock(options.output, note=echo):  # one writer per output, as `evalkit run` (evalkit.locking)
        return _write_locked(scored, options, echo)


def _write_locked(scored: Scored, options: RunOptions, echo: Callable[[str], None]) -> RunSummary:
    """``write_scored`` once the output is locked."""
    if options.mlflow:
        from evalkit.track.store import check_store

        check_store(options.tracking_uri, results_folder(options.output).parent)  # half-migrated: the fix, first
    t0 = time.perf_counter()
    fingerprint = {"eval_set_sha256": scored.ref.sha256, "eval_set_version": scored.ref.version,
                   "source": scored.source, "metrics": list(scored.metrics),
                   "corpus_sha256": scored.ref.corpus_sha256, "judge": scored.judge,
                   **({"scoring": scored.scoring.to_dict()} if scored.scoring != Scoring() else {})}
    store = VariantStore(results_folder(options.output) / scored.name, fingerprint)
    kept = _write_records(store, scored, options.gc_freeze)
    variant = variant_summary(kept, scored.metrics, judge=scored.judge, source=scored.source,
                              seconds=round(time.perf_counter() - t0, 3))
    if not any(e.get("duration_ms") for r in kept for e in r.trace):
        variant.timing = {}  # the file gave no latencies: report none rather than zeros
    summary = RunSummary(eval_set=scored.ref, variants={scored.name: variant}, git_commit=git_commit(),
                         scoring=scored.scoring.to_dict())
    write_json_atomic(options.output, summary.to_dict())
    if options.mlflow:
        from evalkit.track import VariantLog

        params = {f"source.{k}": str(v) for k, v in scored.source.items()}
        # MLflow's logging reads the records several times (traces, tables, plots): built once more, and held
        # while it logs (only then: the files above were written one record at a time)
        log = VariantLog(name=scored.name, params=params, config_yaml=yaml.safe_dump({"scored": scored.source},
                                                                                     allow_unicode=True),
                         summary=variant, results=list(scored.results), per_query_path=store.path)
        log_variants(summary, [log], options, echo)
        write_json_atomic(options.output, summary.to_dict())
    return summary


def _write_records(store: VariantStore, scored: Scored, gc_freeze: bool = True) -> list[QueryResult]:
    """Write every record, in order, one line each as it comes; what the summary reads of each, in order.

    As in the runner's query loop (:func:`evalkit.run.runner.long_lived_frozen`), what lives on (the eval
    set, its corpus, the rankings, the views kept) is kept off the cyclic collector's walks: at 10,000
    queries its full collections took ~0.3 s of ``score --run`` (issue 34).
    """
    view = scored.results.summary_view if isinstance(scored.results, LazyRecords) else None
    kept: list[QueryResult] = []
    store.start(())
    try:
        with long_lived_frozen(gc_freeze) as keep:
            whole = None
            if isinstance(scored.results, ColumnarRecords):  # whole lines, a chunk at a time (the same bytes)
                def emit(query_ids: list[str], lines: list[bytes | memoryview]) -> None:
                    store.append_lines(query_ids, lines)
                    keep()  # the views kept so far

                whole = scored.results.write(emit, store.encoded_line, store.secrets)
            if whole is not None:
                kept = whole
            else:
                for result in scored.results:
                    store.append(result)
                    kept.append(result if view is None else view(result))
                    keep()
    except BaseException:
        store.close(quiet=True)
        raise
    store.finish(kept)  # the lines are in eval-set order already: only synced
    return kept
