"""``evalkit score --run`` on a TREC run read as columns: metrics over the whole run, record lines written whole.

:class:`RunRecords` builds each query's record as ``evalkit run`` does (a ``{doc_id, score}``
dict per ranked document, the metric functions called per query, the line written through
:func:`evalkit.redact.dumps_line`): at 10,000 queries x 100 documents that was ~2 s of a
~3.6 s ``score --run``, against pytrec_eval's ~1.3 s for everything (issue 34).
:class:`ColumnarRecords` gives the very same records and lines from a
:class:`~evalkit.runfile_columns.RunTable`:

* the metrics (recall, hit, precision, MRR, nDCG) are computed for every query at once in
  numpy, by the same arithmetic in the same order as :mod:`evalkit.metrics.retrieval`
  (counts divided as integers, nDCG's gains added rank by rank), so each value is the same
  float (:func:`run_metrics`);
* a ranking's JSON is put together from the JSON of each distinct document id (made once)
  and of each score (orjson's own text of the float), a chunk of queries at a time; the rest
  of a line is orjson's text of the record with a hole where each ranking goes, and the
  parts go to the file as they are (``writev``): the bytes ``dumps_line`` writes;
* the secret scan of :func:`evalkit.redact.dumps_line` runs on the parts instead of every
  line: the values of secret environment variables are looked for in each chunk of lines
  written, and the words that could start a secret (``redact._may_hold``) in the record's
  fixed skeleton, in each query's own strings and once in every distinct document id.
  Those parts are separated in a line by quotes and JSON punctuation, which no trigger
  word contains (``:`` only as ``://``, never followed by ``//`` between two values), and
  numbers hold none: a line holds a trigger only when one of its parts does. A query with
  any flagged part, or a chunk holding a secret's value, is written by the record-by-record
  path, exactly as before.

Whatever this module does not vouch for (another metric family, a gold set without a
positive grade, a value orjson would not write as ``json`` reads it) is built record by
record (:meth:`RunRecords.build`). ``tests/scoring/test_columnar.py`` compares every line
and the summary against that path.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import orjson

from evalkit import redact
from evalkit.graph.state import MAX_TRACE_CHARS, MAX_TRACE_ITEMS, compact
from evalkit.metrics import Scoring, parse_metric
from evalkit.records import EvalRecord, QueryResult
from evalkit.runfile_columns import RunTable
from evalkit.scoring.run_metrics import ideal_dcg, run_metrics
from evalkit.scoring.run_records import RunRecords, TableRankings

Buffer = bytes | memoryview  # a part of a line: the JSON of a chunk's rankings is cut without copies

CHUNK = 500  # queries whose lines are made, scanned and written together (~5 MB at 100 documents a query)


class ColumnarRecords(RunRecords):
    """The records of a run read as a :class:`RunTable` (no retrieval run): built on demand as
    :class:`RunRecords` builds them, or written whole, chunk by chunk (:meth:`write`)."""

    def __init__(self, name: str, records: Sequence[EvalRecord], rankings: TableRankings, metrics: Sequence[str],
                 scoring: Scoring, read_at: float):
        super().__init__(name, records, rankings, None, metrics, scoring, read_at)
        self.table = rankings.table
        self.rows = np.array([rankings.index.get(r.id, -1) for r in self.records], dtype=np.int64)

    def per_query_metrics(self) -> list[dict[str, Any]] | None:
        """Each record's ``metrics`` as :func:`evalkit.run.query.score_outputs` gives them, or None (see run_metrics)."""
        values = run_metrics(self.table, self.rows, self.records, self.metrics, self.scoring.relevance_level)
        if values is None:
            return None
        names = list(self.metrics)
        ndcg = [i for i, m in enumerate(names) if parse_metric(m).family == "ndcg"]
        memo: dict[tuple[int, ...], float] = {}
        out: list[dict[str, Any]] = []
        for i, record in enumerate(self.records):
            if not record.answerable:
                out.append({"degraded": 0.0})
                continue
            row = [v[i] for v in values]
            for m in ndcg:
                row[m] = row[m] / ideal_dcg(record.grades, parse_metric(names[m]).k, memo)
            scores: dict[str, Any] = dict(zip(names, row))
            scores["degraded"] = 0.0
            out.append(scores)
        return out

    def write(self, emit: Callable[[list[str], list[Buffer]], None],
              slow_line: Callable[[QueryResult], bytes], secrets: Sequence[str]) -> list[QueryResult] | None:
        """Every record's line, in order, ``emit(query ids, buffers)`` a chunk at a time (the buffers, one after
        the other, are the chunk's lines); the summary's view of each record.

        ``slow_line`` writes a record as the record-by-record path does (``dumps_line``, in UTF-8,
        newline included), for the queries whose parts a secret could hide in. None, having
        written nothing, when the metrics are not ones :func:`run_metrics` computes.
        """
        metrics = self.per_query_metrics()
        if metrics is None:
            return None
        parts = _Parts(self.table)
        # the fixed parts of every line: its keys, the metric names, the trace event
        blank = EvalRecord(id="", question="", relevant_doc_ids=(), type="", lang="")
        template = QueryResult(query_id="", question="", gold_doc_ids=[], retrieved=[], reranked=[], metrics={},
                               trace=[], outcome="completed").to_dict()
        skeleton = self._skeleton(template, blank, {**dict.fromkeys(self.metrics, 0.0), "degraded": 0.0})
        cut = '{"n":0,"first":[]}'  # the form of a trace's ids when cut (compact)
        clean = redact._plain_and_finite(self.event) and not redact._may_hold(skeleton.decode() + cut)
        views = []
        view_event = {**self.event, "wrote": {}}  # what the summary reads of the trace (no rankings)
        for start in range(0, len(self.records), CHUNK):
            stop = min(start + CHUNK, len(self.records))
            rankings, ids, odd = parts.chunk(self.rows[start:stop])
            lines: list[list[Buffer]] = []
            slow: list[int] = []
            for i in range(start, stop):
                record, scores = self.records[i], metrics[i]
                views.append(QueryResult(query_id=record.id, question=record.question,
                                         gold_doc_ids=list(record.relevant_doc_ids), retrieved=[], reranked=[],
                                         metrics=scores, trace=[view_event], outcome="completed",
                                         type=record.type, lang=record.lang))
                j = i - start
                if not clean or odd[j] or _may_hold_any(record):
                    slow.append(i)
                    lines.append([])
                    continue
                kept = ids[j]
                if kept is None:  # more than the trace keeps, or a long id: cut as the trace cuts it
                    kept = (orjson.dumps(compact(self.final[record.id].ids)),)
                try:
                    s0, s1, s2, s3, s4 = self._skeleton(template, record, scores).split(b"\0")
                except TypeError:  # orjson.JSONEncodeError: a lone surrogate, a subclass of str
                    slow.append(i)
                    lines.append([])
                    continue
                lines.append([s0, *rankings[j], s1, *rankings[j], s2, *kept, s3, *kept, s4 + b"\n"])
            if secrets and any(s.encode("utf-8", "surrogatepass") in b"".join(line) for line in lines
                               for s in secrets):
                slow = list(range(start, stop))  # as the record-by-record path: its lines are masked
            for i in slow:
                lines[i - start] = [slow_line(self.build(i))]
            emit([r.id for r in self.records[start:stop]], [b for line in lines for b in line])
        return views

    def _skeleton(self, template: dict[str, Any], record: EvalRecord, scores: dict[str, Any]) -> bytes:
        """The record's line as ``dumps_line`` writes it, a NUL byte where each of the rankings goes (twice
        the ranking, then twice the ids the trace event wrote): JSON text holds no NUL byte of its own (a NUL
        in a string is written ``\\u0000``), so splitting at them gives the five fixed parts of the line."""
        d = template.copy()
        hole = orjson.Fragment(b"\0")
        d.update(query_id=record.id, question=record.question, gold_doc_ids=list(record.relevant_doc_ids),
                 retrieved=hole, reranked=hole, metrics=scores,
                 trace=[{**self.event, "wrote": orjson.Fragment(b'{"retrieved":\0,"reranked":\0}')}],
                 type=record.type, lang=record.lang)
        return orjson.dumps(d)


