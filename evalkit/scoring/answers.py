"""Answers produced outside evalkit: one row per query, read from JSONL, parquet or a datasets folder.

Fields of a row (``evalkit`` format; ``--map FIELD=COLUMN`` reads a field from another column):

| field | meaning |
|---|---|
| ``id`` | the query id (``query_id`` accepted); without it, rows are matched to the eval set by question |
| ``question`` | the question asked (required without an eval set; checked against it with one) |
| ``answer`` | the system's answer, a string (required unless ``error`` says the system failed) |
| ``contexts`` | the passages the system answered from (what the judge checks against): texts, or ``{doc_id, text}`` objects |
| ``retrieved`` | the system's ranking: document ids or ``{doc_id, score}``, best first (retrieval metrics; with an eval set, also the evidence when ``contexts`` is absent). Beside ``contexts``, one id per context (a document named once per passage of it, as ragas' ``retrieved_context_ids``): the ids of the contexts, and the ranking is each document at its first place |
| ``reference_answer`` | a reference answer (eval set value wins; a different one is an error) |
| ``reference_contexts`` / ``relevant_doc_ids`` | gold passages (texts) / gold document ids, without an eval set |
| ``type``, ``lang`` | question type (default ``single``) and language (default ``--lang``), without an eval set |
| ``abstained`` | the system's own refusal flag (default: detected from the answer text) |
| ``error`` | a message when the system failed on this query: recorded as a failed query |
| ``latency_ms`` | how long the system took; recorded as the query's latency |

Every row needs ``contexts`` or ``retrieved`` (an empty list when the system used no
evidence), so an answer is never judged against evidence it did not have by accident.

A ragas ``EvaluationDataset`` (``to_jsonl``, ``to_hf_dataset().save_to_disk``, or parquet)
is recognised by its ``user_input`` column and read with :data:`RAGAS_COLUMNS`.
Context texts get the id ``ctx-`` + 16 hex of their SHA-256, the id ``evalkit import
ragas`` gives them, so contexts match the documents of an eval set imported from ragas.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.errors import EvalkitError, LocatedError
from evalkit.evalsets import TYPES
from evalkit.evalsets.evalset import MAX_QUESTION_CHARS
from evalkit.evalsets.lang import record_lang
from evalkit.fileio import content_sha256
from evalkit.importers.dataset import ColumnMap, read_rows, resolve_columns
from evalkit.index.corpus import context_id
from evalkit.records import EvalRecord
from evalkit.run.query import Evidence
from evalkit.runfile import first_ranks, parse_ranked
from evalkit.text.abstention import detect_abstention as detect

if TYPE_CHECKING:
    from evalkit.records import EvalRecord
    from evalkit.run.query import Evidence

ANSWER_FIELDS = ("id", "query_id", "question", "answer", "contexts", "retrieved", "reference_answer",
                 "reference_contexts", "relevant_doc_ids", "type", "lang", "abstained", "error", "latency_ms")
RAGAS_COLUMNS: ColumnMap = {"question": "user_input", "answer": "response", "contexts": "retrieved_contexts",
                            "retrieved": "retrieved_context_ids", "reference_answer": "reference",
                            "reference_contexts": "reference_contexts", "relevant_doc_ids": "reference_context_ids"}
"""evalkit field -> ragas ``SingleTurnSample`` column (ragas 0.4)."""
ANSWER_FORMATS = ("auto", "evalkit", "ragas")

__all__ = ["ANSWER_FIELDS", "ANSWER_FORMATS", "RAGAS_COLUMNS", "AnswerRow", "AnswersFile", "answer_evidence",
           "content_sha256", "context_id", "context_ids", "passage_ids", "detect_abstention", "read_answers", "self_contained"]


def detect_abstention(answer: str) -> bool:
    """Whether an answer declines for lack of evidence, by the default rules of
    :func:`evalkit.text.abstention.detect_abstention` (an eval set's own patterns are
    applied when the answer is scored: :func:`evalkit.run.query.abstention_finding`)."""
    return detect(answer).abstained


@dataclass
class AnswerRow:
    """One row of an answers file, checked and typed; ``line`` is its line (or 1-based row)."""

    line: int
    id: str | None
    question: str | None
    answer: str
    contexts: list[tuple[str | None, str]] | None  # (document id when given, text)
    retrieved: list[tuple[str, float]] | None
    reference_answer: str | None = None
    gold: list[str] | None = None  # relevant_doc_ids, or the ids of reference_contexts
    type: str | None = None
    lang: str | None = None
    abstained: bool | None = None
    error: str | None = None
    latency_ms: float | None = None


@dataclass
class AnswersFile:
    """An answers file as read: where from, its content hash, the column map used, its rows."""

    label: str
    path: Path
    sha256: str
    columns: ColumnMap
    rows: list[AnswerRow]
    ragas: bool = False

    def where(self, field: str) -> str:
        """``field`` as an error names it: with the column it was read from when that differs."""
        col = self.columns.get(field, field)
        return field if col == field else f"{field} (column '{col}')"


def read_answers(source: str | Path, mapping: ColumnMap | None = None, answers_format: str = "auto",
                 split: str | None = None) -> AnswersFile:
    """Read and check every row of an answers file (see the module docstring); nothing is dropped."""
    if answers_format not in ANSWER_FORMATS:
        raise EvalkitError(f"unknown answers format '{answers_format}'; choose one of {', '.join(ANSWER_FORMATS)}")
    label, raw, columns = read_rows(source, split)
    ragas = answers_format == "ragas" or (answers_format == "auto" and "user_input" in columns
                                          and "question" not in columns)
    if ragas and "response" not in columns and "answer" not in (mapping or {}):
        raise LocatedError(label, "answer (column 'response')", "this ragas dataset has no 'response' column: it holds "
                           "eval data, not a system's answers; import it with `evalkit import ragas`, then score "
                           "answers against it with `evalkit score --answers FILE --eval-set NAME@v1`")
    preset = {k: v for k, v in RAGAS_COLUMNS.items() if v in columns or k in ("question", "answer")} if ragas else {}
    cols = resolve_columns(label, columns, {**preset, **(mapping or {})}, ANSWER_FIELDS, ("answer",))
    file = AnswersFile(label=label, path=Path(source), sha256=content_sha256(Path(source)), columns=cols, rows=[],
                       ragas=ragas)
    for n, row in raw:
        file.rows.append(_row(file, n, row))
    if not file.rows:
        raise LocatedError(label, "", "the answers file holds no rows")
    return file


def context_ids(row: AnswerRow, locate: Callable[[str], str | None] | None = None) -> list[str]:
    """The document id of each of ``row.contexts``, in order.

    The id the context gives, else the ``retrieved`` id at its position when the two lists
    have the same length (``retrieved`` keeps repeats: two passages of one document are two
    entries), else the corpus document its text was cut from (``locate``: an eval set's
    :class:`~evalkit.scoring.locate.CorpusLocator`), else its content id (``ctx-``...).
    """
    contexts = row.contexts or []
    paired = row.retrieved if row.retrieved is not None and len(row.retrieved) == len(contexts) else None
    out = []
    for i, (given, text) in enumerate(contexts):
        doc = given or (paired[i][0] if paired is not None else None) or (locate(text) if locate else None)
        out.append(doc or context_id(text))
    return out


def passage_ids(docs: list[str]) -> list[str]:
    """A passage id for each context of one answer, given their document ids in order.

    A document with one context is its own passage id (as before); a document with several
    gets ``DOC@1``, ``DOC@2``... in order, so each passage stays distinct (the judge checks a
    citation of ``DOC`` against all of them, as it does for a run's ``DOC#i`` chunks; ``@``
    never collides with evalkit's chunk ids).
    """
    counts: dict[str, int] = {}
    for d in docs:
        counts[d] = counts.get(d, 0) + 1
    seen: dict[str, int] = {}
    out = []
    for d in docs:
        seen[d] = seen.get(d, 0) + 1
        out.append(d if counts[d] == 1 else f"{d}@{seen[d]}")
    return out


def answer_evidence(row: AnswerRow, file: AnswersFile, corpus: Any, evidence_k: int,
                    locate: Callable[[str], str | None] | None = None) -> list[Evidence]:
    """The passages the answer is judged against: ``contexts``, else the top ``retrieved`` documents' texts.

    A context's document id is :func:`context_ids`'s and its passage id :func:`passage_ids`'s.
    Every non-empty context is kept, several of one document included: the judge and the
    citations see what the system saw (a citation of the document cites all its passages).
    """
    if row.contexts is not None:
        paired = row.retrieved if row.retrieved is not None and len(row.retrieved) == len(row.contexts) else None
        kept = [(i, text, doc) for i, ((_, text), doc) in enumerate(zip(row.contexts, context_ids(row, locate),
                                                                        strict=True)) if text.strip()]
        pids = passage_ids([doc for _, _, doc in kept])
        return [Evidence(pid, doc, text, paired[i][1] if paired and row.contexts[i][0] is None else 0.0)
                for (i, text, doc), pid in zip(kept, pids, strict=True)]
    if not row.retrieved:
        return []
    if corpus is None:
        raise LocatedError(file.label, file.where("retrieved"), "document ids alone need --eval-set (its corpus "
                           "holds their texts); without one give the passages as 'contexts'", line=row.line)
    out = []
    for doc, score in first_ranks(row.retrieved)[:evidence_k]:  # documents: each text once
        if doc not in corpus:
            raise LocatedError(file.label, file.where("retrieved"), f"document '{doc}' is not in the corpus, so its "
                               "text is unknown; give the passages as 'contexts'", line=row.line)
        out.append(Evidence(doc, doc, corpus.by_id[doc].text, score))
    return out


def self_contained(file: AnswersFile, lang: str) -> list[tuple[EvalRecord, AnswerRow]]:
    """Eval records built from the rows themselves (questions, gold, references inside the file)."""
    seen: dict[str, int] = {}
    pairs = []
    for row in file.rows:
        if row.question is None:
            raise LocatedError(file.label, file.where("question"), "missing: without --eval-set every row needs its "
                               "question", line=row.line)
        qid = row.id or f"row-{row.line:05d}"
        if qid in seen:
            raise LocatedError(file.label, file.where("id"), f"query '{qid}' is answered twice (first on line "
                               f"{seen[qid]}); keep one answer per query", line=row.line)
        seen[qid] = row.line
        qtype = row.type or ("single" if row.gold or row.gold is None else "unanswerable")
        if qtype not in TYPES:
            raise LocatedError(file.label, file.where("type"), f"unknown type {qtype!r}; valid: {', '.join(TYPES)}",
                               line=row.line)
        if qtype == "unanswerable" and row.gold:
            raise LocatedError(file.label, file.where("type"), "type 'unanswerable' but gold documents are given",
                               line=row.line)
        pairs.append((EvalRecord(id=qid, question=row.question, relevant_doc_ids=tuple(row.gold or ()), type=qtype,
                                 lang=row.lang or record_lang(lang, row.question),
                                 reference_answer=row.reference_answer), row))
    return pairs


def _row(file: AnswersFile, n: int, row: dict[str, Any]) -> AnswerRow:
    def get(f: str) -> Any:
        value: Any = row.get(file.columns[f]) if f in file.columns else None
        return value.tolist() if hasattr(value, "tolist") else value

    def fail(f: str, message: str) -> LocatedError:
        return LocatedError(file.label, file.where(f), message, line=n)

    qid = _ident(get("id"), "id", fail)
    alias = _ident(get("query_id"), "query_id", fail)
    if qid is not None and alias is not None and qid != alias:
        raise fail("id", f"'id' and 'query_id' differ ({qid!r} vs {alias!r})")
    error = _text(get("error"), "error", fail, allow_empty=True) or None
    answer = get("answer")
    if answer is None and error is None:
        raise fail("answer", "missing: give the system's answer (a string), or 'error' when the system failed")
    answer = _text(answer, "answer", fail, allow_empty=True) or ""  # None (an error row) -> ""
    contexts = _contexts(get("contexts"), fail)
    retrieved = None if get("retrieved") is None else parse_ranked(get("retrieved"), file.label, n,
                                                                   file.where("retrieved"))
    if contexts is None and retrieved is None and error is None:
        raise fail("contexts", "missing: give the passages the answer was written from as 'contexts' (texts) or "
                   "'retrieved' (document ids); an empty list when the system used none")
    gold = None
    if get("relevant_doc_ids") is not None:
        gold = [d for d, _ in first_ranks(parse_ranked(get("relevant_doc_ids"), file.label, n,
                                                        file.where("relevant_doc_ids")))]
    ref_contexts = _texts(get("reference_contexts"), "reference_contexts", fail)
    if ref_contexts is not None:
        ids = list(dict.fromkeys(context_id(t) for t in ref_contexts if t.strip()))
        if gold is not None and gold and ids and gold != ids:
            raise fail("reference_contexts", "both relevant_doc_ids and reference_contexts are given; keep one")
        gold = gold or ids
    abstained = get("abstained")
    if abstained is not None and not isinstance(abstained, bool):
        raise fail("abstained", f"expected true or false, got {abstained!r}")
    latency = get("latency_ms")
    if latency is not None and (isinstance(latency, bool) or not isinstance(latency, (int, float))
                                or not math.isfinite(latency) or latency < 0):
        raise fail("latency_ms", f"expected a non-negative number of milliseconds, got {latency!r}")
    question = _text(get("question"), "question", fail)
    if question is not None and len(question) > MAX_QUESTION_CHARS:  # the eval set's cap (a pasted document)
        raise fail("question", f"{len(question):,} characters, more than the {MAX_QUESTION_CHARS:,} a question may "
                   f"have (row '{qid or alias}'); a question this long is usually a pasted document: shorten it")
    return AnswerRow(line=n, id=qid or alias, question=question, answer=answer,
                     contexts=contexts, retrieved=retrieved,
                     reference_answer=_text(get("reference_answer"), "reference_answer", fail, allow_empty=True) or None,
                     gold=gold, type=_text(get("type"), "type", fail), lang=_text(get("lang"), "lang", fail),
                     abstained=abstained, error=error, latency_ms=None if latency is None else float(latency))


def _ident(value: Any, field: str, fail: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise fail(field, f"expected a non-empty string or an integer, got {value!r}")
    return value.strip()


def _text(value: Any, field: str, fail: Any, allow_empty: bool = False) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise fail(field, f"expected a {'' if allow_empty else 'non-empty '}string, got {_short(value)}")
    return value


def _contexts(value: Any, fail: Any) -> list[tuple[str | None, str]] | None:
    """``contexts`` as ``(doc id or None, text)``: a list of texts or of ``{doc_id (or id), text}`` objects."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise fail("contexts", f"expected a list of texts or {{doc_id, text}} objects, got {_short(value)}")
    out: list[tuple[str | None, str]] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            out.append((None, item))
            continue
        doc = item.get("doc_id", item.get("id")) if isinstance(item, dict) else None
        text = item.get("text") if isinstance(item, dict) else None
        if not isinstance(text, str) or (doc is not None and (not isinstance(doc, str) or not doc.strip())):
            raise fail("contexts", f"item {i}: expected a text or {{doc_id, text}} with a string text, got "
                       f"{_short(item)}")
        out.append((doc, text))
    return out


def _texts(value: Any, field: str, fail: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, str) for t in value):
        raise fail(field, f"expected a list of texts, got {_short(value)}")
    return list(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
