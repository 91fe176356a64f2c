"""Reading finished traces by role: what metrics, analysis and tracking ask of a query's record.

A trace event (``TraceEvent.to_dict()`` in ``per_query.jsonl``) names the node's ``role``;
results written before roles existed name only its ``type``, which is mapped to the role
its registered class declares. Everything that needs "the guard's decision" or "the
reranker's model" goes through these functions, never through ``type == "guard"``.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from evalkit.graph.schema import (
    GUARD_TRIGGERED,
    OUTCOME_EVIDENCE_FOUND,
    OUTCOME_NO_EVIDENCE,
    Role,
)

_ROLES = {r.value: r for r in Role}


def event_role(event: Mapping[str, Any]) -> Role | None:
    """The role of the node that produced ``event`` (None for an unknown, unregistered type)."""
    role = event.get("role")
    if role:
        if isinstance(role, Role):
            return role
        try:
            return _ROLES.get(role)  # Role(role) cost ~1 us an event, in every pass a summary makes over its traces
        except TypeError:  # unhashable: no role's value
            return None
    from evalkit.graph.node import node_types  # an event without its role (older records): the engine's registry

    cls = node_types().get(str(event.get("type")))
    return cls.role if cls is not None else None


def is_event(e: Any) -> bool:
    """Whether a trace entry is an event (a mapping): ``type(e) is dict`` first, as an event read from a record
    or made by a node is, since ``isinstance`` against the ``Mapping`` ABC cost ~0.5 us an entry in every pass
    a summary makes over 10,000 traces (issue 34)."""
    return type(e) is dict or isinstance(e, Mapping)


def events_of(trace: Iterable[Any], role: Role) -> Iterator[Mapping[str, Any]]:
    """The events of ``trace`` whose node has ``role``, in step order."""
    for e in trace:
        if is_event(e) and event_role(e) is role:
            yield e


def wrote(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """What an event wrote (``{}`` when absent or malformed)."""
    value = event.get("wrote")
    return value if isinstance(value, Mapping) else {}


def roles_in(trace: Iterable[Any]) -> set[Role]:
    """Every role that ran in a trace."""
    return {r for e in trace if is_event(e) and (r := event_role(e)) is not None}


def first_write(results: Sequence[Any], role: Role, field: str) -> Any:
    """The first value of ``field`` written by a node with ``role`` in any of ``results`` (None if none)."""
    for r in results:
        for e in events_of(r.trace, role):
            if wrote(e).get(field) is not None:
                return wrote(e)[field]
    return None


def guard_ran(result: Any) -> bool:
    """Whether a guard ran on this query (a guard event, or an outcome only a guard writes)."""
    return result.outcome in (OUTCOME_NO_EVIDENCE, OUTCOME_EVIDENCE_FOUND) or \
        any(True for _ in events_of(result.trace, Role.GUARD))


def guard_tripped(result: Any) -> bool:
    """Whether a guard stopped this query (later nodes may overwrite ``outcome``, e.g. a fallback)."""
    return result.outcome == OUTCOME_NO_EVIDENCE or \
        any(wrote(e).get(GUARD_TRIGGERED) is True for e in events_of(result.trace, Role.GUARD))
