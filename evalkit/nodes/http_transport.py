"""How the ``http`` node talks to a service: a deadline per request, retries, a concurrency cap, a cache.

* **Deadline** and **concurrency**: the ``openai`` LLM backend's own transport
  (:class:`evalkit.llm.openai_compat.DeadlineTransport`, on the process's event loop thread):
  ``timeout_s`` bounds each HTTP request as a whole (connect, send, headers and the entire
  body; a server that drips a byte at a time is cut off at the deadline, where httpx's own
  timeouts are per read), and at most ``concurrency`` requests are in flight per node,
  whatever the number of worker threads (waiting for a slot does not count against the
  deadline).
* **Retries**: up to ``max_retries`` after a timeout, a refused or broken connection, HTTP
  429 (its ``Retry-After``, seconds or HTTP date, is waited, capped at 60 s) and 5xx, with
  exponential backoff and full jitter (``uniform(0, min(30, backoff_s * 2**n))``, RNG seeded
  by ``seed``). Other 4xx and bodies that are not JSON are not retried.
* **Cache** (``cache``): ``read-write`` keeps each successful response under
  ``<cache root>/external/``, keyed by SHA-256 of (URL, JSON body, static headers); ``off``
  for a live service; ``replay-only`` never calls the service (a miss is an error). The API
  key (read at call time from ``api_key_env``) is in no key, file, trace or error.
"""
from __future__ import annotations

import email.utils
import hashlib
import json
import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalkit.cachestore import warn, write_file
from evalkit.nodes.system_outputs import ExternalCallError
from evalkit.redact import redact

RETRY_AFTER_CAP_S = 60.0
BACKOFF_CAP_S = 30.0
NOT_RETRIED = ("client_error", "bad_response")


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date), or ``None``."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class ServiceClient:
    """POST JSON to one URL with the node's deadline, retries, concurrency cap and cache (module docstring)."""

    def __init__(self, params: Any, cache_dir: Path, *, sleep: Callable[[float], None] = time.sleep):
        import httpx2

        from evalkit.llm.openai_compat import DeadlineTransport

        self.p, self.cache_dir, self._sleep = params, cache_dir, sleep
        self.url_shown = redact(params.url)
        self._client = httpx2.AsyncClient(transport=DeadlineTransport(params.timeout_s, params.concurrency),
                                          timeout=params.timeout_s)  # per phase, under the whole-request deadline
        self._rng, self._rng_lock = random.Random(params.seed), threading.Lock()

    def _attempt(self, payload: dict[str, Any], headers: dict[str, str]) -> tuple[str, int | None, float | None, Any]:
        """One try: (kind, status, Retry-After seconds, parsed JSON or a detail); kind ``ok`` on success."""
        import httpx2

        from evalkit.llm.openai_compat import _run

        try:
            r = _run(self._client.post(self.p.url, json=payload, headers=headers))
        except httpx2.TimeoutException:
            return "timeout", None, None, f"no complete response within {self.p.timeout_s} s"
        except httpx2.TransportError as exc:
            return "connection", None, None, f"{type(exc).__name__}: {exc}"
        status, body = r.status_code, r.content
        text = body[:200].decode("utf-8", "replace")
        if status == 429:
            wait = retry_after(r.headers.get("retry-after"))
            return "rate_limited", status, None if wait is None else min(wait, RETRY_AFTER_CAP_S), f"HTTP 429: {text}"
        if status >= 500:
            return "server_error", status, None, f"HTTP {status}: {text}"
        if status != 200:
            return "client_error", status, None, f"HTTP {status} (not retried): {text}"
        try:
            return "ok", status, None, json.loads(body)
        except ValueError:
            return "bad_response", status, None, f"HTTP 200 body is not JSON: {body[:120]!r}"

    def _cache_path(self, payload: dict[str, Any]) -> Path:
        key = hashlib.sha256(json.dumps({"v": 1, "url": self.p.url, "body": payload, "headers": self.p.headers},
                                        sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()
        return self.cache_dir / key[:2] / f"{key}.json"

    def call(self, payload: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """The response JSON (cached, or from the service after retries) and ``{status, attempts, cache_hit}``.

        Raises:
            ExternalCallError: the service gave no usable response; ``kind``, ``attempts``, ``status`` say why.
        """
        path = self._cache_path(payload)
        if self.p.cache != "off" and path.is_file():
            try:
                return json.loads(path.read_text(encoding="utf-8")), {"status": 200, "attempts": 0, "cache_hit": True}
            except (UnicodeDecodeError, ValueError) as exc:  # damaged: asked again (read-write) or a miss
                warn(f"cache file {path} is damaged ({type(exc).__name__}); removed it, the request is a cache miss")
                path.unlink(missing_ok=True)
        if self.p.cache == "replay-only":
            raise ExternalCallError(f"http node: no cached response for this request to {self.url_shown} "
                                    "(cache: replay-only)", "cache_miss", 0)
        headers = dict(self.p.headers)
        secret = ""
        if self.p.api_key_env:
            secret = os.environ.get(self.p.api_key_env) or ""
            if not secret:
                raise ExternalCallError(f"http node: ${self.p.api_key_env} (api_key_env) is not set or empty",
                                        "config", 0)
            header = self.p.api_key_header
            headers[header] = f"Bearer {secret}" if header.lower() == "authorization" else secret
        attempts = 0
        while True:
            attempts += 1
            kind, status, wait, data = self._attempt(payload, headers)
            if kind == "ok":
                break
            if kind in NOT_RETRIED or attempts > self.p.max_retries:
                detail = str(data).replace(secret, "***") if secret else str(data)
                raise ExternalCallError(f"http node: {kind} after {attempts} attempt(s) at {self.url_shown}: "
                                        f"{redact(detail)}", kind, attempts, status)
            if wait is None:
                with self._rng_lock:
                    wait = self._rng.uniform(0.0, min(BACKOFF_CAP_S, self.p.backoff_s * 2 ** (attempts - 1)))
            self._sleep(wait)
        if self.p.cache == "read-write":
            write_file(path, json.dumps(data, ensure_ascii=False).encode("utf-8"))  # a private name, then a rename
        return data, {"status": status, "attempts": attempts, "cache_hit": False}
