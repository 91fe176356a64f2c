"""Accounting of LLM work: calls, tokens, latency, cache hits, retries, failures, finish reasons.

The runner opens a ``usage_scope()`` around each query; every LLM call made while it is
open (by a node, or by a judge) adds to it, whatever thread the query runs on. The
totals land in ``per_query.jsonl`` (``usage``, by purpose), in each trace event's ``llm``
and, summed, in the variant's summary and MLflow.

``finish_reasons`` counts the ``finish_reason`` of every answer (cache hits included, like
tokens): ``stop``, ``length`` (cut at ``max_tokens``: a truncated answer),
``content_filter`` (the provider refused), ``tool_calls``..., and ``unknown`` when a backend
gave none. In ``to_dict`` (what files and MLflow hold) they are flat numbers named
``finish_reason.<reason>``, e.g. ``{"calls": 3, ..., "finish_reason.length": 1,
"finish_reason.stop": 2}``.
"""
from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Any

FINISH_PREFIX = "finish_reason."
UNKNOWN_FINISH = "unknown"


@dataclass
class Usage:
    calls: int = 0
    cache_hits: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    retries: int = 0
    failures: int = 0
    finish_reasons: dict[str, int] = field(default_factory=dict)

    def add(self, other: Usage) -> None:
        for name in _COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for reason, n in other.finish_reasons.items():
            self.finish_reasons[reason] = self.finish_reasons.get(reason, 0) + n

    def minus(self, other: Usage) -> Usage:
        """What this total holds beyond ``other`` (an earlier snapshot of it)."""
        out = Usage(**{name: getattr(self, name) - getattr(other, name) for name in _COUNTERS})
        for reason, n in self.finish_reasons.items():
            if n - other.finish_reasons.get(reason, 0):
                out.finish_reasons[reason] = n - other.finish_reasons.get(reason, 0)
        return out

    def copy(self) -> Usage:
        return Usage(**{name: getattr(self, name) for name in _COUNTERS}, finish_reasons=dict(self.finish_reasons))

    def is_empty(self) -> bool:
        return not any(getattr(self, name) for name in _COUNTERS) and not self.finish_reasons

    def to_dict(self) -> dict[str, float]:
        d: dict[str, float] = {name: getattr(self, name) for name in _COUNTERS}
        d["latency_ms"] = round(self.latency_ms, 3)
        d.update({f"{FINISH_PREFIX}{r}": n for r, n in sorted(self.finish_reasons.items())})
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, float]) -> Usage:
        """The inverse of ``to_dict`` (unknown keys are ignored: records written by other versions)."""
        counters: dict[str, Any] = {name: d[name] for name in _COUNTERS if name in d}  # as written: ints, ms a float
        out = cls(**counters)
        out.finish_reasons = {k[len(FINISH_PREFIX):]: int(v) for k, v in d.items() if k.startswith(FINISH_PREFIX)}
        return out


_COUNTERS = tuple(f.name for f in fields(Usage) if f.name != "finish_reasons")


def finished(reason: str) -> dict[str, int]:
    """``finish_reasons`` of one answer."""
    return {reason or UNKNOWN_FINISH: 1}


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
    return {k: v.copy() for k, v in totals.items()}


def usage_delta(before: dict[str, Usage] | None) -> dict[str, Usage] | None:
    """What was spent since ``before`` (a ``usage_snapshot``), by purpose; None when nothing was."""
    after = usage_snapshot()
    if before is None or after is None:
        return None
    out: dict[str, Usage] = {}
    for purpose, now in after.items():
        diff = now.minus(before.get(purpose, Usage()))
        if not diff.is_empty():
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

    Keeps per-query tokens, finish reasons and failures (a degraded query stays degraded,
    ``evalkit.run.health``) independent of which variant happened to compute a shared node first.
    """
    for purpose, u in (delta or {}).items():
        record(purpose, Usage(calls=u.calls, cache_hits=u.calls, tokens_in=u.tokens_in, tokens_out=u.tokens_out,
                              retries=u.retries, failures=u.failures, finish_reasons=dict(u.finish_reasons)))
