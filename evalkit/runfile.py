"""Ranked lists produced outside evalkit: TREC run files and JSONL rankings.

Two formats, chosen with ``run_format`` (default: from the file, see :func:`guess_format`):

* ``trec``: ``qid Q0 docid rank score tag``, whitespace-separated, one line per ranked
  document (what ``evalkit export --format trec``, Anserini, pyserini and ranx write).
  As in trec_eval, a query's documents are ordered by ``score`` descending, ties broken by
  document id descending; the ``rank`` column is not used. A document listed twice for one
  query, or two run tags in one file, is an error (trec_eval refuses the first; the second
  is two runs concatenated).
* ``jsonl``: one object per line, ``{"id": QID, "retrieved": [...]}`` where ``retrieved``
  is a list of document ids or of ``{"doc_id", "score"}`` objects, best first (the list
  order is the ranking; scores are kept, not used to re-sort). ``query_id`` is accepted for
  ``id``, so an evalkit ``per_query.jsonl`` is itself a valid run. A document that appears
  twice keeps its first rank (:func:`first_ranks`), as evalkit's own document-level rankings
  do (a ranking of passages mapped to their documents).

:func:`parse_ranked` itself keeps every entry, repeats included: a list of retrieved
passages names a document once per passage (two chunks of one document), and the answers
reader pairs those ids with the passages one to one (:mod:`evalkit.scoring.answers`).
Whatever ranks documents takes :func:`first_ranks` of it, so a repeated id still counts
once in a ranking metric, as in trec_eval.

Errors are :class:`~evalkit.errors.LocatedError` naming the file, the line and the field.
A query without lines in a TREC run simply retrieved nothing (trec_eval ``-c``
semantics: it scores 0); a JSONL query id listed twice is an error.
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import LocatedError
from evalkit.runfile_columns import RunTable, read_trec_columns, read_trec_table

RUN_FORMATS = ("trec", "jsonl")


@dataclass
class Ranking:
    """One query's ranked documents as read from a run file, with the line it started on.

    Kept as two parallel lists, best first (a million-line run as a million ``(doc, score)``
    tuples cost ~90 MB the records' own dicts could not reuse).
    """

    query_id: str
    line: int
    ids: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)

    @classmethod
    def of(cls, query_id: str, line: int, docs: Sequence[tuple[str, float]]) -> Ranking:
        """A ranking from ``(doc id, score)`` pairs, best first."""
        return cls(query_id, line, [d for d, _ in docs], [s for _, s in docs])

    @property
    def docs(self) -> list[tuple[str, float]]:
        """``(doc id, score)`` pairs, best first."""
        return list(zip(self.ids, self.scores))

    def doc_ids(self) -> list[str]:
        return list(self.ids)


def guess_format(path: Path) -> str:
    """``jsonl`` for ``.jsonl`` / ``.json`` / ``.ndjson`` files, else ``trec``."""
    return "jsonl" if {".jsonl", ".json", ".ndjson"} & {s.lower() for s in path.suffixes} else "trec"


def read_run(path: str | Path, run_format: str | None = None) -> dict[str, Ranking]:
    """Read a run file into ``{query id: Ranking}`` in file order (see the module docstring)."""
    path = Path(path)
    fmt = run_format or guess_format(path)
    if fmt not in RUN_FORMATS:
        raise LocatedError(str(path), "", f"unknown run format '{fmt}'; choose one of {', '.join(RUN_FORMATS)}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LocatedError(str(path), "", f"cannot read run file ({exc.strerror})") from exc
    if fmt == "trec":
        columns = read_trec_columns(data)  # a million lines in ~1 s; None: read line by line, which names a fault
        if columns is not None:
            return {qid: Ranking(qid, line, ids, scores) for qid, line, ids, scores in columns}
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LocatedError(str(path), "", f"not UTF-8 text (byte {exc.start})") from exc
    del data
    lines = text.splitlines()
    rankings = _read_trec(str(path), lines) if fmt == "trec" else _read_jsonl(str(path), lines)
    if not rankings:
        raise LocatedError(str(path), "", "the run file holds no ranking")
    return rankings


def read_run_table(path: str | Path, run_format: str | None = None) -> RunTable | None:
    """A TREC run as a :class:`RunTable` (columns, no Python object per line), or None: not a TREC run, or one
    the column reader does not vouch for (:func:`read_run` reads it line by line, naming any fault)."""
    path = Path(path)
    if (run_format or guess_format(path)) != "trec":
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None  # read_run says why
    return read_trec_table(data)


def _read_trec(file: str, lines: Sequence[str]) -> dict[str, Ranking]:
    pairs: dict[str, list[tuple[str, float]]] = {}
    first_line: dict[str, int] = {}
    seen: dict[tuple[str, str], int] = {}
    tag: tuple[str, int] | None = None
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        cols = line.split()
        if len(cols) != 6:
            if len(cols) == 4 and cols[3].lstrip("-").isdigit():
                raise LocatedError(file, "", "this looks like a qrels line (qid 0 docid rel); pass a run file "
                                   "(qid Q0 docid rank score tag)", line=n)
            raise LocatedError(file, "", f"expected 6 columns 'qid Q0 docid rank score tag', got {len(cols)}", line=n)
        qid, _, doc, _, score_text, run_tag = cols
        try:
            score = float(score_text)
        except ValueError:
            raise LocatedError(file, "score", f"column 5 must be a number, got {score_text!r}", line=n) from None
        if not math.isfinite(score):
            raise LocatedError(file, "score", f"column 5 must be a finite number, got {score_text!r}", line=n)
        if tag is None:
            tag = (run_tag, n)
        elif run_tag != tag[0]:
            raise LocatedError(file, "tag", f"a second run tag '{run_tag}' (line {tag[1]} has '{tag[0]}'): the file "
                               "holds two runs; score each from its own file", line=n)
        if (qid, doc) in seen:
            raise LocatedError(file, "docid", f"document '{doc}' is listed twice for query '{qid}' (first on line "
                               f"{seen[(qid, doc)]}); a run ranks each document once", line=n)
        seen[(qid, doc)] = n
        first_line.setdefault(qid, n)
        pairs.setdefault(qid, []).append((doc, score))
    out: dict[str, Ranking] = {}
    for qid, docs in pairs.items():  # trec_eval's order: score descending, then document id descending
        docs.sort(key=lambda d: d[0], reverse=True)
        docs.sort(key=lambda d: d[1], reverse=True)
        out[qid] = Ranking.of(qid, first_line[qid], docs)
    return out


def _read_jsonl(file: str, lines: Sequence[str]) -> dict[str, Ranking]:
    out: dict[str, Ranking] = {}
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LocatedError(file, "", f"not valid JSON ({exc.msg} at column {exc.colno})", line=n) from exc
        if not isinstance(obj, dict):
            raise LocatedError(file, "", "each line must be a JSON object {\"id\": ..., \"retrieved\": [...]}", line=n)
        qid = query_id_of(obj, file, n)
        if qid in out:
            raise LocatedError(file, "id", f"query '{qid}' is listed twice (first on line {out[qid].line})", line=n)
        if "retrieved" not in obj:
            raise LocatedError(file, "retrieved", "missing: give the ranked documents, [] for none", line=n)
        out[qid] = Ranking.of(qid, n, first_ranks(parse_ranked(obj["retrieved"], file, n)))
    return out


def query_id_of(obj: dict[str, Any], file: str, line: int) -> str:
    """The ``id`` (or ``query_id``) of a JSON line: a non-empty string or an integer."""
    ids = {k: obj[k] for k in ("id", "query_id") if k in obj}
    if not ids:
        raise LocatedError(file, "id", "missing: every line needs the query id", line=line)
    values = {str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in ids.values()}
    if len(values) > 1:
        raise LocatedError(file, "id", f"'id' and 'query_id' differ ({ids['id']!r} vs {ids['query_id']!r})", line=line)
    qid = values.pop()
    if not isinstance(qid, str) or not qid.strip():
        raise LocatedError(file, next(iter(ids)), f"expected a non-empty string, got {_show(qid)}", line=line)
    return qid


def parse_ranked(value: Any, file: str, line: int, where: str = "retrieved") -> list[tuple[str, float]]:
    """A ``retrieved`` list (ids or ``{doc_id, score}``) -> ``[(doc id, score)]``, every entry in order.

    Repeated ids are kept (one per passage of a list of passages); a ranking of documents
    is :func:`first_ranks` of the result.
    """
    if not isinstance(value, (list, tuple)):
        raise LocatedError(file, where, f"expected a list of document ids or {{doc_id, score}} objects, got "
                           f"{_show(value)}", line=line)
    out: list[tuple[str, float]] = []
    for i, item in enumerate(value):
        at = f"{where}[{i}]"
        if isinstance(item, dict):
            doc, score = item.get("doc_id", item.get("id")), item.get("score", 0.0)
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                raise LocatedError(file, f"{at}.score", f"expected a finite number, got {_show(score)}", line=line)
        else:
            doc, score = item, float(len(value) - i)
        if isinstance(doc, int) and not isinstance(doc, bool):
            doc = str(doc)
        if not isinstance(doc, str) or not doc.strip():
            raise LocatedError(file, at, f"expected a document id (a non-empty string) or {{doc_id, score}}, got "
                               f"{_show(item)}", line=line)
        out.append((doc, round(float(score), 6)))
    return out


def first_ranks(ranked: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """A document ranking from a list that may name a document more than once: each id at its first
    rank, with that rank's score (trec_eval counts a document once; evalkit's passage -> document
    rankings do the same)."""
    seen: set[str] = set()
    out = []
    for doc, score in ranked:
        if doc not in seen:
            seen.add(doc)
            out.append((doc, score))
    return out


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."
