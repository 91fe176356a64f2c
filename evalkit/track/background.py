"""MLflow logging off the query path: a worker process logs each variant while the next one runs.

``evalkit run`` opens a :class:`BackgroundLogger` before the first variant. It starts
``python -m evalkit.track.background`` (the *worker*), which imports mlflow, opens the
store and creates the parent run while the runner loads models and indexes; the runner
then submits each finished variant, the worker logs it (child run, artifacts, traces
and assessments, :class:`evalkit.track.mlflow_log.InvocationLogger`) while the next
variant's queries run, and at the end :meth:`BackgroundLogger.close` waits for the rest,
printing one progress line per variant still to log.

Why a process and not a thread: MLflow's logging is Python work (SQLAlchemy) that holds
the GIL; in a thread it would slow every query down by as much as it logs. In its own
process it runs on another core.

**What it costs** (reports/mlflow.md): most of the worker's CPU is fixed, paid once per
invocation: ``import mlflow`` and opening the sqlite store (~3 s of CPU), matplotlib for
the rerank figure (~0.6 s). Each variant then costs a few tenths of a second (child run,
artifacts, ~20 traces under the default ``misses`` policy). The fixed part runs while the
runner loads its models and runs the first variant: after creating the parent run the
worker imports what it will need (:func:`warm_up`) before it waits for the first variant,
so none of it is left for the time after the last query.

The queue is bounded: at most ``max_pending`` submitted variants may wait for the
worker; a further ``submit`` blocks until one is logged. Messages are small (names,
params, the summary, the path of ``per_query.jsonl``, which the worker reads itself),
one JSON object per line on the worker's stdin; the worker answers with JSON events on
its stdout (its own prints go to stderr).

Interruptions (issue 11: no run stays RUNNING):

- Ctrl-C / SIGTERM of evalkit: the runner calls :meth:`BackgroundLogger.abort`, the
  worker ends the open runs KILLED and exits. The worker ignores SIGINT (the terminal
  sends it to the whole process group; the runner decides), and on its own SIGTERM ends
  its runs KILLED too.
- evalkit killed outright (``kill -9``): the worker reads end-of-file, ends its runs
  KILLED and exits. If both die, the next invocation marks the runs KILLED
  (``evalkit.track.store.reap_stale_runs``).
- A logging error: the worker ends its runs FAILED and reports it; the run's results
  on disk are untouched and :meth:`close` raises.
"""
from __future__ import annotations

import importlib
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import IO, Any

from evalkit.errors import EvalkitError
from evalkit.gcpause import long_lived_frozen
from evalkit.records import EvalSetRef, RunSummary, VariantSummary
from evalkit.runstore import read_results
from evalkit.track.mlflow_log import CPU_READ, CPU_STAGES, InvocationLogger
from evalkit.track.payloads import VariantLog
from evalkit.track.secrets import mask_text

MAX_PENDING = 4          # variants that may wait for the worker before submit() blocks
ABORT_WAIT_S = 20.0      # how long abort() waits for the worker to end its runs


def _summary(d: dict[str, Any]) -> VariantSummary:
    return VariantSummary(**{f.name: d[f.name] for f in fields(VariantSummary) if f.name in d})


