"""The per-query records of a scored run, built one query at a time from its rankings (``evalkit score --run``).

:class:`RunRecords` builds a query's record as ``evalkit run`` writes one for a
retrieval-only variant: a ``{doc_id, score}`` dict per ranked document, the metrics from
:func:`evalkit.run.query.score_outputs`, one retriever trace event. A 10,000-query x
100-document run held as records is a million such dicts, ~250 MB the writer only
serialises once (issue 34): built as they are read, each query's entries live while its
line is written. :class:`TableRankings` reads the rankings of a run read as columns
(:class:`~evalkit.runfile_columns.RunTable`), one :class:`~evalkit.runfile.Ranking` when asked.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from copy import copy
from typing import Any

from evalkit.graph.state import compact
from evalkit.metrics import Scoring
from evalkit.records import EvalRecord, QueryResult
from evalkit.run.query import score_outputs
from evalkit.runfile import Ranking
from evalkit.runfile_columns import RunTable
from evalkit.scoring.scored import LazyRecords, scored_trace


class TableRankings(Mapping[str, Ranking]):
    """``{query id: Ranking}`` of a :class:`RunTable`, each ranking made when asked for (the record-by-record path)."""

    def __init__(self, table: RunTable):
        self.table = table
        self.index = {q: i for i, q in enumerate(table.query_ids)}

    def __getitem__(self, query_id: str) -> Ranking:
        i = self.index[query_id]
        s, e = int(self.table.bounds[i]), int(self.table.bounds[i + 1])
        ids = [self.table.doc_ids[c] for c in self.table.doc_codes[s:e].tolist()]
        return Ranking(query_id, self.table.first_lines[i], ids, self.table.scores[s:e].tolist())

    def __iter__(self) -> Iterator[str]:
        return iter(self.table.query_ids)

    def __len__(self) -> int:
        return len(self.table.query_ids)

    def __contains__(self, query_id: object) -> bool:
        return query_id in self.index


class RunRecords(LazyRecords):
    """The per-query records of a scored run, in eval-set order, built each time they are read.

    ``final`` / ``first``: the rankings of the run and of the retrieval run (``None``: the run
    is both stages, as a variant without reranker). A record is what ``evalkit run`` writes
    for a retrieval-only variant: its rankings, metrics and one retriever trace event.
    """

    def __init__(self, name: str, records: Sequence[EvalRecord], final: Mapping[str, Ranking],
                 first: Mapping[str, Ranking] | None, metrics: Sequence[str], scoring: Scoring, read_at: float):
        self.name, self.records, self.final, self.first = name, list(records), final, first
        self.metrics, self.scoring, self.read_at = tuple(metrics), scoring, read_at
        # every query's one trace event is this one but for what it wrote: made once, not 10,000 times (issue 34)
        self.event = scored_trace(name, {}, None, None, "retriever", read_at)[0]

    def __len__(self) -> int:
        return len(self.records)

    def build(self, index: int) -> QueryResult:
        record = self.records[index]
        ids, docs = entries(self.final.get(record.id))
        if self.first is None:  # one ranking for both stages: the same entries, ordered and scored once
            ids1, docs1 = ids, list(docs)
        else:
            ids1, docs1 = entries(self.first.get(record.id))
        scores, _ = score_outputs(record, docs1, docs, self.metrics, scoring=self.scoring)
        return QueryResult(
            query_id=record.id, question=record.question, gold_doc_ids=list(record.relevant_doc_ids), retrieved=docs1,
            reranked=docs, metrics=scores,
            trace=[{**self.event, "wrote": compact({"retrieved": ids1, "reranked": ids})}],
            outcome="completed", type=record.type, lang=record.lang)

    def summary_view(self, result: QueryResult) -> QueryResult:
        """The record without its rankings: the summary of a retrieval-only variant reads its metrics, trace,
        gold, type and usage (rankings are read only for the loop metrics of agentic nodes, which a run file
        has none of: its one trace event is a retriever's)."""
        view = copy(result)  # dataclasses.replace re-ran __init__ and fields(): ~0.1 s over 10,000 records
        view.retrieved, view.reranked = [], []
        return view


def entries(ranking: Ranking | None) -> tuple[list[str], list[dict[str, Any]]]:
    """A ranking's document ids and its record entries ``{doc_id, score}`` (none for a query the run lacks)."""
    if ranking is None:
        return [], []
    return ranking.ids, [{"doc_id": d, "score": s} for d, s in zip(ranking.ids, ranking.scores)]
