"""The one content-addressed cache of LLM answers (sqlite, one table).

Key: sha256 of (backend identity, every ``ChatRequest`` field: messages, temperature,
max tokens, JSON mode, seed, stop strings, structured question and evidence). Value:
the answer text, token counts and finish reason. Same identity + same request = same
answer, so re-running an eval (or a variant sharing a prompt with another) costs
nothing, and a finished run can be replayed bit-for-bit without a model.

Modes (``LLMSpec.cache``):

| mode | read | write | on a miss |
|---|---|---|---|
| ``off`` | no | no | call the backend |
| ``read-write`` | yes | yes | call the backend, store the answer |
| ``replay-only`` | yes | no | raise ``CacheMiss`` (nothing may call a model) |

Secrets never reach this file: the identity names the API key's env var at most, and
the request holds only what the model sees.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path

import xxhash

from evalkit.cachestore import warn
from evalkit.errors import UnknownNameError
from evalkit.llm.base import CacheMiss, ChatRequest, ChatResponse
from evalkit.sqlitedb import CacheDB

MODES = ("off", "read-write", "replay-only")
FILE_NAME = "llm.sqlite"
# Part of every key: bump when the key material or the stored value changes meaning.
KEY_VERSION = 1
SCHEMA = ("CREATE TABLE IF NOT EXISTS llm (key TEXT PRIMARY KEY, identity TEXT, text TEXT, tokens_in INTEGER,"
          " tokens_out INTEGER, finish_reason TEXT, latency_ms REAL, created REAL, checksum TEXT)")
COLUMNS = {"llm": "checksum TEXT"}  # added to files written before answers carried a checksum
SELECT = "SELECT text, tokens_in, tokens_out, finish_reason, checksum FROM llm"


def answer_checksum(text: str, tokens_in: int, tokens_out: int, finish_reason: str | None) -> str:
    """xxh3-64 of what a hit returns: an answer edited in the file no longer matches (NULL: written before checksums)."""
    blob = json.dumps([text, tokens_in, tokens_out, finish_reason], ensure_ascii=False)
    return xxhash.xxh3_64_hexdigest(blob.encode("utf-8"))


def count_bad_rows(db: sqlite3.Connection) -> int:
    """How many stored answers differ from their checksum (``evalkit cache verify``)."""
    if not any(row[1] == "checksum" for row in db.execute("PRAGMA table_info(llm)")):
        return 0  # a file written before answers carried a checksum: nothing to compare
    return sum(1 for text, tin, tout, finish, check in db.execute(SELECT)
               if check is not None and check != answer_checksum(text, tin, tout, finish))


def request_key(identity: str, request: ChatRequest) -> str:
    """The cache key of ``request`` sent to the backend named by ``identity`` (hex sha256)."""
    material = {"v": KEY_VERSION, "identity": identity, "request": request.key_material()}
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def describe(request: ChatRequest, limit: int = 80) -> str:
    """A short human description of a request for error messages: its last user message."""
    users = [m.content for m in request.messages if m.role == "user"]
    text = (users[-1] if users else request.question).replace("\n", " ")
    return repr(text if len(text) <= limit else text[:limit] + "...")


class LLMCache:
    """Answers by request key in one sqlite file; safe to share between threads."""

    def __init__(self, path: str | Path, mode: str = "read-write"):
        if mode not in MODES:
            raise UnknownNameError(f"unknown LLM cache mode '{mode}'; valid: {', '.join(MODES)}")
        self.path, self.mode = Path(path), mode
        self._lock = threading.Lock()
        self._db: CacheDB | None = None
        if mode != "off":
            self._connect()

    def _connect(self) -> CacheDB:
        with self._lock:
            if self._db is None:
                self._db = CacheDB(self.path, SCHEMA, COLUMNS)
            return self._db

    def get(self, identity: str, request: ChatRequest) -> ChatResponse | None:
        """The stored answer (``cache_hit=True``), ``None`` on a miss; ``CacheMiss`` in replay-only mode."""
        if self.mode == "off":
            return None
        key = request_key(identity, request)
        row = self._connect().run(lambda db: db.execute(f"{SELECT} WHERE key=?", (key,)).fetchone())
        if row is not None:
            text, tin, tout, finish, check = row
            if check is None or check == answer_checksum(text, tin, tout, finish):
                return ChatResponse(text=text, tokens_in=tin, tokens_out=tout, finish_reason=finish, cache_hit=True)
            self._drop(key)
        if self.mode == "replay-only":
            raise CacheMiss(
                f"replay-only LLM cache {self.path} has no answer for request {key[:12]} "
                f"(backend {identity}; user message {describe(request)}). Fill the cache by running "
                "the same eval once with the LLM's 'cache: read-write', or switch to 'cache: off'.",
                kind="cache_miss")
        return None

    def put(self, identity: str, request: ChatRequest, response: ChatResponse) -> None:
        """Store an answer (read-write mode only; a no-op otherwise)."""
        if self.mode != "read-write":
            return
        tin, tout = int(response.tokens_in), int(response.tokens_out)
        row = (request_key(identity, request), identity, response.text, tin, tout, response.finish_reason,
               float(response.latency_ms), time.time(), answer_checksum(response.text, tin, tout, response.finish_reason))

        def put(db: sqlite3.Connection) -> None:
            db.execute("INSERT OR REPLACE INTO llm (key, identity, text, tokens_in, tokens_out, finish_reason,"
                       " latency_ms, created, checksum) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
            db.commit()

        self._connect().run(put)

    def _drop(self, key: str) -> None:
        """Delete an answer that differs from its checksum, saying so (the request becomes a miss)."""
        warn(f"cache file {self.path}: the stored answer to request {key[:12]} differs from its checksum (edited or "
             "damaged); it is not used: the request is a cache miss")
        if self.mode != "read-write":
            return  # replay-only writes nothing

        def drop(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM llm WHERE key=?", (key,))
            db.commit()

        self._connect().run(drop)

    def count(self) -> int:
        """How many answers the file holds (0 when the cache is off and the file absent)."""
        if self._db is None and not self.path.exists():
            return 0
        return int(self._connect().run(lambda db: db.execute("SELECT COUNT(*) FROM llm").fetchone()[0]))

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def cache_path(cache_root: str | Path | None) -> Path:
    """``<cache root>/llm.sqlite``; the root defaults to ``evalkit.cachestore.default_cache_root()``."""
    if cache_root is None:
        from evalkit.cachestore import default_cache_root

        cache_root = default_cache_root()
    return Path(cache_root) / FILE_NAME

