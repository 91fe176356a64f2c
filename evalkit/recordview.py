"""What ``compare``, ``gate`` and ``report`` keep of each per-query record they read (issue 34).

These commands hold every record of every variant they analyse to the end. Parsed whole, a
record with 100-document rankings is ~70 KB (200 ranking dicts, 300 document-id strings): 8
variants x 10,000 queries took 6.4 GB. Their statistics read the per-query metrics the run
recorded (never recomputed from the rankings), and their views read rankings to a fixed depth.
So :data:`ANALYSIS` keeps, of each record as it is parsed (one line at a time: a variant's
whole records are never held together):

* ``retrieved`` and ``reranked`` cut to their first :data:`ANALYSIS_DEPTH` documents, the
  deepest any analysis view reads (the report's funnel "gold in retrieval top 20", the fusion
  and per-tool diagnostics' top 20, every "final top 5"; tests/analysis/test_reading.py
  checks those depths against it); a ``reranked`` equal to ``retrieved`` becomes that list;
* the trace whole (the report shows the worst queries' traces with everything each node
  wrote, the fusion diagnostics re-fuse the channel rankings), two equal lists one trace event
  wrote (an external run's ``retrieved`` and ``reranked`` ids) held once; and, of a line orjson
  read, each large value a trace event wrote (a list of more than :data:`ANALYSIS_DEPTH` items,
  or a mapping holding one: the retrieve node's ``retrieved`` and ``channel_hits``) held as the
  JSON bytes orjson writes of it, parsed again each time it is read (:class:`CompactWrote`);
* every other field as written.

Held with the trace whole, a hybrid retriever's record took ~79 KB in memory, ~68 KB of it the trace's
lists (8 variants x 10,000 queries: 7.8 GB in ``compare`` and ``report``); held as bytes those take
~10 KB, reading them back costs ~25 us a record (the fusion diagnostics' passes), writing them ~10 us.
orjson writes back exactly what it read (finite floats, 64-bit integers, strings, key order), which is
why only its lines are held so: a line ``json`` read (NaN, an integer past 64 bits) keeps its values as
parsed. Sharing the document ids (:func:`sys.intern`, ~6 KB less a record) was measured and left out: ~0.25 us an id, 4 s of CPU on 8 x 10,000 records in compare + report
(docs/benchmarks.md). The lists and dicts are shared, so they must be read, not changed (as
``LoadedRun.results`` already asks). Everything else that reads records (``evalkit.results``,
``export``, ``calibrate``, ``label``) reads them whole (:data:`WHOLE`). A field of an
unexpected type is left as it is, so a damaged record is refused exactly as when read whole
(file, line and what is wrong).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["ANALYSIS", "ANALYSIS_DEPTH", "RANKINGS", "WHOLE", "CompactWrote", "RecordView", "as_parsed"]

ANALYSIS_DEPTH = 20
"""Documents of each ranking the analysis commands keep: the deepest prefix any of their views reads."""
RANKINGS = ("retrieved", "reranked")
"""The document rankings of a per-query record (``QueryResult``), cut to the view's depth."""


@dataclass(frozen=True)
class RecordView:
    """What a :class:`evalkit.analysis.runs.LoadedRun` keeps of each per-query record it reads.

    ``ranking_depth``: documents kept of each of :data:`RANKINGS`, equal lists held once (None:
    records exactly as parsed).
    """

    ranking_depth: int | None = None

    @property
    def whole(self) -> bool:
        """Whether records are kept exactly as parsed."""
        return self.ranking_depth is None

    def keep(self, record: dict[str, Any]) -> dict[str, Any]:
        """What is kept of ``record`` (a parsed ``per_query.jsonl`` line), changed in place and returned."""
        return self._keep(record, compact=False)

    def keep_compact(self, record: dict[str, Any]) -> dict[str, Any]:
        """:meth:`keep`, and the trace's large values held as bytes: for a line orjson read, which it writes back
        exactly (see the module docstring)."""
        return self._keep(record, compact=True)

    def _keep(self, record: dict[str, Any], compact: bool) -> dict[str, Any]:
        if self.ranking_depth is None:
            return record
        for key in RANKINGS:
            ranking = record.get(key)
            if type(ranking) is list and len(ranking) > self.ranking_depth:
                record[key] = ranking[:self.ranking_depth]
        if type(record.get("reranked")) is list and record["reranked"] == record.get("retrieved"):
            record["reranked"] = record["retrieved"]
        trace = record.get("trace")
        for event in trace if type(trace) is list else ():
            if type(event) is dict and type(wrote := event.get("wrote")) is dict:
                _share_equal_lists(wrote)
                if compact and any(_large(v, self.ranking_depth) for v in wrote.values()):
                    event["wrote"] = CompactWrote(wrote, self.ranking_depth)
        return record


def _large(value: Any, depth: int) -> bool:
    """A list of more than ``depth`` items, or a mapping with one among its values."""
    if type(value) is list:
        return len(value) > depth
    return type(value) is dict and any(type(v) is list and len(v) > depth for v in value.values())


class CompactWrote(Mapping[str, Any]):
    """What one trace event wrote, each large value (:func:`_large`) held as orjson's bytes of it and parsed again
    each time it is read: the mapping read whole (``dict(w)``, ``json.dumps(dict(w))``) is the one parsed, in
    its key order. Read it, do not change it (as every held record)."""

    __slots__ = ("_items",)

    def __init__(self, wrote: dict[str, Any], depth: int) -> None:
        held: dict[int, bytes] = {}  # each list once (equal lists were made one by _share_equal_lists)
        for v in wrote.values():
            if id(v) not in held and _large(v, depth):
                held[id(v)] = bytes(memoryview(orjson.dumps(v)))  # a copy of its size: orjson's buffer is ~5x it
        self._items = {k: held.get(id(v), v) for k, v in wrote.items()}

    @classmethod
    def of_held(cls, items: dict[str, Any]) -> CompactWrote:
        """The mapping whose items are ``items`` as :meth:`held_items` gave them (a bytes value is held JSON):
        how :mod:`evalkit.viewfile` rebuilds one from a view file."""
        made = cls.__new__(cls)
        made._items = items
        return made

    def held_items(self) -> Iterator[tuple[str, Any]]:
        """The items as held: a large value as its JSON bytes (for :mod:`evalkit.viewfile` to store)."""
        return iter(self._items.items())

    def __getitem__(self, key: str) -> Any:
        value = self._items[key]
        return orjson.loads(value) if type(value) is bytes else value  # a parsed JSON value is never bytes

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __repr__(self) -> str:
        return f"CompactWrote({dict(self)!r})"


def _share_equal_lists(wrote: dict[str, Any]) -> None:
    """In what one trace event wrote, a list equal to an earlier one becomes that list."""
    lists: list[list[Any]] = []
    for key, value in wrote.items():
        if type(value) is list:
            same = next((seen for seen in lists if seen == value), None)
            if same is None:
                lists.append(value)
            else:
                wrote[key] = same


def as_parsed(value: Any) -> Any:
    """``value`` as it was parsed: a :class:`CompactWrote` read whole into a dict, anything else as it is
    (for what writes a trace event out again, such as the report's trace tables)."""
    return dict(value) if type(value) is CompactWrote else value


WHOLE = RecordView()
"""Records exactly as parsed."""
ANALYSIS = RecordView(ranking_depth=ANALYSIS_DEPTH)
"""What ``evalkit compare``, ``gate`` and ``report`` keep (see the module docstring)."""
