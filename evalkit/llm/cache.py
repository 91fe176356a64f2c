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

from evalkit.errors import UnknownNameError
from evalkit.llm.base import CacheMiss, ChatRequest, ChatResponse
from evalkit.sqlitedb import CacheDB

MODES = ("off", "read-write", "replay-only")
FILE_NAME = "llm.sqlite"
# Part of every key: bump when the key material or the stored value changes meaning.
KEY_VERSION = 1
SCHEMA = ("CREATE TABLE IF NOT EXISTS llm (key TEXT PRIMARY KEY, identity TEXT, text TEXT, tokens_in INTEGER,"
          " tokens_out INTEGER, finish_reason TEXT, latency_ms REAL, created REAL)")


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
                self._db = CacheDB(self.path, SCHEMA)
            return self._db

    def get(self, identity: str, request: ChatRequest) -> ChatResponse | None:
        """The stored answer (``cache_hit=True``), ``None`` on a miss; ``CacheMiss`` in replay-only mode."""
        if self.mode == "off":
            return None
        key = request_key(identity, request)
        row = self._connect().run(lambda db: db.execute(
            "SELECT text, tokens_in, tokens_out, finish_reason FROM llm WHERE key=?", (key,)).fetchone())
        if row is not None:
            text, tin, tout, finish = row
            return ChatResponse(text=text, tokens_in=tin, tokens_out=tout, finish_reason=finish, cache_hit=True)
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
        row = (request_key(identity, request), identity, response.text, int(response.tokens_in),
               int(response.tokens_out), response.finish_reason, float(response.latency_ms), time.time())

        def put(db: sqlite3.Connection) -> None:
            db.execute("INSERT OR REPLACE INTO llm VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)
            db.commit()

        self._connect().run(put)

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
    """``<cache root>/llm.sqlite``; the root defaults to ``evalkit.index.store.default_cache_root()``."""
    if cache_root is None:
        from evalkit.index.store import default_cache_root

        cache_root = default_cache_root()
    return Path(cache_root) / FILE_NAME

