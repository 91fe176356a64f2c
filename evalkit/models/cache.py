"""A content-addressed on-disk cache of embeddings (sqlite, one table).

Key: (model identity, role, sha256 of the text). Dense encoding dominates cold runs on
small CPUs, so every vector an embedder computes is kept; re-chunking a corpus or
re-running a variant only encodes texts never seen before by that model.
"""
from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import numpy as np

from evalkit.sqlitedb import connect


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors by (model identity, role, text hash); safe to share between threads."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = connect(self.path, "CREATE TABLE IF NOT EXISTS emb (model TEXT, role TEXT, key TEXT, dim INTEGER,"
                                      " vec BLOB, PRIMARY KEY (model, role, key))")

    def get_many(self, model: str, role: str, keys: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                batch = keys[i:i + 500]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(
                    f"SELECT key, vec FROM emb WHERE model=? AND role=? AND key IN ({marks})",
                    [model, role, *batch],
                ).fetchall()
                for key, blob in rows:
                    out[key] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put_many(self, model: str, role: str, items: dict[str, np.ndarray]) -> None:
        rows = [(model, role, k, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?, ?, ?, ?)", rows)
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()