class BackgroundLogger:
    """The runner's side of the worker: same steps as ``InvocationLogger`` (open, submit, close, abort).

    Args are ``InvocationLogger``'s, plus ``echo`` (user-facing lines, e.g. the progress
    at the end), ``max_pending`` (the queue bound) and ``progress`` (print progress lines).
    """

    def __init__(self, run: RunSummary, output_dir: Path, tracking_uri: str | None = None,
                 experiment: str = "evalkit", tags: dict[str, str] | None = None, traces: bool = True,
                 trace_limit: int | None = None, source_name: str = "evalkit run",
                 echo: Callable[[str], None] = print, max_pending: int = MAX_PENDING, progress: bool = True,
                 trace_policy: str = "all"):
        self.config = {"run": {"eval_set": run.eval_set.to_dict(), "git_commit": run.git_commit,
                               "environment": run.environment},
                       "output_dir": str(output_dir), "tracking_uri": tracking_uri, "experiment": experiment,
                       "tags": dict(tags or {}), "traces": traces, "trace_limit": trace_limit,
                       "source_name": source_name, "trace_policy": trace_policy}
        self.echo, self.max_pending, self.progress = echo, max(1, max_pending), progress
        self.proc: subprocess.Popen[str] | None = None
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.pending: list[str] = []
        self.run_ids: dict[str, str] = {}
        self.info: dict[str, str] = {}
        self.error: str | None = None
        self.traced = 0
        self.waited_s = 0.0  # close(): from sending "close" to the worker's "closed" (the wait for MLflow itself)
        self.cpu: dict[str, float] = dict.fromkeys(CPU_STAGES, 0.0)  # the worker's CPU seconds per step, summed

    def open(self, names: list[str]) -> None:
        """Start the worker and ask it to create the parent run (does not wait)."""
        root = str(Path(__file__).resolve().parents[2])        # this copy of evalkit, not another one
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])}
        self.proc = subprocess.Popen([sys.executable, "-m", "evalkit.track.background"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, encoding="utf-8", env=env, bufsize=1)
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()
        self._send({"op": "open", "names": list(names), **self.config})

    def submit(self, v: VariantLog) -> None:
        """Queue variant ``v`` for logging; blocks while ``max_pending`` variants already wait."""
        if self.error:
            return
        self._send({"op": "variant", "name": v.name, "params": v.params, "config_yaml": v.config_yaml,
                    "summary": v.summary.to_dict(), "per_query_path": str(v.per_query_path)})
        self.pending.append(v.name)
        while len(self.pending) > self.max_pending and not self.error:
            self._handle(self.events.get())

    def close(self, variants: dict[str, VariantSummary], partial: bool = False,
              tags: dict[str, str] | None = None, spare: Sequence[Callable[[], object]] = ()) -> dict[str, str]:
        """Wait for every submitted variant, end the parent run; returns the store info (see ``InvocationLogger``).

        ``spare``: work for the time this process would only wait, each call made while the worker has
        nothing to say (the runner prepares the analysis views, :func:`evalkit.viewfile.prepare_view`);
        what is left when the worker is done is done then (so the work is always done, whatever the
        worker's pace). A call must not raise.

        Raises:
            EvalkitError: the worker failed or died; its runs are ended FAILED (or marked
                KILLED by the next invocation).
        """
        t0 = time.perf_counter()
        left = len(self.pending)
        if left and self.progress:
            self.echo(f"MLflow: logging the last {left} variant(s) ({', '.join(self.pending)}); "
                      f"{len(self.run_ids)} logged while the queries ran")
        self._send({"op": "close", "variants": {k: v.to_dict() for k, v in variants.items()}, "partial": partial,
                    "tags": dict(tags or {})})
        done = len(self.run_ids)
        todo = list(spare)
        while not self.error:
            while todo and self.events.empty():  # the worker is busy: use the wait
                todo.pop(0)()
            event = self._handle(self.events.get())
            if event["event"] == "variant" and self.progress:
                done += 1
                self.echo(f"MLflow: {done}/{len(variants)} variants logged ({event['name']}, "
                          f"{event['traces']} traces, {event['seconds']:.1f} s)")
            if event["event"] == "closed":
                break
        self._wait(10.0)
        if self.error:
            raise EvalkitError(f"MLflow logging failed: {self.error}")
        for name, v in variants.items():
            v.mlflow_run_id = self.run_ids.get(name, v.mlflow_run_id)
        self.waited_s = time.perf_counter() - t0
        self.echo(f"MLflow: {len(self.run_ids)} variant(s) and {self.traced} trace(s) logged; "
                  f"{self.waited_s:.1f} s after the last query")
        for call in todo:
            call()
        return self.info

    def abort(self, status: str = "KILLED", reason: str | None = None) -> None:
        """Have the worker end its open runs with ``status``, then stop it (never raises).

        On KILLED the worker is also sent SIGTERM, so the variant it is logging stops at
        once (that child run ends KILLED) instead of finishing first.
        """
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self._send({"op": "abort", "status": status, "reason": reason})
        except EvalkitError:
            pass
        if status == "KILLED":
            self.proc.send_signal(signal.SIGTERM)
        self._wait(ABORT_WAIT_S)

    # ------------------------------------------------------------------ plumbing

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message, ensure_ascii=False, default=str) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            while True:                       # the worker's own account of why it stopped, if it gave one
                try:
                    self._handle(self.events.get(timeout=2.0))
                except queue.Empty:
                    break
                if self.error:
                    break
            self.error = self.error or f"the MLflow worker stopped ({exc})"
            raise EvalkitError(self.error) from exc

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            try:
                self.events.put(json.loads(line))
            except json.JSONDecodeError:
                sys.stderr.write(line)
        self.events.put({"event": "eof"})

    def _handle(self, event: dict[str, Any]) -> dict[str, Any]:
        kind = event["event"]
        if kind == "opened":
            self.info = event["info"]
        elif kind == "note":
            self.echo(event["text"])
        elif kind == "variant":
            self.run_ids[event["name"]] = event["run_id"]
            self.traced += event["traces"]
            for k, sec in (event.get("cpu") or {}).items():
                self.cpu[k] = self.cpu.get(k, 0.0) + sec
            if event["name"] in self.pending:
                self.pending.remove(event["name"])
        elif kind == "failed":
            self.error = event["error"]
        elif kind == "eof":
            code = self.proc.wait() if self.proc is not None else None
            self.error = self.error or f"the MLflow worker exited (code {code}) before finishing"
        return event

    def _wait(self, timeout: float) -> None:
        assert self.proc is not None
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ---------------------------------------------------------------------------- the worker process


WARM_MODULES = ("mlflow.data", "mlflow.tracing.client", "opentelemetry.sdk.trace", "matplotlib.figure",
                "matplotlib.backends.backend_agg")
