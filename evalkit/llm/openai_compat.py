"""Backend ``openai``: any OpenAI-compatible chat endpoint, through the official OpenAI SDK.

``POST {base_url}/chat/completions`` with the spec's model. Works with OpenAI, vLLM,
Ollama, llama.cpp's server, DeepSeek, DashScope and anything else speaking that API.
docs/llm.md describes the behaviour below for users.

- **Deadline**: ``spec.timeout_s`` bounds each HTTP request as a whole: connecting,
  sending, waiting for the headers and reading the entire body. (httpx's own timeouts
  are per read: a server dripping one byte a second held one call 126 s with
  ``timeout_s: 2``.) A request past its deadline is a timeout, retried like one.
- **Retries**: the SDK's. Up to ``spec.max_retries`` after timeouts, connection errors and
  HTTP 408, 409, 429 and 5xx; waits 0.5 s doubling per retry, capped at 8 s, minus up to
  25 % jitter, or what the server asks (``Retry-After`` in seconds or as an HTTP date,
  ``retry-after-ms``) when that is at most 120 s; a longer ``Retry-After`` is not retried.
  Other 4xx and unreadable bodies are not retried. Worst case for one call:
  ``(max_retries + 1) * timeout_s`` plus the waits.
- **Concurrency**: at most ``spec.concurrency`` HTTP requests in flight per backend (one
  backend per ``LLMClient``), whatever the number of threads using it.
- **Credentials in the URL** (``http://user:KEY@host/v1`` becomes Basic auth; a query
  string such as ``?api_key=KEY`` or ``?api-version=...`` is sent after the path, on every
  request) reach the server as given and are masked wherever the URL is shown (``where``,
  ``identity``: :func:`evalkit.redact.redact`).
- **API key**: read at each request from the environment variable *named* by
  ``spec.api_key_env`` (none: no ``Authorization`` header; the SDK's ``OPENAI_API_KEY`` is
  never used implicitly). Never logged, never in an error (server text quoted in one is
  scrubbed and redacted), never part of the cache key.

The SDK client is asynchronous and runs on one event loop thread shared by every
backend of the process (``_loop``): ``asyncio.timeout`` is what makes a deadline that
cancels a request mid-read. ``chat`` is synchronous for its callers.

Failures raise ``LLMError`` with ``kind`` in ``timeout``, ``rate_limited``,
``server_error``, ``connection``, ``bad_response``, ``client_error`` (``config`` for a
missing key variable) and a message saying what happened, how often, and where.
"""
from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import time
import urllib.parse
from collections.abc import Coroutine
from typing import Any, TypeVar, cast

import httpx2
import openai

from evalkit.llm.base import ChatRequest, ChatResponse, LLMError, LLMSpec
from evalkit.redact import redact

DEFAULT_BASE_URL = "https://api.openai.com/v1"
SNIPPET = 300  # characters of a server's error body quoted in an LLMError
T = TypeVar("T")

# HTTP attempts of the call running in this task (the SDK retries inside one ``create``)
_ATTEMPTS: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar("evalkit_openai_attempts",
                                                                              default=None)
_LOOP_LOCK = threading.Lock()
_LOOP: tuple[int, asyncio.AbstractEventLoop] | None = None


