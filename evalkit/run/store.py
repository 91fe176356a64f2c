"""Where a run's results live on disk, written so that a crash loses nothing finished.

``--output results/NAME.json`` writes the summary there; the folder ``results/NAME/``
holds one folder per variant with ``per_query.jsonl`` (appended one line per finished
query and flushed to the OS at once, so a killed process loses nothing; fsynced at most
every ``FSYNC_EVERY_S`` seconds, so a power loss costs at most that much work, which
``--resume`` re-runs) and ``run.json`` (the fingerprint of what produced it: eval set hash,
config hash, metric names). ``--resume`` keeps the lines whose fingerprint matches and
re-runs the rest, including queries that failed. On completion ``per_query.jsonl`` is
rewritten in eval-set order, atomically. Every line and every JSON file is written through
:func:`evalkit.redact.dumps`: a key in an LLM's ``base_url`` or an error message never
reaches the disk.
"""
from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evalkit import redact
from evalkit.records import QueryResult

FSYNC_EVERY_S = 1.0  # an fsync per query cost ~4 ms, more than a warm BM25 query (reports/scale.md)


def results_folder(output: Path) -> Path:
    """The folder beside ``output`` with the same stem (``results/x.json`` -> ``results/x/``)."""
    return output.with_suffix("")


def write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(redact.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


class VariantStore:
    """Per-variant result files: incremental appends while running, ordered rewrite at the end."""

    def __init__(self, folder: Path, fingerprint: dict[str, Any]):
        self.folder = folder
        self.path = folder / "per_query.jsonl"
        self.fingerprint = fingerprint
        self._lock = threading.Lock()
        self._fh: Any = None
        self._synced = 0.0

    def resumable(self) -> dict[str, QueryResult]:
        """Finished (non-failed) results of an earlier run with the same fingerprint."""
        meta = self.folder / "run.json"
        if not meta.exists() or not self.path.exists():
            return {}
        if json.loads(meta.read_text(encoding="utf-8")) != self.fingerprint:
            return {}
        done: dict[str, QueryResult] = {}
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                result = QueryResult.from_dict(json.loads(line))
            except (json.JSONDecodeError, TypeError, KeyError):
                continue  # a line cut short by a crash: run that query again
            if result.error is None:
                done[result.query_id] = result
        return done

    def start(self, kept: Iterable[QueryResult]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.folder / "run.json", self.fingerprint)
        self._fh = open(self.path, "w", encoding="utf-8")
        for r in kept:
            self._write(r)

    def append(self, result: QueryResult) -> None:
        with self._lock:
            self._write(result)

    def _write(self, result: QueryResult) -> None:
        self._fh.write(redact.dumps(result.to_dict(), ensure_ascii=False) + "\n")
        self._fh.flush()
        now = time.monotonic()
        if now - self._synced >= FSYNC_EVERY_S:
            os.fsync(self._fh.fileno())
            self._synced = now

    def finish(self, ordered: list[QueryResult]) -> None:
        """Close the incremental file and rewrite it in eval-set order."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(redact.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in ordered)
        tmp.replace(self.path)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def read_results(path: Path) -> list[QueryResult]:
    """Load a per_query.jsonl file."""
    return [QueryResult.from_dict(json.loads(line))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
