"""Where a run's results live on disk, written so that a crash loses nothing finished.

``--output results/NAME.json`` writes the summary there; the folder ``results/NAME/``
holds one folder per variant with ``per_query.jsonl`` (appended one line per finished
query and flushed to the OS at once, so a killed process loses nothing; fsynced at most
every ``FSYNC_EVERY_S`` seconds, so a power loss costs at most that much work, which
``--resume`` re-runs) and ``run.json`` (the fingerprint of what produced it: eval set hash,
config hash, metric names, corpus, judge, and what nodes read from files the config names).
``--resume`` keeps the lines whose fingerprint matches and re-runs the rest, including queries that failed. On completion ``per_query.jsonl`` is
rewritten in eval-set order, atomically, unless its lines already are in that order (the
usual case): then it is only fsynced, since a line is final when written (the runner adds
every per-query metric before ``append``). Every JSON file is written through
:func:`evalkit.redact.dumps` and every line through :func:`evalkit.redact.dumps_line` (the
secret environment values read once per variant): a key in an LLM's ``base_url`` or an
error message never reaches the disk.
"""
from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evalkit import redact
from evalkit.fileio import (
    DEFAULT_HINT,
    OutputError,
    ensure_folder,
    jsonl_lines,
    output_error,
    write_all,
    write_atomic,
)
from evalkit.gcpause import gc_paused, long_lived_frozen  # noqa: F401 - long_lived_frozen offered here, as before
from evalkit.recordfile import (  # noqa: F401 - re-exported: the readers lived here and are imported from here
    VIEW_FILE,
    RecordsFileError,
    read_results,
    read_rows,
    record_parser,
    records_fix,
    result_from_row,
)
from evalkit.records import QueryResult

RESUME_HINT = ("make room (or fix the folder), then `evalkit run --resume OUTPUT` goes on from the queries already "
               "written; or choose another --output")
FSYNC_EVERY_S = 1.0  # an fsync per query cost ~4 ms, more than a warm BM25 query (reports/scale.md)


VARIANT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,200}")
"""What a variant may be named (a graph config's ``name``, ``evalkit score --name``): it names the variant's
folder under the results folder, so letters, digits, '_', '.' and '-' only ('.' and '..' alone are refused too)."""


def results_folder(output: Path) -> Path:
    """The folder beside ``output`` with the same stem (``results/x.json`` -> ``results/x/``)."""
    return output.with_suffix("")


VARIANT_FILES = ("run.json", "per_query.jsonl", "per_query.jsonl.tmp", "run.json.tmp", VIEW_FILE)
"""What the runner and the analysis commands write in a variant folder (``--overwrite`` removes these and nothing
else)."""


def prepare_output(output: Path, eval_set: Any, *, overwrite: bool = False) -> None:
    """Check, before any work, that ``output`` can take this run's results; create its folder.

    Refuses (``OutputError``, one line naming the path and the fix): an ``--output``
    that is a folder or has no suffix (its records folder would be the file itself); a
    results folder, or one of its parents, that exists as a file; a folder that cannot
    be written (read-only, no permission, a full disk: found with a probe file, not after
    an hour of queries); and a results folder holding the results of another eval set
    (another name, version or content), unless ``overwrite``, which removes the old
    summary and the runner's files in its variant folders first.
    """
    output = Path(output)
    folder = check_output_path(output)
    other = recorded_eval_set(output)
    mine = (eval_set.name, eval_set.version, eval_set.sha256)
    if other is None or other == mine:
        return
    if not overwrite:
        raise OutputError(f"{folder}/ holds the results of eval set '{other[0]}' v{other[1]} (sha256 {other[2][:12]}), "
                          f"not of '{mine[0]}' v{mine[1]} (sha256 {mine[2][:12]}); choose another --output, or pass "
                          "--overwrite to replace them")
    output.unlink(missing_ok=True)
    for sub in folder.iterdir():
        if sub.is_dir() and (sub / "run.json").is_file():
            for name in VARIANT_FILES:
                (sub / name).unlink(missing_ok=True)
            if not any(sub.iterdir()):
                sub.rmdir()


