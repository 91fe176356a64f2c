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
  wrote (an external run's ``retrieved`` and ``reranked`` ids) held once;
* every other field as written.

About 15 KB a record. Sharing the document ids (:func:`sys.intern`, ~6 KB less a record) was
measured and left out: ~0.25 us an id, 4 s of CPU on 8 x 10,000 records in compare + report
(docs/benchmarks.md). The lists and dicts are shared, so they must be read, not changed (as
``LoadedRun.results`` already asks). Everything else that reads records (``evalkit.results``,
``export``, ``calibrate``, ``label``) reads them whole (:data:`WHOLE`). A field of an
unexpected type is left as it is, so a damaged record is refused exactly as when read whole
(file, line and what is wrong).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ANALYSIS", "ANALYSIS_DEPTH", "RANKINGS", "WHOLE", "RecordView"]

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
        return record


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


WHOLE = RecordView()
"""Records exactly as parsed."""
ANALYSIS = RecordView(ranking_depth=ANALYSIS_DEPTH)
"""What ``evalkit compare``, ``gate`` and ``report`` keep (see the module docstring)."""
