"""``LLMClient``: the only way nodes and judges talk to a language model.

    client = LLMClient(LLMSpec(backend="local"), purpose="generate")
    reply = client.chat("Why is the sky blue?", system="Answer briefly.", max_tokens=64)
    value, reply = client.chat_json("Return {\\"ok\\": true}")

Every call goes through the content-addressed cache (``evalkit.llm.cache``, mode from
``spec.cache``; a reply that is an error message is not kept, so the next run asks again)
and is accounted in the open ``usage_scope`` under ``purpose``: one call, whether it was a
cache hit, tokens, latency, retries, finish reason, failures (also when it fails; the
``LLMError`` is then re-raised). Tokens are those of the answer even when
it came from the cache, so a query's token count does not depend on what ran before
it (``cache_hits`` says which calls were free; latency is the time really spent).

Backends are registered in :mod:`evalkit.llm.registry` (``BACKENDS``, the ``backend:`` of an ``LLMSpec``); one backend
per client, so its concurrency limit is shared by every thread using the client.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalkit.llm.base import (
    Backend,
    ChatRequest,
    ChatResponse,
    LLMError,
    LLMSpec,
    Message,
)
from evalkit.llm.cache import LLMCache, cache_path
from evalkit.llm.jsonparse import parse_json
from evalkit.llm.registry import backend_info
from evalkit.llm.usage import Usage, finished, record
from evalkit.text.error_replies import detect_error_reply

MessagesLike = str | Sequence[Message | Mapping[str, str] | tuple[str, str]]

JSON_FIX = "Your previous reply was not valid JSON. Reply again with only the JSON {what}, nothing else."
ROLES = ("system", "user", "assistant")


def _error_reply(text: str) -> bool:
    """Whether a reply is an error message sent as the answer (``evalkit.text.error_replies``).

    Such a reply is not cached: the endpoint was down or refusing work (a gateway's 200 with
    "upstream overloaded"), like a call that raised, so the next run asks again instead of
    replaying the outage from the cache.
    """
    return detect_error_reply(text) is not None


def make_backend(spec: LLMSpec, cache_root: Path | None = None) -> Backend:
    """The backend an ``LLMSpec`` names (``cache_root`` is where the extractive backend caches vectors)."""
    return backend_info(spec.backend).factory(spec, cache_root)


def to_messages(messages: MessagesLike, system: str | None = None) -> tuple[Message, ...]:
    """A prompt string, or ``Message``s / ``{"role", "content"}`` dicts / (role, content) pairs -> messages."""
    if isinstance(messages, str):
        items: list[Any] = [Message("user", messages)]
    else:
        items = list(messages)
    out = [Message("system", system)] if system else []
    for m in items:
        role: Any
        content: Any  # checked below, whatever the caller passed
        if isinstance(m, Message):
            role, content = m.role, m.content
        elif isinstance(m, Mapping):
            role, content = m.get("role"), m.get("content")
        else:
            role, content = m
        if role not in ROLES or not isinstance(content, str):
            raise ValueError(f"bad chat message {m!r}: role must be one of {', '.join(ROLES)} and content a string")
        out.append(Message(role, content))
    if not out:
        raise ValueError("a chat needs at least one message")
    return tuple(out)


class LLMClient:
    """Chat with the LLM a spec names, through the cache, with usage accounting."""

    def __init__(self, spec: LLMSpec, cache_root: Path | None = None, purpose: str = "generate", *,
                 backend: Backend | None = None):
        if cache_root is None:
            from evalkit.cachestore import default_cache_root

            cache_root = default_cache_root()
        self.spec, self.purpose, self.cache_root = spec, purpose, Path(cache_root)
        self.backend = backend if backend is not None else make_backend(spec, self.cache_root)
        self.cache = LLMCache(cache_path(self.cache_root), spec.cache)

    @property
    def identity(self) -> str:
        """What produced the answers: spec identity plus backend details (GGUF file and size, ...)."""
        return self.backend.identity

    def request(self, messages: MessagesLike, *, system: str | None = None, json_mode: bool = False,
                max_tokens: int | None = None, temperature: float | None = None, question: str = "",
                evidence: Sequence[tuple[str, str]] = ()) -> ChatRequest:
        """The ``ChatRequest`` (and so the cache key) ``chat`` would send; spec defaults fill the gaps."""
        return ChatRequest(
            messages=to_messages(messages, system),
            temperature=self.spec.temperature if temperature is None else float(temperature),
            max_tokens=self.spec.max_tokens if max_tokens is None else int(max_tokens),
            json_mode=json_mode, seed=self.spec.seed, question=question,
            evidence=tuple((str(d), str(t)) for d, t in evidence),
        )

    def chat(self, messages: MessagesLike, *, system: str | None = None, json_mode: bool = False,
             max_tokens: int | None = None, temperature: float | None = None, question: str = "",
             evidence: Sequence[tuple[str, str]] = ()) -> ChatResponse:
        """One answer. ``question``/``evidence`` are the structured inputs the prompt was rendered from."""
        return self.send(self.request(messages, system=system, json_mode=json_mode, max_tokens=max_tokens,
                                      temperature=temperature, question=question, evidence=evidence))

    def chat_json(self, messages: MessagesLike, *, system: str | None = None, max_tokens: int | None = None,
                  temperature: float | None = None, question: str = "", evidence: Sequence[tuple[str, str]] = (),
                  expect: type | None = None, fix_bad_json: bool = True) -> tuple[Any, ChatResponse]:
        """A JSON answer, parsed robustly (``parse_json``), and the reply it came from.

        A reply without valid JSON is asked again once (when ``fix_bad_json``) with the
        bad reply and a short corrective message; that second call counts as a retry.
        Still no JSON: ``LLMError(kind="bad_json")``. A reply that is an error message (a
        gateway's "upstream overloaded", an error JSON envelope) is no answer to correct:
        ``LLMError(kind="error_reply")`` at once, a failure of the endpoint that the next run may
        not meet (it was not cached either), where ``bad_json`` is the model's and would repeat.
        """
        request = self.request(messages, system=system, json_mode=True, max_tokens=max_tokens,
                               temperature=temperature, question=question, evidence=evidence)
        reply = self.send(request)
        if _error_reply(reply.text):
            record(self.purpose, Usage(failures=1))
            raise LLMError(f"the endpoint answered with an error message, not JSON: {reply.text[:200]!r}",
                           kind="error_reply")
        try:
            return parse_json(reply.text, expect=expect), reply
        except LLMError as first:
            if not fix_bad_json:
                record(self.purpose, Usage(failures=1))
                raise
            names: dict[type | None, str] = {None: "value", dict: "object", list: "array"}
            what = names[expect]
            fix = replace(request, messages=request.messages + (
                Message("assistant", reply.text), Message("user", JSON_FIX.format(what=what))))
            record(self.purpose, Usage(retries=1))
            second = self.send(fix)
            second.retries += 1
            try:
                return parse_json(second.text, expect=expect), second
            except LLMError as e:
                record(self.purpose, Usage(failures=1))
                raise LLMError(f"{e} (after 1 corrective retry; first reply: {first})", kind="bad_json",
                               retries=second.retries) from None

    def send(self, request: ChatRequest) -> ChatResponse:
        """Answer a prepared request: from the cache, else from the backend (then cached)."""
        t0 = time.perf_counter()
        try:
            reply = self.cache.get(self.identity, request)
            if reply is None:
                reply = self.backend.chat(request)
                if not _error_reply(reply.text):
                    self.cache.put(self.identity, request, reply)
        except Exception as e:
            retries = e.retries if isinstance(e, LLMError) else 0
            record(self.purpose, Usage(calls=1, failures=1, retries=retries,
                                       latency_ms=(time.perf_counter() - t0) * 1000))
            raise
        if reply.cache_hit:
            reply.latency_ms = (time.perf_counter() - t0) * 1000
        record(self.purpose, Usage(calls=1, cache_hits=int(reply.cache_hit), tokens_in=reply.tokens_in,
                                   tokens_out=reply.tokens_out, latency_ms=reply.latency_ms, retries=reply.retries,
                                   finish_reasons=finished(reply.finish_reason)))
        return reply

    def close(self) -> None:
        """Close the cache file and the backend's HTTP connections (if any)."""
        self.cache.close()
        closer = getattr(self.backend, "close", None)
        if closer:
            closer()