class _Parts:
    """The JSON of a run's rankings, made a chunk of queries at a time from the JSON of each distinct document id."""

    def __init__(self, table: RunTable):
        self.table = table
        # copied to their size: orjson's bytes of a short string keep a ~4 KB buffer (50,000 ids: ~200 MB)
        id_json = [bytes(memoryview(orjson.dumps(d))) for d in table.doc_ids]
        # a ranking's entries: code c opens the list, code c + n (n distinct ids) follows an entry
        self.head = np.array([b'[{"doc_id":' + j + b',"score":' for j in id_json]
                             + [b'},{"doc_id":' + j + b',"score":' for j in id_json], dtype=object)
        self.head_len = np.array([len(j) + 20 for j in id_json] + [len(j) + 21 for j in id_json], dtype=np.int64)
        # a trace's list of ids, in the same way
        self.name = np.array([b"[" + j for j in id_json] + [b"," + j for j in id_json], dtype=object)
        self.name_len = np.array([len(j) + 1 for j in id_json] * 2, dtype=np.int64)
        self.long_id = np.array([len(d) > MAX_TRACE_CHARS for d in table.doc_ids], dtype=bool)
        self.flagged = _flagged_documents(table.doc_ids)

    def chunk(self, rows: np.ndarray) -> tuple[list[tuple[Buffer, ...]], list[tuple[Buffer, ...] | None], list[bool]]:
        """For the queries ``rows`` (-1: none), their rankings' JSON ``[{"doc_id", "score"} ...]``, their ids'
        JSON as the trace writes them (None: not kept whole, see compact), and whether a document id of theirs
        could hold a secret."""
        table, n_queries = self.table, len(rows)
        have = rows >= 0
        starts = np.where(have, table.bounds[np.maximum(rows, 0)], 0)
        lengths = np.where(have, table.bounds[np.maximum(rows, 0) + 1] - starts, 0)
        total = int(lengths.sum())
        if total == 0:
            return [(b"[]",)] * n_queries, [(b"[]",)] * n_queries, [False] * n_queries
        ends = np.cumsum(lengths)
        take = np.repeat(starts - (ends - lengths), lengths) + np.arange(total)
        codes = table.doc_codes[take]
        follows = np.ones(total, dtype=np.int64)
        follows[(ends - lengths)[lengths > 0]] = 0  # the first row of each query opens its list
        which = codes + len(table.doc_ids) * follows
        text = orjson.dumps(table.scores[take].tolist())  # orjson's text of each float, between commas
        commas = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == 0x2C)
        pieces = np.empty((total, 2), dtype=object)
        pieces[:, 0] = self.head[which]
        pieces[:, 1] = text[1:-1].split(b",")
        entries = b"".join(pieces.ravel().tolist())
        entry_end = np.cumsum(self.head_len[which] + np.diff(commas, prepend=0, append=len(text) - 1) - 1)
        names = b"".join(self.name[which].tolist())
        name_end = np.cumsum(self.name_len[which])
        query = np.repeat(np.arange(n_queries), lengths)
        kept_whole = (lengths <= MAX_TRACE_ITEMS) & (np.bincount(query[self.long_id[codes]], minlength=n_queries) == 0)
        odd = np.bincount(query[self.flagged[codes]], minlength=n_queries) > 0
        last = np.maximum(ends - 1, 0)
        before = np.where(ends - lengths > 0, ends - lengths - 1, 0)
        spans = zip(lengths.tolist(), np.where(ends > lengths, entry_end[before], 0).tolist(),
                    entry_end[last].tolist(), np.where(ends > lengths, name_end[before], 0).tolist(),
                    name_end[last].tolist(), kept_whole.tolist())
        entries_view, names_view = memoryview(entries), memoryview(names)
        rankings: list[tuple[Buffer, ...]] = []
        ids: list[tuple[Buffer, ...] | None] = []
        for n, a, b, c, d, whole in spans:
            if n == 0:
                rankings.append((b"[]",))
                ids.append((b"[]",))
                continue
            rankings.append((entries_view[a:b], b"}]"))
            ids.append((names_view[c:d], b"]") if whole else None)
        return rankings, ids, odd.tolist()


def _flagged_documents(doc_ids: list[str]) -> np.ndarray:
    """Per document code, whether its JSON holds a word a secret could start with."""
    flags = np.zeros(len(doc_ids), dtype=bool)
    if doc_ids and redact._may_hold(orjson.dumps(doc_ids).decode()):
        flags[:] = [redact._may_hold(orjson.dumps(d).decode()) for d in doc_ids]
    return flags


def _may_hold_any(record: EvalRecord) -> bool:
    """Whether the query's own strings (id, question, gold ids, type, lang) hold a word a secret could start with."""
    try:
        text = orjson.dumps([record.id, record.question, *record.relevant_doc_ids, record.type, record.lang])
    except TypeError:
        return True
    return redact._may_hold(text.decode())

