"""LLM backends (openai-compatible, local GGUF, extractive) behind one client with a content-addressed cache.

Nodes and judges use ``LLMClient(spec, cache_root, purpose)``; see ``evalkit.llm.client``.
Importing this package is light: each name below loads its module on first use (``base``
brings pydantic, ``extractive`` the text rules), and backends import httpx, xllamacpp or the
e5 embedder only when a client that needs them is built; ``evalkit.llm.usage`` alone loads none.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit.lazy import lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
