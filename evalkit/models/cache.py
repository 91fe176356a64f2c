"""A content-addressed on-disk cache of embeddings (sqlite, one table).

Key: (model identity, role, sha256 of the text). Dense encoding dominates cold runs on
small CPUs, so every vector an embedder computes is kept; re-chunking a corpus or
re-running a variant only encodes texts never seen before by that model.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.sqlitedb import CacheDB


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors by (model identity, role, text hash); safe to share between threads and processes.

    A stored vector whose byte length disagrees with its recorded dimension is not
    returned (it is encoded again and overwritten); a damaged file is set aside and
    started afresh (:class:`evalkit.sqlitedb.CacheDB`).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._db = CacheDB(self.path, "CREATE TABLE IF NOT EXISTS emb (model TEXT, role TEXT, key TEXT, dim INTEGER,"
                                      " vec BLOB, PRIMARY KEY (model, role, key))")

    def get_many(self, model: str, role: str, keys: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            batch = keys[i:i + 500]
            marks = ",".join("?" * len(batch))
            rows = self._db.run(lambda db: db.execute(
                f"SELECT key, dim, vec FROM emb WHERE model=? AND role=? AND key IN ({marks})",
                [model, role, *batch]).fetchall())
            for key, dim, blob in rows:
                if isinstance(blob, bytes) and len(blob) == 4 * dim:
                    out[key] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put_many(self, model: str, role: str, items: dict[str, np.ndarray]) -> None:
        rows = [(model, role, k, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()]

        def put(db: Any) -> None:
            db.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?, ?, ?, ?)", rows)
            db.commit()

        self._db.run(put)

    def close(self) -> None:
        self._db.close()
