"""The runner's link to MLflow, and what an interrupted run leaves behind.

- :func:`start_tracking` opens the invocation's MLflow runs before the first variant:
  in the background worker (``evalkit.track.background``, the default) or in this
  process (``RunOptions.mlflow_background = False``, ``--mlflow-sync``). The runner
  submits each finished variant (:func:`variant_log`) and closes at the end.
- :func:`signals_interrupt` turns SIGTERM (and SIGHUP) into :class:`Interrupted`, a
  ``KeyboardInterrupt``, so a ``kill`` unwinds like Ctrl-C: the open MLflow runs end
  KILLED and the summary file says the run is partial (``RunSummary.status``).
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial as partial_call
from pathlib import Path
from typing import Any

from evalkit.records import QueryResult, RunSummary
from evalkit.runstore import results_folder
from evalkit.track.payloads import VariantLog
from evalkit.viewfile import prepare_view


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal (its name is the message)."""


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Interrupted` in the main thread (elsewhere: no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = [s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None]

    def handler(signum: int, frame: Any) -> None:
        raise Interrupted(signal.Signals(signum).name)

    previous = {s: signal.signal(s, handler) for s in wanted}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def start_tracking(summary: RunSummary, names: list[str], options: Any, echo: Callable[[str], None]) -> Any:
    """Open the invocation's MLflow runs (parent first); returns an object with submit/close/abort."""
    out_dir = results_folder(options.output).parent
    common = {"tracking_uri": options.tracking_uri, "experiment": options.experiment, "tags": dict(options.tags),
              "traces": options.traces, "trace_limit": options.trace_limit, "source_name": options.source_name,
              "trace_policy": options.trace_policy}
    if options.mlflow_background:
        from evalkit.track.background import BackgroundLogger

        tracker: Any = BackgroundLogger(summary, out_dir, echo=echo, progress=options.progress, **common)
    else:
        from evalkit.track.mlflow_log import InvocationLogger

        tracker = InvocationLogger(summary, out_dir, note=echo, **common)
    tracker.open(names)
    return tracker


def variant_log(config: Any, summary: RunSummary, results: list[QueryResult], per_query: Path) -> Any:
    """What the tracker logs for one finished variant."""
    return VariantLog(name=config.name, params=config.flat_params(), config_yaml=config.to_yaml(),
                      summary=summary.variants[config.name], results=results, per_query_path=per_query)


def index_tags(summary: RunSummary) -> dict[str, str]:
    """Parent-run tags naming every index each variant used (``index.<variant>.<kind>``)."""
    tags = {}
    for name, v in summary.variants.items():
        for kind, meta in v.index.items():
            model = meta.get("embedder") or meta.get("tokenizer") or meta.get("algorithm")
            tags[f"index.{name}.{kind}"] = f"{model} n={meta.get('n')} chunking={meta.get('chunking')}"
    return tags


def close_tracking(tracker: Any, summary: RunSummary, echo: Callable[[str], None], partial: bool = False,
                   folder: Path | None = None) -> None:
    """End the MLflow runs; a logging failure is a warning (the results are on disk already).

    ``folder``: the results folder; while the background logger finishes, this process, which would only
    wait, prepares each variant's analysis view there (:func:`evalkit.viewfile.prepare_view`), so the first
    ``compare``, ``gate`` or ``report`` loads it instead of parsing the records."""
    spare = [] if folder is None else [partial_call(prepare_view, folder / name / "per_query.jsonl")
                                       for name in summary.variants]
    try:
        info = tracker.close(summary.variants, partial=partial, tags=index_tags(summary), spare=spare)
    except Exception as exc:  # noqa: BLE001 - results are on disk already; say so rather than lose them
        from evalkit.track.secrets import mask_text

        echo(f"warning: MLflow logging failed ({type(exc).__name__}: {mask_text(str(exc))}); "
             "the results files are complete")
        tracker.abort("FAILED", f"{type(exc).__name__}: {exc}")
        return
    summary.mlflow = info


def submit_variant(tracker: Any, v: Any, echo: Callable[[str], None]) -> Any:
    """Hand ``v`` to the tracker; on a logging error warn, end the runs FAILED and return ``None`` (stop logging)."""
    try:
        tracker.submit(v)
    except Exception as exc:  # noqa: BLE001 - the evaluation goes on; its files are the record
        from evalkit.track.secrets import mask_text

        echo(f"warning: MLflow logging failed ({type(exc).__name__}: {mask_text(str(exc))}); "
             "the run continues without it")
        tracker.abort("FAILED", f"{type(exc).__name__}: {exc}")
        return None
    return tracker


def log_variants(summary: RunSummary, logs: list[Any], options: Any, echo: Callable[[str], None]) -> None:
    """Log variants that are already finished (``evalkit score``) as a run logs its own, in this
    process; sets ``summary.mlflow``, and a logging failure only warns (the files are complete)."""
    try:
        tracker = start_tracking(summary, [v.name for v in logs], replace(options, mlflow_background=False), echo)
    except Exception as exc:  # noqa: BLE001 - the scored files are the record
        from evalkit.track.secrets import mask_text

        echo(f"warning: MLflow logging disabled ({type(exc).__name__}: {mask_text(str(exc))}); "
             f"results are in {options.output}")
        return
    for v in logs:
        tracker = submit_variant(tracker, v, echo)
        if tracker is None:
            return
    close_tracking(tracker, summary, echo)
