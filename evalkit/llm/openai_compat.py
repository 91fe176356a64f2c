"""Backend ``openai``: any OpenAI-compatible chat endpoint over plain HTTP (httpx).

``POST {base_url}/chat/completions`` with the spec's model. Works with OpenAI, vLLM,
Ollama, llama.cpp's server, DeepSeek, DashScope and anything else speaking that API.

- **API key**: read at call time from the environment variable *named* by
  ``spec.api_key_env``; it lives only in the request header. It is never stored on the
  backend, never logged, never put in an error (and scrubbed from server text quoted
  in one), never part of the cache key.
- **Timeout**: ``spec.timeout_s`` for connect, read, write and pool each.
- **Retries**: up to ``spec.max_retries`` after timeouts, connection errors, HTTP 429
  and 5xx, with exponential backoff and full jitter
  (``uniform(0, min(BACKOFF_CAP_S, backoff_s * 2**attempt))``, RNG seeded by
  ``spec.seed``); a 429's ``Retry-After`` (seconds or HTTP date) is waited instead,
  capped at ``RETRY_AFTER_CAP_S``. Other 4xx and unreadable bodies are not retried.
- **Concurrency**: at most ``spec.concurrency`` requests in flight per backend (one
  backend per ``LLMClient``), whatever the number of threads using it.

Failures raise ``LLMError`` with ``kind`` in ``timeout``, ``rate_limited``,
``server_error``, ``connection``, ``bad_response``, ``client_error`` (``config`` for a
missing key variable) and a message saying what happened, how often, and where.
"""
from __future__ import annotations

import email.utils
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from evalkit.llm.base import ChatRequest, ChatResponse, LLMError, LLMSpec

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BACKOFF_CAP_S = 30.0
RETRY_AFTER_CAP_S = 60.0
SNIPPET = 300  # characters of a server's error body quoted in an LLMError


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date), or ``None``."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class OpenAIBackend:
    """Chat completions from an OpenAI-compatible HTTP endpoint, with retries and a concurrency cap."""

    def __init__(self, spec: LLMSpec, *, sleep: Callable[[float], None] = time.sleep):
        if not spec.model:
            raise LLMError("backend 'openai' needs 'model' (the model name the endpoint serves)", kind="config")
        self.spec = spec
        self.base_url = (spec.base_url or DEFAULT_BASE_URL).rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.identity = spec.identity() if spec.base_url else f"{spec.identity()}|base_url={self.base_url}"
        self._sleep = sleep
        self._sem = threading.BoundedSemaphore(spec.concurrency)
        self._rng = random.Random(spec.seed)
        self._rng_lock = threading.Lock()
        self._http = httpx.Client(timeout=httpx.Timeout(spec.timeout_s))

    def _key(self) -> str | None:
        name = self.spec.api_key_env
        if not name:
            return None
        key = os.environ.get(name)
        if not key:
            raise LLMError(f"the API key variable {name} (named by the LLM's api_key_env) is not set or empty; "
                           f"export {name}=... before running", kind="config")
        return key

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.spec.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if request.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    def _backoff(self, attempt: int) -> float:
        with self._rng_lock:
            return self._rng.uniform(0.0, min(BACKOFF_CAP_S, self.spec.backoff_s * 2 ** attempt))

    def chat(self, request: ChatRequest) -> ChatResponse:
        """Send ``request``; retry transient failures; raise ``LLMError`` once they are exhausted."""
        key = self._key()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        body = self._body(request)
        t0 = time.perf_counter()
        retries = 0
        while True:
            kind, what, wait, r = self._attempt(body, headers, key)
            if r is not None:
                response = self._parse(r, key, retries)
                response.latency_ms, response.retries = (time.perf_counter() - t0) * 1000, retries
                return response
            if kind == "client_error" or retries >= self.spec.max_retries:
                raise LLMError(self._final_message(kind, what, retries), kind=kind, retries=retries)
            delay = wait if wait is not None else self._backoff(retries)
            retries += 1
            self._sleep(delay)

    def _attempt(self, body: dict[str, Any], headers: dict[str, str],
                 key: str | None) -> tuple[str, str, float | None, httpx.Response | None]:
        """One HTTP try: (failure kind, detail, Retry-After seconds, None), or ("ok", "", None, response)."""
        with self._sem:
            try:
                r = self._http.post(self.url, json=body, headers=headers)
            except httpx.TimeoutException as e:
                return "timeout", type(e).__name__, None, None
            except httpx.TransportError as e:
                return "connection", _scrub(f"{type(e).__name__}: {e}", key), None, None
        if r.status_code == 200:
            return "ok", "", None, r
        text = _scrub(r.text[:SNIPPET], key)
        if r.status_code == 429:
            ra = _retry_after(r.headers.get("retry-after"))
            return "rate_limited", text, None if ra is None else min(ra, RETRY_AFTER_CAP_S), None
        if r.status_code >= 500:
            return "server_error", f"HTTP {r.status_code}: {text}", None, None
        hint = f"; check the key in ${self.spec.api_key_env}" if r.status_code in (401, 403) else ""
        return "client_error", f"HTTP {r.status_code} (not retried){hint}: {text}", None, None

    def _final_message(self, kind: str, what: str, retries: int) -> str:
        after = f"after {retries} {'retry' if retries == 1 else 'retries'}"
        return {
            "timeout": f"timed out {after} (timeout {self.spec.timeout_s} s) at {self.url}",
            "connection": f"could not connect {after} to {self.url}: {what}",
            "rate_limited": f"rate limited (HTTP 429) {after} at {self.url}: {what}",
            "server_error": f"server error {after} at {self.url}: {what}",
            "client_error": f"request rejected by {self.url}: {what}",
        }.get(kind, f"{kind} from {self.url}: {what}")

    def _parse(self, r: httpx.Response, key: str | None, retries: int) -> ChatResponse:
        try:
            data = r.json()
            choice = data["choices"][0]
            text = choice["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("content is not a string")
        except (ValueError, KeyError, IndexError, TypeError) as e:
            snippet = _scrub(r.text[:SNIPPET], key)
            raise LLMError(f"bad response from {self.url} (HTTP 200 body is not a chat completion: "
                           f"{type(e).__name__}: {e}): {snippet!r}", kind="bad_response", retries=retries) from None
        usage = data.get("usage") or {}
        return ChatResponse(text=text, tokens_in=int(usage.get("prompt_tokens") or 0),
                            tokens_out=int(usage.get("completion_tokens") or 0),
                            finish_reason=str(choice.get("finish_reason") or ""),
                            raw={k: data[k] for k in ("id", "model", "usage") if k in data})

    def close(self) -> None:
        self._http.close()


def _scrub(text: str, key: str | None) -> str:
    """``text`` with the API key masked (a server may echo request headers in an error page)."""
    return text.replace(key, "***") if key else text
