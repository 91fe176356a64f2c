"""LLM backends (openai-compatible, local GGUF, extractive) behind one client with a content-addressed cache.

Nodes and judges use ``LLMClient(spec, cache_root, purpose)``; see ``evalkit.llm.client``.
Importing this package is light: backends import httpx, xllamacpp or the e5 embedder
only when a client that needs them is built.
"""
from evalkit.llm.base import (
    CacheMiss,
    ChatRequest,
    ChatResponse,
    LLMError,
    LLMSpec,
    Message,
)
from evalkit.llm.client import LLMClient, make_backend
from evalkit.llm.extractive import INSUFFICIENT_EVIDENCE
from evalkit.llm.jsonparse import parse_json
from evalkit.llm.registry import BACKENDS
from evalkit.llm.usage import Usage, usage_scope

__all__ = [
    "BACKENDS",
    "INSUFFICIENT_EVIDENCE",
    "CacheMiss",
    "ChatRequest",
    "ChatResponse",
    "LLMClient",
    "LLMError",
    "LLMSpec",
    "Message",
    "Usage",
    "make_backend",
    "parse_json",
    "usage_scope",
]
