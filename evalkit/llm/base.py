"""The one LLM interface every node and judge uses, whatever the backend.

A backend turns a ``ChatRequest`` into a ``ChatResponse``. Callers never talk to a
backend directly: they go through ``evalkit.llm.client.LLMClient``, which adds the
content-addressed cache, accounting (tokens, latency, cache hits, retries) and the
per-query usage record. ``LLMSpec`` is how a graph config or a judge config names one.

| backend | what | offline |
|---|---|---|
| ``openai`` | any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp server, DeepSeek, DashScope) | no |
| ``local`` | an embedded GGUF model run in-process by xllamacpp (default: SmolLM2-135M-Instruct) | yes |
| ``extractive`` | no model: the evidence sentences most similar to the question, with citations | yes |
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalkit.errors import EvalkitError

Role = Literal["system", "user", "assistant"]
_WARNED_BACKOFF = False


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion request; every field is part of the cache key."""

    messages: tuple[Message, ...]
    temperature: float = 0.0
    max_tokens: int = 512
    json_mode: bool = False
    seed: int = 0
    stop: tuple[str, ...] = ()
    # Structured inputs the prompt was rendered from. Model backends read ``messages``;
    # the ``extractive`` backend answers from these instead (evidence = (id, text) pairs).
    question: str = ""
    evidence: tuple[tuple[str, str], ...] = ()

    def key_material(self) -> dict[str, Any]:
        d = asdict(self)
        d["messages"] = [[m.role, m.content] for m in self.messages]
        d["stop"] = list(self.stop)
        d["evidence"] = [list(e) for e in self.evidence]
        return d


@dataclass
class ChatResponse:
    """What a backend returned, with the accounting the client needs."""

    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    retries: int = 0
    cache_hit: bool = False
    finish_reason: str = ""
    raw: dict[str, Any] = field(default_factory=dict)


class LLMError(EvalkitError):
    """A call that failed for good (after the configured retries); says why."""

    def __init__(self, message: str, *, kind: str = "error", retries: int = 0):
        super().__init__(message)
        self.kind, self.retries = kind, retries


class CacheMiss(LLMError):
    """Replay-only cache mode met a request it has no answer for."""


class LLMSpec(BaseModel):
    """How configs name an LLM. Secrets are never stored here: only the NAME of the env var."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["openai", "local", "extractive"] = Field(
        default="local", description="openai: any OpenAI-compatible server; local: a GGUF in-process "
                                     "(SmolLM2 by default); extractive: quotes evidence, no model")
    model: str = Field(default="", description="openai: the model name the server serves")
    base_url: str | None = Field(default=None, description="openai: the server, e.g. http://127.0.0.1:8000/v1")
    api_key_env: str | None = Field(default=None, description="name of the environment variable holding the key")
    timeout_s: float = Field(default=60.0, gt=0, description="openai: deadline of each HTTP request as a whole")
    max_retries: int = Field(default=3, ge=0, description="openai: retries of transient failures (the SDK's)")
    backoff_s: float | None = Field(default=None, ge=0, description="deprecated, ignored: the OpenAI SDK's backoff "
                                    "applies (0.5 s doubling, at most 8 s; docs/llm.md)")
    concurrency: int = Field(default=4, ge=1, description="calls in flight at once, shared by every thread")
    temperature: float = Field(default=0.0, description="sampling temperature (0: greedy)")
    max_tokens: int = Field(default=512, ge=1, description="longest answer")
    seed: int = Field(default=0, description="sampling seed")
    gguf_path: str | None = Field(default=None, description="local: a .gguf file (default: SmolLM2-135M)")
    n_ctx: int = Field(default=4096, ge=256, description="local: context window in tokens")
    threads: int = Field(default=1, ge=1, description="local: CPU threads")
    cache: Literal["off", "read-write", "replay-only"] = Field(
        default="read-write", description="the content-addressed answer cache: replay-only fails on a miss")

    @model_validator(mode="after")
    def _warn_deprecated(self) -> LLMSpec:
        global _WARNED_BACKOFF
        if self.backoff_s is not None and not _WARNED_BACKOFF:
            _WARNED_BACKOFF = True  # once per process: specs are built per node and per worker
            logging.getLogger(__name__).warning(
                "LLM option backoff_s is deprecated and ignored: the openai backend uses the OpenAI SDK's "
                "backoff (0.5 s doubling per retry, at most 8 s, or the server's Retry-After); remove it")
        return self

    def identity(self) -> str:
        """Backend, model and every parameter that changes outputs (no secrets, no timeouts)."""
        keep = {"backend": self.backend, "model": self.model, "base_url": self.base_url, "gguf_path": self.gguf_path,
                "n_ctx": self.n_ctx if self.backend == "local" else None}
        return "|".join(f"{k}={v}" for k, v in keep.items() if v not in (None, ""))


class Backend(Protocol):
    """A way to run a chat request; raises ``LLMError`` when it cannot."""

    identity: str

    def chat(self, request: ChatRequest) -> ChatResponse: ...