def _loop() -> asyncio.AbstractEventLoop:
    """The process's event loop thread for SDK calls (started on first use; a new one after a fork)."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP[0] != os.getpid():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="evalkit-openai-loop", daemon=True).start()
            _LOOP = (os.getpid(), loop)
        return _LOOP[1]


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the loop thread and wait for it; an interrupted caller cancels it."""
    future = asyncio.run_coroutine_threadsafe(coro, _loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


class DeadlineTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport where each request, body included, must complete within ``seconds``.

    Also caps the requests in flight at ``concurrency`` (waiting for a slot does not count
    against the deadline) and counts the attempts of the current call (``_ATTEMPTS``).
    """

    def __init__(self, seconds: float, concurrency: int):
        self.seconds, self.concurrency = seconds, concurrency
        self.inner = httpx2.AsyncHTTPTransport()
        self._slots: asyncio.Semaphore | None = None  # created on the loop that uses it

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.concurrency)
        attempts = _ATTEMPTS.get()
        async with self._slots:
            if attempts is not None:
                attempts.append(time.monotonic())
            try:
                async with asyncio.timeout(self.seconds):
                    response = await self.inner.handle_async_request(request)
                    stream = cast(httpx2.AsyncByteStream, response.stream)  # an async transport's response
                    try:
                        body = b"".join([part async for part in stream])
                    finally:
                        await response.aclose()
            except TimeoutError:
                raise httpx2.ReadTimeout(f"no complete response within {self.seconds:g} s",
                                         request=request) from None
        return httpx2.Response(response.status_code, headers=response.headers, content=body,
                               extensions=response.extensions, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class OpenAIBackend:
    """Chat completions from an OpenAI-compatible endpoint via the OpenAI SDK, with a per-request deadline."""

    def __init__(self, spec: LLMSpec):
        if not spec.model:
            raise LLMError("backend 'openai' needs 'model' (the model name the endpoint serves)", kind="config")
        self.spec = spec
        base, _, query = (spec.base_url or DEFAULT_BASE_URL).strip().partition("?")
        self.base_url = base.rstrip("/")
        # a query string in base_url (?api-version=..., ?api_key=...) goes after the path, on every request
        self.query = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
        self.url = f"{self.base_url}/chat/completions" + (f"?{query}" if query else "")
        self.where = redact(self.url)  # what messages show: credentials in the URL masked
        self.identity = spec.identity() if spec.base_url else f"{spec.identity()}|base_url={self.base_url}"
        self._sdk: openai.AsyncOpenAI | None = None
        self._sdk_pid = 0
        # built now, on the loop thread, with the SDK's chat module loaded: the ~1-3 s this takes on a
        # busy machine would otherwise land in the first call (and before its deadline starts)
        _run(self._build())

    def _key(self) -> str:
        """The API key from the variable ``api_key_env`` names ("" when it names none)."""
        name = self.spec.api_key_env
        if not name:
            return ""
        key = os.environ.get(name)
        if not key:
            raise LLMError(f"the API key variable {name} (named by the LLM's api_key_env) is not set or empty; "
                           f"export {name}=... before running", kind="config")
        return key

    async def _build(self) -> None:
        self._client().chat.completions  # noqa: B018 - the SDK imports its resource modules on first access

    async def _current_key(self) -> str:
        return self._key()

    def _client(self) -> openai.AsyncOpenAI:
        if self._sdk is None or self._sdk_pid != os.getpid():
            transport = DeadlineTransport(self.spec.timeout_s, self.spec.concurrency)
            self._sdk = openai.AsyncOpenAI(
                api_key=self._current_key, base_url=self.base_url, max_retries=self.spec.max_retries,
                default_query=self.query or None,
                timeout=self.spec.timeout_s,  # per phase, under the whole-request deadline
                http_client=httpx2.AsyncClient(transport=transport, timeout=self.spec.timeout_s))
            self._sdk_pid = os.getpid()
        return self._sdk

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

    async def _create(self, body: dict[str, Any], attempts: list[float]) -> Any:
        _ATTEMPTS.set(attempts)  # this task's context: the transport counts into it
        # no key variable: send no Authorization at all (the SDK insists on one unless told so)
        unauthenticated: dict[str, Any] = {} if self.spec.api_key_env else {"extra_headers": {"Authorization": openai.Omit()}}
        return await self._client().chat.completions.with_raw_response.create(**body, **unauthenticated)

    def chat(self, request: ChatRequest) -> ChatResponse:
        """Send ``request``; the SDK retries transient failures; ``LLMError`` once they are exhausted."""
        key = self._key()  # a missing variable fails before anything is sent
        attempts: list[float] = []
        t0 = time.perf_counter()
        try:
            raw = _run(self._create(self._body(request), attempts))
        except openai.OpenAIError as e:
            retries = max(0, len(attempts) - 1)
            kind, what = _classify(e, retries, self.spec.api_key_env, key)
            raise LLMError(self._final_message(kind, what, retries), kind=kind, retries=retries) from None
        retries = max(0, len(attempts) - 1)
        response = self._parse(raw.http_response, key, retries)
        response.latency_ms, response.retries = (time.perf_counter() - t0) * 1000, retries
        return response

    def _final_message(self, kind: str, what: str, retries: int) -> str:
        after = f"after {retries} {'retry' if retries == 1 else 'retries'}"
        return {
            "timeout": f"timed out {after} (deadline {self.spec.timeout_s:g} s per request) at {self.where}",
            "connection": f"could not connect {after} to {self.where}: {what}",
            "rate_limited": f"rate limited (HTTP 429) {after} at {self.where}: {what}",
            "server_error": f"server error {after} at {self.where}: {what}",
            "client_error": f"request rejected by {self.where}: {what}",
        }.get(kind, f"{kind} from {self.where} {after}: {what}")

    def _parse(self, r: httpx2.Response, key: str, retries: int) -> ChatResponse:
        """A ``ChatResponse`` from a 200 body, checked field by field (a server may lie)."""
        try:
            data = r.json()
            choice = data["choices"][0]
            finish = str(choice.get("finish_reason") or "")
            text = choice["message"]["content"]
            if text is None and finish:  # e.g. content_filter: no content, and the reason says why
                text = ""
            if not isinstance(text, str):
                raise TypeError("content is not a string")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
            snippet = _scrub(r.text[:SNIPPET], key)
            raise LLMError(f"bad response from {self.where} (HTTP 200 body is not a chat completion: "
                           f"{type(e).__name__}: {e}): {snippet!r}", kind="bad_response", retries=retries) from None
        usage = data.get("usage") or {}
        return ChatResponse(text=text, tokens_in=int(usage.get("prompt_tokens") or 0),
                            tokens_out=int(usage.get("completion_tokens") or 0), finish_reason=finish,
                            raw={k: data[k] for k in ("id", "model", "usage") if k in data})

    def close(self) -> None:
        """Close the SDK client's connections (when one was built in this process)."""
        if self._sdk is not None and self._sdk_pid == os.getpid():
            _run(self._sdk.close())
        self._sdk = None


def _classify(e: openai.OpenAIError, retries: int, key_env: str | None, key: str) -> tuple[str, str]:
    """(failure kind, detail) of an SDK error; server text is scrubbed of the key."""
    if isinstance(e, openai.APITimeoutError):
        return "timeout", ""
    if isinstance(e, openai.APIConnectionError):
        cause = e.__cause__ or e
        return "connection", _scrub(f"{type(cause).__name__}: {cause}", key)
    if isinstance(e, openai.APIStatusError):
        status, text = e.status_code, _scrub(e.response.text[:SNIPPET], key)
        if status == 429:
            return "rate_limited", text
        if status >= 500:
            return "server_error", f"HTTP {status}: {text}"
        retried = f"after {retries} {'retry' if retries == 1 else 'retries'}" if retries else "not retried"
        hint = f"; check the key in ${key_env}" if status in (401, 403) and key_env else ""
        return "client_error", f"HTTP {status} ({retried}){hint}: {text}"
    return "error", _scrub(f"{type(e).__name__}: {e}", key)


def _scrub(text: str, key: str) -> str:
    """``text`` with the API key masked (a server may echo request headers), then redacted."""
    return redact(text.replace(key, "***") if key else text)
