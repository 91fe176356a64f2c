"""Shared work across variants: node results memoised by what determines them.

Variants that share a prefix of the graph (the same rewrite and retrieval before
different rerankers, guards or generators) compute that prefix once per query. A node execution is identified
by its type, its parameters, the variant context that changes its output (chunking,
seed) and the values of the state fields it reads; an identical execution in another
variant reuses the stored result, which the trace marks ``reused``. LLM usage of the
original execution is replayed as cache hits and its duration is reported, so per-query
tokens and latency do not depend on which variant ran first (the time saved shows in
the variant's wall-clock ``seconds``). Only successful executions are stored.

Sharing here is per node. A ``retrieve`` node searches its channels *and* fuses them, so
two fusion settings are two different nodes; their common channel searches are shared
one level down, by ``Resources.shared_search``. ``benchmarks/sweep_cost.py`` measures
what a fusion sweep costs.
"""
from __future__ import annotations

import hashlib
import json
import pickle
import threading
from collections.abc import Mapping
from typing import Any


def node_identity(node: Any, context: Mapping[str, Any]) -> str:
    """Type + parameters + variant context of a node, as a short hash."""
    payload = json.dumps({"type": node.type, "params": node.params.model_dump(mode="json"), "context": context},
                         sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


class NodeMemo:
    """Results of deterministic node executions, shared by the variants of one invocation."""

    def __init__(self) -> None:
        self._store: dict[tuple[str, str], tuple[dict[str, Any], Any, float]] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(node: Any, state: Mapping[str, Any]) -> tuple[str, str] | None:
        identity = getattr(node, "memo_id", None)
        if identity is None or not getattr(node, "memoize", True):
            return None
        reads = node.reads_for(node.params)
        try:
            blob = pickle.dumps(tuple((f, state.get(f)) for f in reads), protocol=4)
        except (pickle.PicklingError, TypeError, AttributeError):
            return None
        return identity, hashlib.sha256(blob).hexdigest()

    def get(self, key: tuple[str, str] | None) -> tuple[dict[str, Any], Any, float] | None:
        """(fields written, LLM usage, duration in ms) of a stored execution, or None."""
        if key is None:
            return None
        with self._lock:
            found = self._store.get(key)
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
            return found

    def put(self, key: tuple[str, str] | None, wrote: dict[str, Any], usage: Any, duration_ms: float) -> None:
        if key is not None:
            with self._lock:
                self._store.setdefault(key, (wrote, usage, duration_ms))
