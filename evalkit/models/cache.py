"""A content-addressed on-disk cache of embeddings (sqlite, one table).

Key: (model identity, role, sha256 of the text). Dense encoding dominates cold runs on
small CPUs, so every vector an embedder computes is kept; re-chunking a corpus or
re-running a variant only encodes texts never seen before by that model.
"""
from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from evalkit.sqlitedb import CacheDB


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def vector_checksum(dim: int, blob: bytes) -> str:
    """xxh3-64 of a stored vector and its dimension."""
    return xxhash.xxh3_64_hexdigest(dim.to_bytes(4, "little") + blob)


def sound(dim: int, blob: Any, check: str | None) -> bool:
    """Whether a stored vector is whole: ``dim`` float32 values, matching its checksum (NULL: written before checksums)."""
    return isinstance(blob, bytes) and len(blob) == 4 * dim and (check is None or check == vector_checksum(dim, blob))


def count_bad_rows(db: Any) -> int:
    """How many stored vectors are not :func:`sound` (``evalkit cache verify``)."""
    has_checksums = any(row[1] == "checksum" for row in db.execute("PRAGMA table_info(emb)"))
    query = f"SELECT dim, vec, {'checksum' if has_checksums else 'NULL'} FROM emb"  # NULL: a file from before them
    return sum(1 for dim, blob, check in db.execute(query) if not sound(dim, blob, check))


class EmbeddingCache:
    """Vectors by (model identity, role, text hash); safe to share between threads and processes.

    A stored vector whose byte length disagrees with its recorded dimension is not
    returned (it is encoded again and overwritten); a damaged file is set aside and
    started afresh (:class:`evalkit.sqlitedb.CacheDB`).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._db = CacheDB(self.path, "CREATE TABLE IF NOT EXISTS emb (model TEXT, role TEXT, key TEXT, dim INTEGER,"
                                      " vec BLOB, checksum TEXT, PRIMARY KEY (model, role, key))",
                           {"emb": "checksum TEXT"})  # the column is added to files written before it

    def get_many(self, model: str, role: str, keys: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        bad = 0
        for i in range(0, len(keys), 500):
            batch = keys[i:i + 500]
            marks = ",".join("?" * len(batch))
            rows = self._db.run(_fetch(
                f"SELECT key, dim, vec, checksum FROM emb WHERE model=? AND role=? AND key IN ({marks})",
                [model, role, *batch]))
            for key, dim, blob, check in rows:
                if sound(dim, blob, check):
                    out[key] = np.frombuffer(blob, dtype=np.float32)
                else:
                    bad += 1
        if bad:
            from evalkit.cachestore import warn

            warn(f"cache file {self.path}: {bad} stored vector(s) of {model} differ from their checksum or "
                 "dimension (edited or damaged); they are encoded again")
        return out

    def put_many(self, model: str, role: str, items: dict[str, np.ndarray]) -> None:
        rows = []
        for k, v in items.items():
            blob = np.asarray(v, dtype=np.float32).tobytes()
            rows.append((model, role, k, int(v.shape[0]), blob, vector_checksum(int(v.shape[0]), blob)))

        def put(db: Any) -> None:
            db.executemany("INSERT OR REPLACE INTO emb (model, role, key, dim, vec, checksum) VALUES (?, ?, ?, ?, ?, ?)",
                           rows)
            db.commit()

        self._db.run(put)

    def close(self) -> None:
        self._db.close()


def _fetch(sql: str, params: list[Any]) -> Callable[[sqlite3.Connection], list[Any]]:
    """A ``CacheDB.run`` step fetching every row of ``sql``: one query per batch, bound to its own parameters."""
    return lambda db: db.execute(sql, params).fetchall()
