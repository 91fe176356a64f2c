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
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evalkit.errors import ConfigError, EvalkitError, did_you_mean
from evalkit.llm.registry import backends, choices
from evalkit.redact import looks_like_key, redact
from evalkit.yamlio import read_yaml

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
    """How configs name an LLM. Secrets are never stored here: only the NAME of the env var.

    ``api_key_env`` must be a variable *name* (``OPENAI_API_KEY``): a value that looks
    like a key itself is refused without being echoed. A key inside ``base_url``
    (``http://user:KEY@host/v1``, ``?api_key=KEY``) is sent to the server but masked
    (:func:`evalkit.redact.redact`) wherever the URL is shown or recorded, ``identity``
    included. ``cache: off`` written unquoted reads as YAML ``false`` and is accepted as
    ``off`` (``true`` / ``on`` means the default ``read-write``). Validation errors never
    quote the input value (``hide_input_in_errors``), so a pasted key cannot travel in one.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    backend: str = Field(
        default="local", description="a registered backend (evalkit.llm.registry): openai: any OpenAI-compatible "
                                     "server; local: a GGUF in-process (SmolLM2 by default); extractive: quotes "
                                     "evidence, no model")
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

    @field_validator("backend")
    @classmethod
    def _registered_backend(cls, value: str) -> str:
        if value not in backends():
            close = did_you_mean(value, backends())
            raise ValueError(f"unknown LLM backend '{value}': one of {choices()}"
                             f"{close if 'did you mean' in close else ''}")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name_not_key(cls, value: str | None) -> str | None:
        if value is not None and looks_like_key(value):
            raise ValueError("api_key_env must be the NAME of an environment variable holding the key (e.g. "
                             "OPENAI_API_KEY), but the value given looks like a key itself (not shown here). Remove "
                             "it from the config, export it as a variable, and put the variable's name here")
        return value

    @field_validator("cache", mode="before")
    @classmethod
    def _yaml_booleans(cls, value: Any) -> Any:
        if value is False:  # `cache: off` unquoted is YAML 1.1's false
            return "off"
        if value is True:  # `cache: on` / `cache: true`
            return "read-write"
        return value

    @classmethod
    def from_yaml(cls, path: str | Path) -> LLMSpec:
        """Read an LLM spec file (``--judge-llm``): ``{backend: openai, base_url: ..., model: ...}``.

        Read with the one YAML reader (duplicate keys refused); a bad field raises
        ``ConfigError`` naming the file, the line and the field, never the value given.
        """
        data, lines = read_yaml(path, error=ConfigError, what="LLM spec")
        data = {} if data is None else data
        if not isinstance(data, dict):
            raise ConfigError(str(path), "", "an LLM spec must be a mapping such as {backend: openai, base_url: "
                              "http://host:8000/v1, model: NAME, api_key_env: VAR}")
        try:
            return cls(**{str(k): v for k, v in data.items()})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(str(path), where, first["msg"], line=lines.get(where)) from None

    def identity(self) -> str:
        """Backend, model and every parameter that changes outputs (no secrets, no timeouts).

        A credential inside ``base_url`` does not change outputs and is masked, so the
        identity (the LLM cache key, the ``generator`` of each answer) never holds it.
        """
        keep = {"backend": self.backend, "model": self.model,
                "base_url": redact(self.base_url) if self.base_url else None, "gguf_path": self.gguf_path,
                "n_ctx": self.n_ctx if self.backend == "local" else None}
        return "|".join(f"{k}={v}" for k, v in keep.items() if v not in (None, ""))


class Backend(Protocol):
    """A way to run a chat request; raises ``LLMError`` when it cannot."""

    identity: str

    def chat(self, request: ChatRequest) -> ChatResponse: ...
