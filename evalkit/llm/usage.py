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


def usage_snapshot() -> dict[str, Usage] | None:
    """A copy of the open scope's totals by purpose (None outside a scope)."""
    totals = _current.get()
    if totals is None:
        return None
    return {k: Usage(**asdict(v)) for k, v in totals.items()}


def usage_delta(before: dict[str, Usage] | None) -> dict[str, Usage] | None:
    """What was spent since ``before`` (a ``usage_snapshot``), by purpose; None when nothing was."""
    after = usage_snapshot()
    if before is None or after is None:
        return None
    out: dict[str, Usage] = {}
    for purpose, now in after.items():
        was = before.get(purpose, Usage())
        diff = Usage(**{f.name: getattr(now, f.name) - getattr(was, f.name) for f in fields(Usage)})
        if any(getattr(diff, f.name) for f in fields(Usage)):
            out[purpose] = diff
    return out or None


def flat(delta: dict[str, Usage] | None) -> dict[str, float] | None:
    """All purposes of a ``usage_delta`` summed, as a plain dict (what the trace shows)."""
    if not delta:
        return None
    total = Usage()
    for u in delta.values():
        total.add(u)
    return total.to_dict()


def replay(delta: dict[str, Usage] | None) -> None:
    """Record again the LLM work of a reused node result, as cache hits that cost no time.

    Keeps per-query tokens independent of which variant happened to compute a shared
    node first.
    """
    for purpose, u in (delta or {}).items():
        record(purpose, Usage(calls=u.calls, cache_hits=u.calls, tokens_in=u.tokens_in, tokens_out=u.tokens_out))
