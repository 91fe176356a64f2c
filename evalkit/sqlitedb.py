"""Opening the sqlite files evalkit keeps (LLM answers, embeddings): one place for the settings.

WAL with ``synchronous=NORMAL`` is crash-safe without an fsync per write. Switching a new
file to WAL takes an exclusive lock without waiting on sqlite's busy handler, so several
processes opening one fresh cache at once (Ray workers, parallel runs) retry the set-up
statements instead of failing with "database is locked".

Every write is a sqlite transaction, so an entry is stored whole or not at all. A file
that is damaged anyway (truncated, overwritten, a disk fault) is caught by
:class:`CacheDB`: sqlite reports it as corrupt or "not a database", the file is reported
in a warning naming it, moved aside to ``<name>.damaged`` and started afresh, and the
call is retried on the new file (a lookup is then a miss: the work is done again).
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from evalkit.cachestore import warn

__all__ = ["CacheDB", "connect", "is_damage"]

BUSY_TIMEOUT_S = 60.0
DAMAGED_SUFFIX = ".damaged"
# sqlite's names for a file that is not (or no longer) a sound database
DAMAGE_CODES = ("SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_IOERR_SHORT_READ")
T = TypeVar("T")


def connect(path: str | Path, create: str) -> sqlite3.Connection:
    """A connection to ``path`` in WAL mode with ``create`` (a ``CREATE TABLE IF NOT EXISTS``) applied."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), check_same_thread=False, timeout=BUSY_TIMEOUT_S)
    try:
        _when_unlocked(lambda: db.execute("PRAGMA journal_mode=WAL"))
        db.execute("PRAGMA synchronous=NORMAL")
        _when_unlocked(lambda: db.execute(create))
        db.commit()
    except sqlite3.Error:
        db.close()
        raise
    return db


def is_damage(exc: BaseException) -> bool:
    """Whether a sqlite error means the file itself is damaged (not busy, not a bad statement)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    name = str(getattr(exc, "sqlite_errorname", ""))
    return name.startswith(DAMAGE_CODES) or "malformed" in str(exc) or "not a database" in str(exc)


class CacheDB:
    """A sqlite cache file that repairs itself; every use goes through :meth:`run` (thread-safe)."""

    def __init__(self, path: str | Path, create: str, columns: dict[str, str] | None = None):
        """``create`` makes the table; ``columns`` (``{table: "name TYPE"}``) are added to a file made before them."""
        self.path, self.create, self.columns = Path(path), create, dict(columns or {})
        self.lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._inode: int | None = None
        with self.lock:
            self._open()

    def run(self, step: Callable[[sqlite3.Connection], T]) -> T:
        """``step(connection)`` under the lock; on a damaged file, set it aside, start afresh and retry once."""
        with self.lock:
            try:
                return step(self._open())
            except sqlite3.DatabaseError as exc:
                if not is_damage(exc):
                    raise
                self._set_aside(exc)
                return step(self._open())

    def close(self) -> None:
        with self.lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _open(self) -> sqlite3.Connection:
        if self._db is None:
            try:
                self._db = connect(self.path, self.create)
            except sqlite3.DatabaseError as exc:
                if not is_damage(exc):
                    raise
                self._set_aside(exc)
                self._db = connect(self.path, self.create)
            self._inode = _inode(self.path)
            for table, column in self.columns.items():
                _add_column(self._db, table, column)
        return self._db

    def _set_aside(self, exc: BaseException) -> None:
        """Close, and move the damaged file (and its WAL) to ``<name>.damaged`` unless another process already did."""
        if self._db is not None:
            self._db.close()
            self._db = None
        seen, self._inode = self._inode, None
        if seen is not None and _inode(self.path) not in (seen, None):
            return  # another process already replaced it with a fresh file
        moved = False
        for suffix in ("", "-wal", "-shm"):
            try:
                os.replace(f"{self.path}{suffix}", f"{self.path}{DAMAGED_SUFFIX}{suffix}")
                moved = moved or suffix == ""
            except FileNotFoundError:
                continue
        if moved:
            warn(f"cache file {self.path} is damaged ({exc}); moved it to {self.path}{DAMAGED_SUFFIX} and started "
                 "a fresh one (what it held is computed again; delete the .damaged file when you no longer need it)")


def _add_column(db: sqlite3.Connection, table: str, column: str) -> None:
    """Add ``column`` ("name TYPE") to ``table`` unless it is there (another process may add it at the same time)."""
    name = column.split()[0]
    if any(row[1] == name for row in db.execute(f"PRAGMA table_info({table})")):
        return
    try:
        _when_unlocked(lambda: db.execute(f"ALTER TABLE {table} ADD COLUMN {column}"))
        db.commit()
    except sqlite3.OperationalError as exc:
        if "duplicate column" not in str(exc):
            raise


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None


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