def check_output_path(output: Path) -> Path:
    """Check that ``output`` names a summary file whose results folder can be written; create that folder.

    Refuses (``OutputError``, one line naming the path and the fix) an ``--output`` that is
    empty or a folder, has no suffix, or whose folder cannot be created or written (found with
    a probe file, not after an hour of queries). Returns the results folder.
    """
    output = Path(output)
    if not output.name:
        raise OutputError(f"--output '{output}' names no file; give the summary JSON to write, e.g. results/run.json "
                          "(per-query records then go to results/run/)")
    folder = results_folder(output)
    if output.is_dir():
        raise OutputError(f"--output {output} is a folder; give the summary file to write, e.g. {output / 'run.json'}"
                          f" (per-query records then go to {output / 'run'}/)")
    if folder == output:
        raise OutputError(f"--output {output} has no suffix, so its records folder would be the file itself; "
                          f"use {output}.json")
    ensure_folder(folder)
    probe = folder / ".evalkit-write-test"
    write_atomic(probe, "")
    probe.unlink(missing_ok=True)
    return folder


def recorded_eval_set(output: Path) -> tuple[str, int, str] | None:
    """``(name, version, sha256)`` of the eval set whose results ``output`` (or its folder) already holds."""
    try:
        es = json.loads(Path(output).read_text(encoding="utf-8"))["eval_set"]
        return str(es["name"]), int(es["version"]), str(es["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    folder = results_folder(Path(output))
    runs = sorted(folder.glob("*/run.json")) if folder.is_dir() else []
    for meta in runs:  # no summary (a run killed early): the variants' fingerprints say which set
        try:
            fp = json.loads(meta.read_text(encoding="utf-8"))
            invocation = json.loads((folder / "invocation.json").read_text(encoding="utf-8"))
            name = Path(str(invocation["eval_set"]).partition("@")[0]).stem
            return name, int(fp["eval_set_version"]), str(fp["eval_set_sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return None


def write_json_atomic(path: Path, data: Any, hint: str | None = None) -> None:
    """Write ``data`` as pretty JSON (secrets masked) atomically; ``OutputError`` names the path (and ``hint``)."""
    text = redact.dumps(data, indent=2, ensure_ascii=False) + "\n"
    write_atomic(path, text, hint=hint or DEFAULT_HINT)


class VariantStore:
    """Per-variant result files: incremental appends while running, ordered rewrite at the end."""

    def __init__(self, folder: Path, fingerprint: dict[str, Any]):
        self.folder = folder
        self.path = folder / "per_query.jsonl"
        self.fingerprint = fingerprint
        self._lock = threading.Lock()
        self._fh: Any = None
        self._synced = 0.0
        self._written: list[str] = []  # query ids in the order their lines were written
        self._secrets = redact.secret_env_values()  # read once, not once per line

    def resumable(self) -> dict[str, QueryResult]:
        """Finished (non-failed) results of an earlier run with the same fingerprint."""
        meta = self.folder / "run.json"
        if not meta.exists() or not self.path.exists():
            return {}
        if json.loads(meta.read_text(encoding="utf-8")) != self.fingerprint:
            return {}
        done: dict[str, QueryResult] = {}
        for line in jsonl_lines(self.path.read_text(encoding="utf-8")):
            try:
                result = QueryResult.from_dict(json.loads(line))
            except (json.JSONDecodeError, TypeError, KeyError):
                continue  # a line cut short by a crash: run that query again
            if result.error is None:
                done[result.query_id] = result
        return done

    def start(self, kept: Iterable[QueryResult]) -> None:
        ensure_folder(self.folder, RESUME_HINT)
        write_json_atomic(self.folder / "run.json", self.fingerprint, RESUME_HINT)  # the run has begun: resumable
        try:
            self._fh = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - open for the whole run; close() ends it
            for r in kept:
                self._write(r)
        except OSError as exc:
            raise output_error(self.path, exc, RESUME_HINT) from None

    def append(self, result: QueryResult) -> None:
        with self._lock:
            try:
                self._write(result)
            except OSError as exc:
                raise output_error(self.path, exc, RESUME_HINT) from None

    @property
    def secrets(self) -> list[str]:
        """The secret values every line is masked of (read once, when the store was made)."""
        return self._secrets

    def encoded_line(self, result: QueryResult) -> bytes:
        """The line :meth:`append` writes for ``result`` (newline included) in UTF-8; ``OutputError`` as it."""
        text = redact.dumps_line(result.to_dict(), self._secrets) + "\n"
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise self._not_unicode(result.query_id, exc) from None

    def _not_unicode(self, query_id: str, exc: UnicodeEncodeError) -> OutputError:
        """The error of a record holding a lone surrogate ("\\ud800", from a scored file or a node's output)."""
        return OutputError(f"cannot write the record of query '{query_id}' to {self.path}: it holds text that is "
                           f"not valid Unicode ({exc.reason}: {exc.object[exc.start:exc.end]!r}); fix the input "
                           "that carried it (eval set, answers file) and run again")

    def _write(self, result: QueryResult) -> None:
        try:  # the text layer encodes the whole line before writing any of it: a refused line leaves nothing
            self._fh.write(redact.dumps_line(result.to_dict(), self._secrets) + "\n")
        except UnicodeEncodeError as exc:
            raise self._not_unicode(result.query_id, exc) from None
        self._fh.flush()
        self._written.append(result.query_id)
        now = time.monotonic()
        if now - self._synced >= FSYNC_EVERY_S:
            os.fsync(self._fh.fileno())
            self._synced = now

    def append_lines(self, query_ids: list[str], buffers: list[bytes | memoryview]) -> None:
        """Write the finished lines of ``query_ids``, given as ``buffers`` whose bytes, one after the other, are the
        lines (UTF-8, each ending in a newline, secrets already masked): what :meth:`append` writes for their
        records one by one (``evalkit.scoring.columnar``), without joining them first."""
        with self._lock:
            try:
                self._fh.flush()
                if os.linesep == "\n" and hasattr(os, "writev"):  # the bytes the text layer would write
                    write_all(self._fh.fileno(), buffers)
                else:
                    self._fh.write(b"".join(buffers).decode("utf-8"))
                    self._fh.flush()
            except OSError as exc:
                raise output_error(self.path, exc, RESUME_HINT) from None
            self._written.extend(query_ids)
            now = time.monotonic()
            if now - self._synced >= FSYNC_EVERY_S:
                os.fsync(self._fh.fileno())
                self._synced = now

    def finish(self, ordered: list[QueryResult]) -> None:
        """Close the incremental file, rewritten in eval-set order when its lines are not in that order.

        ``ordered`` must be the results as they were appended (not changed since): lines already
        in order are kept as written, so serialising every result a second time is saved.
        """
        if self._fh is not None and self._written == [r.query_id for r in ordered]:
            try:
                os.fsync(self._fh.fileno())
            except OSError as exc:
                raise output_error(self.path, exc, RESUME_HINT) from None
            self.close()
            return
        self.close()
        write_atomic(self.path, lambda fh: fh.writelines(redact.dumps_line(r.to_dict(), self._secrets) + "\n"
                                                        for r in ordered), hint=RESUME_HINT)

    def close(self, quiet: bool = False) -> None:
        """Close the incremental file; ``quiet`` (on the way out of another error) swallows a second failure."""
        if self._fh is not None:
            fh, self._fh = self._fh, None
            try:
                fh.close()
            except OSError as exc:
                if not quiet:
                    raise output_error(self.path, exc, RESUME_HINT) from None


CLOCK_KEYS = frozenset({"started_at", "ended_at", "seconds", "latency_ms_mean"})
"""Clock readings in a per-query record, with every key ending in ``_ms`` (durations, latencies, ``loop_ms``)."""
EXECUTION_KEYS = frozenset({"reused", "cache_hits"})
"""How a record came about, not what it holds: ``reused`` says another variant's identical node execution was
reused (graph.memo), which one executor does and another, holding one batch, may not; ``cache_hits`` counts
LLM replies read from the cache, which the first of two runs wrote for the second."""


def comparable(value: Any) -> Any:
    """A per-query record (or any part of one) without :data:`CLOCK_KEYS`, ``*_ms`` keys and
    :data:`EXECUTION_KEYS`, at any depth: what two runs that must give the same numbers are compared on
    (work sharing on and off, executors, the state-type checks, refactors)."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()
                if k not in CLOCK_KEYS and k not in EXECUTION_KEYS and not k.endswith("_ms")}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def comparable_records(output: Path, variant: str) -> list[str]:
    """One variant's per-query records of the run written to ``output``, as sorted JSON of :func:`comparable`."""
    lines = jsonl_lines((results_folder(output) / variant / "per_query.jsonl").read_text(encoding="utf-8"))
    return [json.dumps(comparable(json.loads(line)), sort_keys=True, ensure_ascii=False) for line in lines if line]
