"""The shared state a graph runs over, and how its values are summarised in traces.

The state is a plain dict. A query starts with the fields in ``INITIAL_FIELDS``; nodes
add or replace fields by returning them. The trace keeps a compact form of every
written value: ids and scores, never whole texts.
"""
from __future__ import annotations

from typing import Any

from evalkit.records import Hit

# Fields every query starts with; node ``reads`` may name these without a writer.
INITIAL_FIELDS: dict[str, str] = {
    "query_id": "id of the eval-set record",
    "question": "the user's original question; no node may overwrite it",
    "lang": "language of the question (zh, en, ...)",
    "queries": "the queries retrieval runs (starts as [question]; rewrite nodes replace it)",
    "attempt": "reflection-loop attempt: 0 until a query_rewrite node runs (each run sets previous + 1)",
}

MAX_TRACE_ITEMS = 100  # enough to keep a whole top-100 channel ranking (fusion analysis reads it)
MAX_TRACE_CHARS = 160


def initial_state(query_id: str, question: str, lang: str) -> dict[str, Any]:
    """The state one query starts from."""
    return {"query_id": query_id, "question": question, "lang": lang, "queries": [question], "attempt": 0}


def compact(value: Any) -> Any:
    """A small, JSON-friendly summary of a state value for the trace.

    Hits become ``[id, doc_id, score]`` triples (at most ``MAX_TRACE_ITEMS``), long
    strings are cut to ``MAX_TRACE_CHARS`` with their length noted, containers recurse.
    """
    if isinstance(value, Hit):
        return [value.id, value.doc_id, round(float(value.score), 6)]
    if isinstance(value, str):
        if len(value) <= MAX_TRACE_CHARS:
            return value
        return value[:MAX_TRACE_CHARS] + f"...({len(value)} chars)"
    if isinstance(value, dict):
        return {str(k): compact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [compact(v) for v in value[:MAX_TRACE_ITEMS]]
        if len(value) > MAX_TRACE_ITEMS:
            return {"n": len(value), "first": items}
        return items
    if isinstance(value, float):
        return round(value, 6)
    if value is None or isinstance(value, (bool, int)):
        return value
    return compact(str(value))
