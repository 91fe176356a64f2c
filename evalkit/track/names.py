"""MLflow's name and size rules, and the one place evalkit names become MLflow keys.

MLflow 3.17 (``mlflow.utils.validation``): metric and param keys may hold only
alphanumerics, ``_ - . / space`` (and ``:`` except on Windows), must not normalise to
another path (``a//b``, ``./a``, leading ``/``) and are at most 250 characters; param
values at most 6000 characters, tag values 8000. ``@`` is **not** allowed, so evalkit's
printed metric names are mapped in exactly one place, :func:`mlflow_metric_name`
(``recall@20`` -> ``recall_at_20``); run metrics, parent-run metrics and trace
assessments all use it, so one name finds the same number everywhere in the UI.

The limits are repeated here so that this module imports without mlflow.
"""
from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Iterator
from typing import Any

MAX_KEY_LENGTH = 250
MAX_PARAM_VALUE_LENGTH = 6000
MAX_TAG_VALUE_LENGTH = 8000
MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_PER_BATCH = 100
MAX_TAGS_PER_BATCH = 100
MAX_ENTITIES_PER_BATCH = 1000

TRUNCATED = "...[truncated by evalkit: {n} chars]"

_UNSAFE_KEY_CHARS = re.compile(r"[^\w./\- ]")   # the Windows-safe subset, so logs move between stores


def mlflow_metric_name(name: str) -> str:
    """The MLflow key of an evalkit metric name: the ONE place names are mapped.

    ``@`` becomes ``_at_`` (``recall@20`` -> ``recall_at_20``, ``hit@5`` -> ``hit_at_5``);
    any other character MLflow rejects (or that Windows stores reject, such as ``:``)
    becomes ``_``; names that would normalise to another path (``a//b``, ``/a``) have
    their slashes replaced; names over 250 characters are cut and given a hash suffix.
    Names MLflow already accepts (``mrr``, ``ndcg_10``) are returned unchanged.
    """
    return safe_key(str(name).replace("@", "_at_"))


def safe_key(key: str) -> str:
    """A key MLflow accepts: allowed characters only, not path-like, at most 250 characters."""
    key = _UNSAFE_KEY_CHARS.sub("_", key)
    if posixpath.normpath(key) != key or key.startswith(("/", "..")) or key in ("", "."):
        key = key.replace("/", "_")                 # without slashes only dots remain to fix
        if key.startswith(".") or not key:
            key = "_" + key[1:]
    if len(key) > MAX_KEY_LENGTH:
        digest = hashlib.sha256(key.encode()).hexdigest()[:8]
        key = f"{key[:MAX_KEY_LENGTH - 9]}-{digest}"
    return key


def param_value(value: str) -> str:
    """``value`` cut to MLflow's 6000 characters, saying how long it was."""
    if len(value) <= MAX_PARAM_VALUE_LENGTH:
        return value
    marker = TRUNCATED.format(n=len(value))
    return value[:MAX_PARAM_VALUE_LENGTH - len(marker)] + marker


def tag_value(value: Any) -> str:
    """``value`` as a tag string (JSON for non-strings), cut to MLflow's 8000 characters."""
    value = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return value if len(value) <= MAX_TAG_VALUE_LENGTH else value[:MAX_TAG_VALUE_LENGTH - 3] + "..."


def batches(metrics: list[Any], params: list[Any],
            tags: list[Any]) -> Iterator[tuple[list[Any], list[Any], list[Any]]]:
    """Split into ``log_batch`` requests: <=1000 metrics, <=100 params, <=100 tags, <=1000 in all."""
    m, p, t = list(metrics), list(params), list(tags)
    while m or p or t:
        bp, p = p[:MAX_PARAMS_PER_BATCH], p[MAX_PARAMS_PER_BATCH:]
        bt, t = t[:MAX_TAGS_PER_BATCH], t[MAX_TAGS_PER_BATCH:]
        room = min(MAX_METRICS_PER_BATCH, MAX_ENTITIES_PER_BATCH - len(bp) - len(bt))
        bm, m = m[:room], m[room:]
        yield bm, bp, bt
