"""Opening the sqlite files evalkit keeps (LLM answers, embeddings): one place for the settings.

WAL with ``synchronous=NORMAL`` is crash-safe without an fsync per write. Switching a new
file to WAL takes an exclusive lock without waiting on sqlite's busy handler, so several
processes opening one fresh cache at once (Ray workers, parallel runs) retry the set-up
statements instead of failing with "database is locked".
"""
from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["connect"]

BUSY_TIMEOUT_S = 60.0


def connect(path: str | Path, create: str) -> sqlite3.Connection:
    """A connection to ``path`` in WAL mode with ``create`` (a ``CREATE TABLE IF NOT EXISTS``) applied."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), check_same_thread=False, timeout=BUSY_TIMEOUT_S)
    _when_unlocked(lambda: db.execute("PRAGMA journal_mode=WAL"))
    db.execute("PRAGMA synchronous=NORMAL")
    _when_unlocked(lambda: db.execute(create))
    db.commit()
    return db


def _when_unlocked(step: Callable[[], Any], wait_s: float = BUSY_TIMEOUT_S) -> None:
    """Run a set-up statement, retrying while another process holds the database lock."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
