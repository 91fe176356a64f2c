"""Secrets never travel: the one function that masks them, wherever text leaves evalkit.

A key can hide in a URL (``http://user:KEY@host/v1``, ``https://host/v1?api_key=KEY``),
in an ``Authorization: Bearer KEY`` header quoted by a server, or be pasted where the
*name* of an environment variable belongs (``api_key_env: sk-...``). Everything evalkit
writes (MLflow params and artifacts, ``config.yaml``, ``per_query.jsonl``, traces, error
messages, HTML reports) passes through :func:`redact` (text) or :func:`redact_obj`
(nested JSON-like values) first. Masked parts become ``***``; the rest of the text is kept
so a reader still sees which host or parameter was meant.
"""
from __future__ import annotations

import re
from typing import Any

MASK = "***"

# query-string / form / header-style parameters whose values are secrets
_SECRET_NAMES = r"(?:api[_-]?key|apikey|access[_-]?token|refresh[_-]?token|auth[_-]?token|token|secret|" \
                r"client[_-]?secret|password|passwd|pwd|sig|signature|key|x-api-key|subscription-key|code)"
_QUERY_SECRET = re.compile(rf"(?i)([?&;]{_SECRET_NAMES}=)[^&#\s'\"<>]*")
# scheme://user:password@host  or  scheme://token@host
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s'\"<>]+@")
_BEARER = re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}")
# well-known key shapes (OpenAI/Anthropic/DeepSeek sk-, HF hf_, GitHub ghp_/gho_/github_pat_, AWS AKIA, Google AIza,
# Slack xox?-), matched anywhere
_KEY_SHAPES = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
    r"AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|xox[abprs]-[A-Za-z0-9-]{10,})")


def looks_like_key(value: str) -> bool:
    """True when ``value`` looks like a secret rather than the NAME of an environment variable.

    Environment variable names are letters, digits and underscores (``OPENAI_API_KEY``);
    anything of a known key shape, or a long run with dashes, dots, mixed case and digits,
    is taken for a pasted key.
    """
    v = value.strip()
    if _KEY_SHAPES.search(v):
        return True
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
        # a plausible variable name, unless it is a long random-looking token (mixed case + digits)
        return len(v) >= 32 and bool(re.search(r"[a-z]", v)) and bool(re.search(r"[A-Z]", v)) \
            and bool(re.search(r"\d", v))
    return len(v) >= 16


def redact(text: str) -> str:
    """``text`` with URL credentials, secret query parameters, bearer tokens and key-shaped strings masked."""
    if not text:
        return text
    out = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    out = _QUERY_SECRET.sub(lambda m: f"{m.group(1)}{MASK}", out)
    out = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", out)
    return _KEY_SHAPES.sub(MASK, out)


def redact_obj(value: Any) -> Any:
    """:func:`redact` applied to every string inside dicts, lists and tuples (keys included)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_obj(k): redact_obj(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_obj(v) for v in value)
    return value
