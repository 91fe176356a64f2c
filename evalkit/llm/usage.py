"""Accounting of LLM work: calls, tokens, latency, cache hits, retries, failures.

The runner opens a ``usage_scope()`` around each query; every LLM call made while it is
open (by a node, or by a judge) adds to it, whatever thread the query runs on. The
totals land in ``per_query.jsonl`` and, summed, in the variant's summary and MLflow.
"""
from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields


@dataclass
class Usage:
    calls: int = 0
    cache_hits: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    retries: int = 0
    failures: int = 0

    def add(self, other: Usage) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def to_dict(self) -> dict[str, float]:
        d = asdict(self)
        d["latency_ms"] = round(self.latency_ms, 3)
        return d


_current: contextvars.ContextVar[dict[str, Usage] | None] = contextvars.ContextVar("evalkit_usage", default=None)


@contextmanager
def usage_scope() -> Iterator[dict[str, Usage]]:
    """Collect the usage of every call made inside the block, keyed by purpose ("generate", "judge"...)."""
    totals: dict[str, Usage] = {}
    token = _current.set(totals)
    try:
        yield totals
    finally:
        _current.reset(token)


def record(purpose: str, usage: Usage) -> None:
    """Add one call's usage to the open scope (no-op outside a scope)."""
    totals = _current.get()
    if totals is not None:
        totals.setdefault(purpose, Usage()).add(usage)


def usage_snapshot() -> Usage | None:
    """The open scope's totals so far, all purposes together (None outside a scope)."""
    totals = _current.get()
    if totals is None:
        return None
    snap = Usage()
    for u in totals.values():
        snap.add(u)
    return snap


def usage_delta(before: Usage | None) -> dict[str, float] | None:
    """What was spent since ``before`` (a ``usage_snapshot``); None when nothing was."""
    after = usage_snapshot()
    if before is None or after is None:
        return None
    delta = {f.name: getattr(after, f.name) - getattr(before, f.name) for f in fields(Usage)}
    if not any(delta.values()):
        return None
    delta["latency_ms"] = round(delta["latency_ms"], 3)
    return delta
