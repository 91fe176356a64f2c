"""The shared state a graph runs over: its start, the view a node sees, and trace summaries.

The state is a plain dict whose fields are declared in :mod:`evalkit.graph.schema`. A
query starts with :func:`initial_state`; nodes add or replace fields by returning them
(the schema's reducers say how). A node never receives the dict itself but a
:class:`StateView`: read-only, limited to the fields the node declared, and recording
every field it reads (the key the work memo shares results under). The trace keeps a
compact form of every written value: ids and scores, never whole texts.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from evalkit.graph.memo import ABSENT, SharedRanking, inputs_digest
from evalkit.records import Hit

MAX_TRACE_ITEMS = 100  # enough to keep a whole top-100 channel ranking (fusion analysis reads it)
MAX_TRACE_CHARS = 160


def initial_state(query_id: str, question: str, lang: str, history: Sequence[Mapping[str, str]] = (),
                  tenant: str | None = None, attributes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The state one query starts from (the schema's ``INITIAL_FIELDS``)."""
    return {"query_id": query_id, "question": question, "lang": lang, "history": [dict(t) for t in history],
            "tenant": tenant, "attributes": dict(attributes or {}), "queries": [question], "attempt": 0}


class UndeclaredRead(KeyError):
    """A node read a field it did not declare (the engine turns it into a ``GraphError``)."""

    def __init__(self, field: str):
        super().__init__(field)
        self.field = field


class StateView(Mapping[str, Any]):
    """What a node sees of the state: only its declared fields, read-only, every read recorded.

    ``read`` maps each field the node looked at (by ``[]``, ``get``, ``in`` or iteration)
    to the value it saw, or ``ABSENT``. An undeclared read raises :class:`UndeclaredRead`
    and is remembered in ``violation``, so a node that catches every exception cannot hide it.
    """

    __slots__ = ("_state", "_allowed", "read", "violation", "_keys")

    def __init__(self, state: Mapping[str, Any], allowed: frozenset[str]):
        self._state = state
        self._allowed = allowed
        self.read: dict[str, Any] = {}
        self.violation: str | None = None  # the first undeclared field read (kept even if the node caught it)
        self._keys: dict[str, Any] = {}  # field -> exact key of its value when first read (see changed_in_place)

    def changed_in_place(self) -> str | None:
        """The first field the node read whose value has changed since (a list sorted in place...), or None.

        A node must return new values, never modify what it read: an in-place change would
        rewrite an earlier node's output (which metrics read) and, through the work memo, the
        inputs of other variants.
        """
        for key, before in self._keys.items():
            if before is not None and inputs_digest([(key, self.read[key])]) != before:
                return key
        return None

    def _see(self, key: str) -> Any:
        if key not in self._allowed:
            if self.violation is None:
                self.violation = key
            raise UndeclaredRead(key)
        value = self._state.get(key, ABSENT)
        name = str(key)  # plain names: digests do not depend on how the node spelled the key
        if name not in self._keys:
            self._keys[name] = inputs_digest([(name, value)])
        self.read[name] = value
        return value

    def __getitem__(self, key: str) -> Any:
        value = self._see(key)
        if value is ABSENT:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        value = self._see(key)
        return default if value is ABSENT else value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._see(key) is not ABSENT

    def __iter__(self) -> Iterator[str]:
        present = [k for k in sorted(self._allowed) if self._see(k) is not ABSENT]
        return iter(present)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def compact(value: Any) -> Any:
    """A small, JSON-friendly summary of a state value for the trace.

    Hits become ``[id, doc_id, score]`` triples (at most ``MAX_TRACE_ITEMS``), long
    strings are cut to ``MAX_TRACE_CHARS`` with their length noted, containers recurse.
    A ranking several variants share (:class:`~evalkit.graph.memo.SharedRanking`) is compacted
    once; every trace then holds the same frozen list.
    """
    if isinstance(value, Hit):
        return [value.id, value.doc_id, value.rounded]
    if isinstance(value, str):
        if len(value) <= MAX_TRACE_CHARS:
            return value
        return value[:MAX_TRACE_CHARS] + f"...({len(value)} chars)"
    if isinstance(value, dict):
        return {str(k): compact(v) for k, v in value.items()}
    if type(value) is SharedRanking:
        return value.compacted(_sequence)
    if isinstance(value, (list, tuple)):
        return _sequence(value)
    if isinstance(value, float):
        return round(value, 6)
    if value is None or isinstance(value, (bool, int)):
        return value
    return compact(str(value))


def _sequence(value: Sequence[Any]) -> Any:
    """:func:`compact` of a list or tuple: a ranking as triples, anything else item by item."""
    head = value[:MAX_TRACE_ITEMS]
    kinds = set(map(type, head))
    if head and kinds == {Hit}:  # a ranking: the common case, without a call per hit
        items = Hit.triples(head)
    elif kinds == {str} and max(map(len, head)) <= MAX_TRACE_CHARS:  # ids: kept as they are, without a call each
        items = list(head)
    else:
        items = [compact(v) for v in head]
    if len(value) > MAX_TRACE_ITEMS:
        return {"n": len(value), "first": items}
    return items
