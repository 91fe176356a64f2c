"""LLM backends (openai-compatible, local GGUF, extractive) behind one client with a content-addressed cache.

Nodes and judges use ``LLMClient(spec, cache_root, purpose)``; see ``evalkit.llm.client``.
Importing this package is light: each name below loads its module on first use (``base``
brings pydantic, ``extractive`` the text rules), and backends import httpx, xllamacpp or the
e5 embedder only when a client that needs them is built; ``evalkit.llm.usage`` alone loads none.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalkit.llm.base import CacheMiss, ChatRequest, ChatResponse, LLMError, LLMSpec, Message
    from evalkit.llm.client import LLMClient, make_backend
    from evalkit.llm.extractive import INSUFFICIENT_EVIDENCE
    from evalkit.llm.jsonparse import parse_json
    from evalkit.llm.registry import BACKENDS
    from evalkit.llm.usage import Usage, usage_scope

_EXPORTS = {**dict.fromkeys(("CacheMiss", "ChatRequest", "ChatResponse", "LLMError", "LLMSpec", "Message"),
                            "evalkit.llm.base"),
            **dict.fromkeys(("LLMClient", "make_backend"), "evalkit.llm.client"),
            "INSUFFICIENT_EVIDENCE": "evalkit.llm.extractive", "parse_json": "evalkit.llm.jsonparse",
            "BACKENDS": "evalkit.llm.registry", **dict.fromkeys(("Usage", "usage_scope"), "evalkit.llm.usage")}

__all__ = ["BACKENDS", "CacheMiss", "ChatRequest", "ChatResponse", "INSUFFICIENT_EVIDENCE", "LLMClient",
           "LLMError", "LLMSpec", "Message", "Usage", "make_backend", "parse_json", "usage_scope"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'evalkit.llm' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