"""Imported by :func:`warm_up` while the worker waits for the first variant (the rerank figure's
matplotlib, the dataset input's mlflow.data, the traces' client)."""

STOP = threading.Event()      # set by SIGTERM while the worker logs; checked between MLflow calls
_BUSY = threading.Event()     # the worker is inside a logging step (not waiting for a command)


def worker(stdin: IO[str], emit: Callable[[dict[str, Any]], None]) -> int:
    """Run the worker's loop over JSON commands from ``stdin``; returns the exit code."""
    log: InvocationLogger | None = None
    try:
        for line in stdin:
            msg = json.loads(line)
            op = msg["op"]
            _BUSY.set()
            if op == "open":
                run = RunSummary(eval_set=EvalSetRef(**msg["run"]["eval_set"]), variants={},
                                 git_commit=msg["run"]["git_commit"],
                                 environment=msg["run"].get("environment") or {})
                log = InvocationLogger(run, Path(msg["output_dir"]), msg["tracking_uri"], msg["experiment"],
                                       msg["tags"], msg["traces"], msg["trace_limit"], msg["source_name"],
                                       note=lambda text: emit({"event": "note", "text": text}), stop=STOP.is_set,
                                       trace_policy=msg["trace_policy"])
                emit({"event": "opened", "info": log.open(msg["names"])})
                warm_up()
            elif op == "variant" and log is not None:
                t0, c0, traced, cpu = time.perf_counter(), time.process_time(), log.traced, dict(log.cpu)
                path = Path(msg["per_query_path"])
                with long_lived_frozen():   # the variant's records, held while it is logged: no collection walks them
                    results = read_results(path, hold=True)
                    log.cpu[CPU_READ] += time.process_time() - c0
                    v = VariantLog(name=msg["name"], params=msg["params"], config_yaml=msg["config_yaml"],
                                   summary=_summary(msg["summary"]), results=results, per_query_path=path)
                    run_id = log.submit(v)
                    del results, v
                emit({"event": "variant", "name": msg["name"], "run_id": run_id, "traces": log.traced - traced,
                      "seconds": time.perf_counter() - t0, "cpu": {k: log.cpu[k] - cpu[k] for k in cpu}})
            elif op == "close" and log is not None:
                variants = {k: _summary(d) for k, d in msg["variants"].items()}
                emit({"event": "closed", "info": log.close(variants, msg["partial"], msg["tags"])})
                return 0
            elif op == "abort":
                if log is not None:
                    log.abort(msg.get("status") or "KILLED", msg.get("reason"))
                return 0
            _BUSY.clear()
            if STOP.is_set():
                raise KeyboardInterrupt("SIGTERM")
        if log is not None:        # end of input without close: evalkit is gone
            log.abort("KILLED", "the evalkit process ended before this invocation was logged")
        return 0
    except KeyboardInterrupt:      # SIGTERM: from evalkit's abort() (its reason follows on stdin) or from outside
        if log is not None:
            log.abort("KILLED", _pending_reason(stdin) or "the MLflow worker was terminated (SIGTERM)")
        return 143
    except Exception as exc:  # noqa: BLE001 - reported to evalkit, which keeps its results
        reason = mask_text(f"{type(exc).__name__}: {exc}")
        if log is not None:
            log.abort("FAILED", reason)
        emit({"event": "failed", "error": reason})
        return 1


def warm_up(modules: tuple[str, ...] = WARM_MODULES) -> list[str]:
    """Import ``modules`` now, while there is nothing to log yet; returns the ones that could not be imported.

    Only moves work earlier (Python keeps a module once imported): what the worker logs is
    the same with or without it.
    """
    missing = []
    for name in modules:
        if STOP.is_set():
            break
        try:
            importlib.import_module(name)
        except ImportError:          # an optional piece is absent: the step that needs it says so
            missing.append(name)
    return missing


def _pending_reason(stdin: IO[str]) -> str | None:
    """The reason of an ``abort`` command already waiting on stdin, if any (non-blocking)."""
    try:
        if select.select([stdin], [], [], 0.5)[0]:
            msg = json.loads(stdin.readline() or "{}")
            return msg.get("reason") if msg.get("op") == "abort" else None
    except (OSError, ValueError):
        pass
    return None


def _on_sigterm(signum: int, frame: Any) -> None:
    """Stop at the next safe point while logging (``STOP``); at once while waiting for a command."""
    STOP.set()
    if not _BUSY.is_set():
        raise KeyboardInterrupt(signal.Signals(signum).name)


def main() -> int:
    """Entry point of ``python -m evalkit.track.background``: events on the real stdout, prints to stderr."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_sigterm)
    events = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

    def emit(event: dict[str, Any]) -> None:
        try:
            events.write(json.dumps(event, default=str) + "\n")
            events.flush()
        except (BrokenPipeError, OSError):  # evalkit is gone: end of stdin follows, and the runs end KILLED
            pass

    return worker(sys.stdin, emit)


if __name__ == "__main__":
    sys.exit(main())
