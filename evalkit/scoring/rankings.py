"""``evalkit score --run``: ranked lists produced elsewhere (:mod:`evalkit.runfile`), scored against a frozen eval set.

Every per-query number comes from :func:`evalkit.run.query.score_outputs`, the function
``evalkit run`` scores its graphs' outputs with. The checks come first, before any record
is built: a query id the eval set lacks is an error listing them (never dropped), a run
none of whose documents is in the corpus is refused, and eval-set queries the run lacks
are scored as an empty ranking (trec_eval ``-c``) and announced.

The records are :class:`RunRecords`: built one query at a time whenever they are read, from
the rankings as read (two lists a query). A 10,000-query x 100-document run held as
records is a million ``{doc_id, score}`` dicts, ~250 MB that the writer only serialises
once (issue 34); streamed, each query's entries live while its line is written.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from copy import copy
from pathlib import Path
from typing import Any

from evalkit.errors import LocatedError
from evalkit.evalsets import EvalSet
from evalkit.fileio import content_sha256
from evalkit.graph.state import compact
from evalkit.metrics import DEFAULT_METRICS, Scoring, parse_metric
from evalkit.records import EvalRecord, QueryResult
from evalkit.run.query import score_outputs
from evalkit.runfile import Ranking, read_run
from evalkit.runstore import long_lived_frozen
from evalkit.scoring.scored import (
    LazyRecords,
    Scored,
    corpus_of,
    eval_set_with_corpus,
    listing,
    refuse_unknown_ids,
    scored_trace,
)


def score_run(run: str | Path, eval_set: str | Path | EvalSet, name: str, *, run_format: str | None = None,
              retrieval_run: str | Path | None = None, metrics: Sequence[str] | None = None,
              scoring: Scoring | None = None) -> Scored:
    """Score a run file (the final ranking; ``retrieval_run``: the first-stage one, default the same);
    ``scoring``: relevance level and tie order, as ``evalkit run --relevance-level / --ties``."""
    metrics = tuple(metrics or DEFAULT_METRICS)
    for m in metrics:
        parse_metric(m)
    with long_lived_frozen() as keep:  # each collection while reading walks neither the corpus nor the rankings
        es, ref = eval_set_with_corpus(eval_set)
        keep()
        final = read_run(run, run_format)
        read_at = time.time()  # every record's trace says when evalkit read the run
        keep()
        first = read_run(retrieval_run, run_format) if retrieval_run else None
    notices = []
    for path, rankings in ((run, final), (retrieval_run, first)):
        if rankings is not None:
            refuse_unknown_ids(str(path), {q: r.line for q, r in rankings.items()}, es)
            notices += doc_id_check(str(path), rankings, es)
    missing = [r.id for r in es.records if r.id not in final]
    if missing:
        notices.append(f"{len(missing)} of {len(es.records)} eval-set queries have no line in {run}: scored as empty "
                       f"rankings (0), as trec_eval -c does: {listing(missing)}")
    source = {"kind": "run", "format": run_format or "auto", "file": str(Path(run).resolve()),
              "sha256": content_sha256(Path(run))}
    if retrieval_run:
        source.update(retrieval_file=str(Path(retrieval_run).resolve()),
                      retrieval_sha256=content_sha256(Path(retrieval_run)))
    scoring = scoring or Scoring()
    records = RunRecords(name, es.records, final, first, metrics, scoring, read_at)
    return Scored(name=name, ref=ref, results=records, metrics=metrics, source=source, notices=notices,
                  scoring=scoring)


class RunRecords(LazyRecords):
    """The per-query records of a scored run, in eval-set order, built each time they are read.

    ``final`` / ``first``: the rankings of the run and of the retrieval run (``None``: the run
    is both stages, as a variant without reranker). A record is what ``evalkit run`` writes
    for a retrieval-only variant: its rankings, metrics and one retriever trace event.
    """

    def __init__(self, name: str, records: Sequence[EvalRecord], final: dict[str, Ranking],
                 first: dict[str, Ranking] | None, metrics: Sequence[str], scoring: Scoring, read_at: float):
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


def doc_id_check(file: str, rankings: dict[str, Ranking], es: EvalSet) -> list[str]:
    """Refuse a run none of whose documents is in the corpus (another id scheme); count strays."""
    corpus = corpus_of(es)
    ids = set().union(*(r.ids for r in rankings.values()))  # one C-level pass over a million ids
    stray = sorted(d for d in ids if d not in corpus)
    if ids and len(stray) == len(ids):
        corpus_ids = [d.id for d in corpus.documents[:3]]
        raise LocatedError(file, "docid", f"none of the {len(ids)} document ids is in the corpus of {es.name} "
                           f"({es.corpus_path}): the run uses other ids (e.g. '{stray[0]}'; the corpus has "
                           f"{', '.join(repr(c) for c in corpus_ids)}...)")
    if stray:
        return [f"{len(stray)} document id(s) in {file} are not in the corpus (never relevant): {listing(stray)}"]
    return []
