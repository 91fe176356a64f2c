"""What ``evalkit score`` hands from scoring to writing: :class:`Scored`, and the checks both scorers share.

A scored variant is its records plus where they came from. The records are a list
(:func:`evalkit.scoring.scorer.score_answers`) or :class:`LazyRecords`, records built one
at a time whenever they are read (:func:`evalkit.scoring.rankings.score_run`: a
10,000-query run's million ranking entries are never all held, issue 34). The helpers
here load the eval set with its corpus, refuse query ids the eval set lacks, and build
the one trace event of a scored query.
"""
from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from evalkit.errors import EvalkitError, LocatedError
from evalkit.evalsets import EvalSet, load_eval_set
from evalkit.graph.state import compact
from evalkit.index.corpus import Corpus
from evalkit.metrics import Scoring
from evalkit.records import EvalSetRef, QueryResult, TraceEvent
from evalkit.run.health import SCORED_EVENT

SHOW = 5  # ids listed in an error or notice before "... and N more"


class LazyRecords(Sequence[QueryResult]):
    """Per-query records built on demand, in eval-set order, each time they are read.

    A subclass says how to build the ``i``-th record (:meth:`build`) and which of a record's
    fields the variant's summary can go without (:meth:`summary_view`); the writer
    (:func:`evalkit.scoring.writing.write_scored`) writes each record as it is built and keeps
    only that view.
    """

    def __len__(self) -> int:
        raise NotImplementedError

    def build(self, index: int) -> QueryResult:
        """The ``index``-th record, built now."""
        raise NotImplementedError

    def summary_view(self, result: QueryResult) -> QueryResult:
        """What the summary of the variant reads of ``result`` (by default all of it)."""
        return result

    @overload
    def __getitem__(self, index: int) -> QueryResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[QueryResult]: ...

    def __getitem__(self, index: int | slice) -> QueryResult | list[QueryResult]:
        if isinstance(index, slice):
            return [self.build(i) for i in range(*index.indices(len(self)))]
        if not -len(self) <= index < len(self):
            raise IndexError(f"record {index} of {len(self)}")
        return self.build(index % len(self))

    def __iter__(self) -> Iterator[QueryResult]:
        return (self.build(i) for i in range(len(self)))


@dataclass
class Scored:
    """One scored variant before it is written: its records and where they came from."""

    name: str
    ref: EvalSetRef
    results: Sequence[QueryResult]  # a list, or LazyRecords (built as they are read)
    metrics: Sequence[str]
    source: dict[str, Any]
    judge: str | None = None
    notices: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what may make the numbers wrong (printed as warnings)
    scoring: Scoring = field(default_factory=Scoring)  # relevance level and tie order of the retrieval metrics


def eval_set_with_corpus(spec: str | Path | EvalSet) -> tuple[EvalSet, EvalSetRef]:
    """The eval set with its corpus loaded, and the reference the summary records (corpus path and hash included)."""
    es = spec if isinstance(spec, EvalSet) else load_eval_set(spec)
    if es.corpus is None:
        es = load_eval_set(f"{es.path}@v{es.version}")
    ref = es.ref()
    ref.corpus, ref.corpus_sha256 = str(es.corpus_path), corpus_of(es).sha256
    return es, ref


def corpus_of(es: EvalSet) -> Corpus:
    """The eval set's corpus (loaded by :func:`eval_set_with_corpus`), which document ids are checked against."""
    if es.corpus is None:
        raise EvalkitError(f"eval set {es.name} v{es.version} has no corpus loaded; load it with its corpus "
                           f"({es.corpus_path}): load_eval_set('{es.path}@v{es.version}')")
    return es.corpus


def listing(items: Sequence[str]) -> str:
    """The first :data:`SHOW` items, then how many more."""
    shown = ", ".join(items[:SHOW])
    return shown + (f" ... and {len(items) - SHOW} more" if len(items) > SHOW else "")


def refuse_unknown_ids(file: str, found: dict[str, int], es: EvalSet) -> None:
    """A query id (``{id: line}``) the eval set lacks is an error listing them: outputs are never dropped."""
    known = {r.id for r in es.records}
    unknown = [(q, n) for q, n in found.items() if q not in known]
    if unknown:
        raise LocatedError(file, "id", f"{len(unknown)} query id(s) are not in eval set {es.name} v{es.version}: "
                           + listing([f"'{q}' (line {n})" for q, n in unknown])
                           + "; score against the eval set these outputs were produced for", line=unknown[0][1])


def scored_trace(name: str, wrote: dict[str, Any], latency_ms: float | None, error: dict[str, Any] | None,
                 role: str = "generator", read_at: float | None = None) -> list[dict]:
    """The one trace event of a scored query: the user's system, as a node of its role.

    ``started_at`` is when evalkit read the output (``read_at``, default now): the system ran
    elsewhere, at a time the file does not say (0.0 dated every MLflow trace of a scored run
    1970-01-01, with no end time).
    """
    event = TraceEvent(step=0, node=name, type=SCORED_EVENT, started_at=time.time() if read_at is None else read_at,
                       duration_ms=latency_ms or 0.0, wrote=compact(wrote), edge=None if error else "end",
                       edge_reason="error" if error else "default", error=error, role=role)
    return [event.to_dict()]
