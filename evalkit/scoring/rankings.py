"""``evalkit score --run``: ranked lists produced elsewhere (:mod:`evalkit.runfile`), scored against a frozen eval set.

Every per-query number comes from :func:`evalkit.run.query.score_outputs`, the function
``evalkit run`` scores its graphs' outputs with. The checks come first, before any record
is built: a query id the eval set lacks is an error listing them (never dropped), a run
none of whose documents is in the corpus is refused, and eval-set queries the run lacks
are scored as an empty ranking (trec_eval ``-c``) and announced.

The records are :class:`~evalkit.scoring.run_records.RunRecords`, built one query at a
time whenever they are read (:mod:`evalkit.scoring.run_records`), or, for a TREC run the
column reader reads, :class:`~evalkit.scoring.columnar.ColumnarRecords`: the same records,
their metrics computed over the whole run and their lines written whole (issue 34).
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from evalkit.errors import LocatedError
from evalkit.evalsets import EvalSet
from evalkit.fileio import content_sha256
from evalkit.metrics import DEFAULT_METRICS, Scoring, parse_metric
from evalkit.runfile import Ranking, read_run, read_run_table
from evalkit.runstore import long_lived_frozen
from evalkit.scoring.columnar import ColumnarRecords
from evalkit.scoring.run_records import RunRecords, TableRankings
from evalkit.scoring.scored import (
    Scored,
    corpus_of,
    eval_set_with_corpus,
    listing,
    refuse_unknown_ids,
)

__all__ = ["RunRecords", "TableRankings", "doc_id_check", "first_lines", "score_run"]


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
        table = read_run_table(run, run_format) if retrieval_run is None else None
        final: Mapping[str, Ranking] = TableRankings(table) if table is not None else read_run(run, run_format)
        read_at = time.time()  # every record's trace says when evalkit read the run
        keep()
        first = read_run(retrieval_run, run_format) if retrieval_run else None
    notices = []
    for path, rankings in ((run, final), (retrieval_run, first)):
        if rankings is not None:
            refuse_unknown_ids(str(path), first_lines(rankings), es)
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
    records: RunRecords
    if isinstance(final, TableRankings):  # no Python object per ranked document (evalkit.scoring.columnar)
        records = ColumnarRecords(name, es.records, final, metrics, scoring, read_at)
    else:
        records = RunRecords(name, es.records, final, first, metrics, scoring, read_at)
    return Scored(name=name, ref=ref, results=records, metrics=metrics, source=source, notices=notices,
                  scoring=scoring)


def first_lines(rankings: Mapping[str, Ranking]) -> dict[str, int]:
    """``{query id: the line its ranking starts on}``."""
    if isinstance(rankings, TableRankings):
        return dict(zip(rankings.table.query_ids, rankings.table.first_lines))
    return {q: r.line for q, r in rankings.items()}


def doc_id_check(file: str, rankings: Mapping[str, Ranking], es: EvalSet) -> list[str]:
    """Refuse a run none of whose documents is in the corpus (another id scheme); count strays."""
    corpus = corpus_of(es)
    if isinstance(rankings, TableRankings):
        ids = set(rankings.table.doc_ids)  # the distinct ids the column reader found
    else:
        ids = set().union(*(r.ids for r in rankings.values()))  # one C-level pass over a million ids
    stray = sorted(ids.difference(corpus.by_id))  # one C-level pass (corpus.__contains__ is a Python call an id)
    if ids and len(stray) == len(ids):
        corpus_ids = [d.id for d in corpus.documents[:3]]
        raise LocatedError(file, "docid", f"none of the {len(ids)} document ids is in the corpus of {es.name} "
                           f"({es.corpus_path}): the run uses other ids (e.g. '{stray[0]}'; the corpus has "
                           f"{', '.join(repr(c) for c in corpus_ids)}...)")
    if stray:
        return [f"{len(stray)} document id(s) in {file} are not in the corpus (never relevant): {listing(stray)}"]
    return []
