"""``evalkit score --answers``: answers produced elsewhere, judged and scored as ``evalkit run`` scores its own.

:func:`score_answers` scores answers (:mod:`evalkit.scoring.answers`), against an eval set
or self-contained. Every per-query number comes from :func:`evalkit.run.query.score_outputs`,
the function ``evalkit run`` scores its graphs' outputs with. Rankings (``--run``) are
scored by :mod:`evalkit.scoring.rankings`; both are written by :mod:`evalkit.scoring.writing`
(whose names this module still offers, as before the split).

Checks that keep a score honest: a query id the eval set lacks is an error listing them
(never dropped), a query id given twice is an error, a question that differs from the
eval set's is an error; eval-set queries the file lacks are recorded as failed queries
(no answer is a miss, and ``gate`` refuses failures by default; ``--unanswered skip``
scores a partial file on the queries it answers instead), and announced.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError, LocatedError
from evalkit.evalsets import EvalSet
from evalkit.judges import make_judge
from evalkit.llm.usage import usage_scope
from evalkit.metrics import DEFAULT_METRICS, Scoring, parse_metric
from evalkit.nodes.generate import parse_citations
from evalkit.records import EvalRecord, EvalSetRef, QueryResult
from evalkit.run.health import UNUSABLE_ANSWERS, degradations
from evalkit.run.query import Answer, abstention_finding, score_outputs
from evalkit.runfile import first_ranks
from evalkit.scoring.answers import (
    AnswerRow,
    AnswersFile,
    answer_evidence,
    context_ids,
    read_answers,
    self_contained,
)
from evalkit.scoring.locate import CorpusLocator
from evalkit.scoring.rankings import score_run
from evalkit.scoring.scored import Scored, eval_set_with_corpus, listing, refuse_unknown_ids, scored_trace
from evalkit.scoring.writing import write_scored

__all__ = ["CITE_BY", "UNANSWERED", "Scored", "score_answers", "score_run", "write_scored"]

CITE_BY = ("id", "position")


def score_answers(answers: str | Path | AnswersFile, name: str, *, eval_set: str | Path | EvalSet | None = None,
                  judge: str | Any = "offline", judge_options: dict[str, Any] | None = None,
                  metrics: Sequence[str] | None = None, mapping: dict[str, str] | None = None,
                  answers_format: str = "auto", split: str | None = None, evidence_k: int = 5,
                  cite_by: str = "id", lang: str = "auto", cache_root: Path | None = None,
                  scoring: Scoring | None = None, unanswered: str = "failed") -> Scored:
    """Judge and score a file of answers (see :mod:`evalkit.scoring.answers`); ``eval_set`` optional.

    ``judge`` is a registered judge's name (built with ``judge_options``), or a judge
    ``make_judge`` already built (the integrations score row by row with one judge).
    ``unanswered``: eval-set queries the file has no line for are recorded as ``failed``
    queries (a miss that ``gate`` refuses), or ``skip``-ped (a partial file scored on the
    queries it answers; the notice says how many of the eval set's).
    """
    if cite_by not in CITE_BY:
        raise EvalkitError(f"unknown citation style '{cite_by}'; choose one of {', '.join(CITE_BY)}")
    if unanswered not in UNANSWERED:
        raise EvalkitError(f"unknown unanswered policy '{unanswered}'; choose one of {', '.join(UNANSWERED)}")
    metrics = tuple(metrics or DEFAULT_METRICS)
    for m in metrics:
        parse_metric(m)
    file = answers if isinstance(answers, AnswersFile) else read_answers(answers, mapping, answers_format, split)
    if eval_set is not None:
        es, ref = eval_set_with_corpus(eval_set)
        pairs, missing = _match(file, es)
        corpus = es.corpus
    else:
        es, corpus, missing = None, None, []
        pairs = self_contained(file, lang)
        ref = EvalSetRef(name=f"answers-{file.sha256[:12]}", version=0, sha256=file.sha256, n_queries=len(pairs),
                         path=str(Path(file.path).resolve()), kind="answers_file")
    locate = CorpusLocator(corpus).doc_of if corpus is not None else None  # contexts given as texts only
    ranked = _ranking_source(file, corpus, [r for r, _ in pairs], locate)
    if cache_root is None:
        from evalkit.cachestore import default_cache_root

        cache_root = default_cache_root()
    the_judge = make_judge(judge, cache_root=cache_root, **(judge_options or {})) if isinstance(judge, str) else judge
    by_id = {record.id: (record, row) for record, row in pairs}
    rules = es.abstention if es is not None else None  # the eval set's own abstention wording, if any
    results = []
    order = es.records if es is not None else [r for r, _ in pairs]
    for record in order:
        if record.id in by_id:
            results.append(_score_row(name, *by_id[record.id], file, corpus, ranked, metrics, the_judge,
                                      evidence_k, cite_by, es is not None, rules, scoring, locate))
        elif unanswered == "failed":
            results.append(_missing(name, record, file.label, metrics if ranked else ()))
    notices, warnings = [], _empty_answers(file, by_id, results)
    if missing:  # only with an eval set: order is its records
        notices.append(f"{len(missing)} of {len(order)} eval-set queries have no answer in {file.label}: "
                       + ("recorded as failed queries: " if unanswered == "failed" else
                          f"left out (--unanswered skip; {len(results)} scored): ") + listing(missing))
    if ranked is None:
        notices.append(f"{file.label} gives no ranking ('retrieved', or contexts that are documents of the eval "
                       "set): retrieval metrics are not computed")
    source = {"kind": "answers", "format": "ragas" if file.ragas else "evalkit", "file": str(Path(file.path).resolve()),
              "sha256": file.sha256, "columns": dict(file.columns), "evidence_k": evidence_k, "cite_by": cite_by}
    return Scored(name=name, ref=ref, results=results, metrics=metrics if ranked is not None else (),
                  source=source, judge=the_judge.identity, notices=notices, warnings=warnings,
                  scoring=scoring or Scoring())


UNANSWERED = ("failed", "skip")  # what score_answers does with eval-set queries the file does not answer
EMPTY_ANSWER = UNUSABLE_ANSWERS["empty"]  # the cause a run gives an LLM's empty reply (evalkit.run.health)


def _empty_answers(file: AnswersFile, by_id: dict[str, tuple[EvalRecord, AnswerRow]],
                   results: Sequence[QueryResult]) -> list[str]:
    """The warning for answers that are empty or whitespace only: degraded, as an LLM's empty reply in a run."""
    lines = sorted(by_id[r.query_id][1].line for r in results
                   if r.query_id in by_id and any(d["cause"] == EMPTY_ANSWER for d in r.degraded or ()))
    if not lines:
        return []
    return [f"{file.label}: {len(lines)} answer(s) are empty or whitespace only (line "
            f"{listing([str(n) for n in lines])}): recorded as degraded queries (cause {EMPTY_ANSWER}), not as "
            "abstentions, as an empty LLM reply in a run; an empty answer usually means the system failed. Give "
            "'error' for a failed query, or 'abstained': true for an empty answer that is the system's refusal"]


def _match(file: AnswersFile, es: EvalSet) -> tuple[list[tuple[EvalRecord, AnswerRow]], list[str]]:
    """Each row's eval-set record (by id, else by question); unknown ids, repeats and edits are errors."""
    by_id = {r.id: r for r in es.records}
    by_question: dict[str, list[EvalRecord]] = {}
    for r in es.records:
        by_question.setdefault(" ".join(r.question.split()), []).append(r)
    found: dict[str, int] = {}
    matched: list[tuple[str, AnswerRow]] = []  # each row with its query id (given, or found by its question)
    pairs = []
    for row in file.rows:
        if row.id is None:
            if row.question is None:
                raise LocatedError(file.label, file.where("id"), "missing: give the query id, or the question to "
                                   "match it by", line=row.line)
            hits = by_question.get(" ".join(row.question.split()), [])
            if len(hits) != 1:
                raise LocatedError(file.label, file.where("question"), f"no id, and the question matches "
                                   f"{'no' if not hits else len(hits)} question(s) of {es.name} v{es.version}; give "
                                   "the query id", line=row.line)
            row.id = hits[0].id
        if row.id in found:
            raise LocatedError(file.label, file.where("id"), f"query '{row.id}' is answered twice (first on line "
                               f"{found[row.id]}); keep one answer per query", line=row.line)
        found[row.id] = row.line
        matched.append((row.id, row))
    refuse_unknown_ids(file.label, found, es)
    for qid, row in matched:
        record = by_id[qid]
        for f, mine, theirs in (("question", row.question, record.question),
                                ("reference_answer", row.reference_answer, record.reference_answer)):
            if mine is not None and " ".join(mine.split()) != " ".join((theirs or "").split()):
                raise LocatedError(file.label, file.where(f), f"differs from the {f} of '{row.id}' in {es.name} "
                                   f"v{es.version} ({(theirs or '(none)')[:60]!r}): the file was produced for other "
                                   "data", line=row.line)
        if row.gold is not None and row.gold and sorted(row.gold) != sorted(record.relevant_doc_ids):
            raise LocatedError(file.label, file.where("relevant_doc_ids"), f"gold documents differ from those of "
                               f"'{row.id}' in {es.name} v{es.version}; the eval set's are used: drop the column",
                               line=row.line)
        pairs.append((record, row))
    return pairs, [r.id for r in es.records if r.id not in found]


def _ranking_source(file: AnswersFile, corpus: Any, records: list[EvalRecord],
                    locate: Callable[[str], str | None] | None = None) -> str | None:
    """Where rankings come from: ``retrieved``, ``contexts`` (matched by content), or ``None``."""
    with_retrieved = [r for r in file.rows if r.retrieved is not None]
    if with_retrieved:
        lacking = next((r for r in file.rows if r.retrieved is None and r.error is None), None)
        if lacking is not None:
            raise LocatedError(file.label, file.where("retrieved"), f"missing here but given on line "
                               f"{with_retrieved[0].line}: write [] for an empty ranking", line=lacking.line)
        return "retrieved"
    gold = {d for r in records for d in r.relevant_doc_ids}
    ids = {d for r in file.rows for d in context_ids(r, locate)}
    if (corpus is not None and any(i in corpus for i in ids)) or (corpus is None and gold & ids):
        return "contexts"
    return None


def _score_row(name: str, record: EvalRecord, row: AnswerRow, file: AnswersFile, corpus: Any, ranked: str | None,
               metrics: Sequence[str], judge: Any, evidence_k: int, cite_by: str,
               file_has_eval_set: bool, rules: Any = None, scoring: Scoring | None = None,
               locate: Callable[[str], str | None] | None = None) -> QueryResult:
    docs: list[tuple[str, float]] = []
    if ranked == "retrieved":
        docs = first_ranks(row.retrieved or [])  # a document named once per passage ranks at its first place
    elif ranked == "contexts":
        docs = list(dict.fromkeys((d, 0.0) for d, (_, t) in zip(context_ids(row, locate), row.contexts or [],
                                                                   strict=True) if t.strip()))
    evidence = answer_evidence(row, file, corpus, evidence_k, locate)
    shown = [(e.id, e.doc_id) for e in evidence]
    if cite_by == "position":  # only numbers name a passage; an id written in brackets is not a citation
        masked = [(f"\0{i}", f"\0{i}") for i in range(len(shown))]
        by_pos, invalid = parse_citations(row.answer, masked)
        used = list(dict.fromkeys(shown[int(u[1:])][1] for u in by_pos))
    else:  # ids first, then 1-based numbers (evalkit.text.citations.resolve)
        used, invalid = parse_citations(row.answer, shown)
    failed = row.error is not None
    finding = abstention_finding(row.answer, None, rules, failed, [e.text for e in evidence], record.question)
    empty_but_answered = row.abstained is False and not row.answer.strip()
    if row.abstained is not None and finding.get("reason") != "error_reply" and not empty_but_answered:
        # the file says so: the system's own flag decides, unless the reply is an error message (an outage
        # flagged as an abstention by the system is no correct refusal) or is empty while flagged as an answer
        finding = {"abstained": row.abstained, "reason": "given", "source": "answers file"}
    abstained = bool(finding.get("abstained")) and not failed
    answer = Answer(text=row.answer, abstained=abstained, evidence=evidence, used_documents=used,
                    invalid_citations=invalid, citations=used + invalid, generator=f"external:{name}", failed=failed,
                    abstention=finding)
    ids = [d for d, _ in docs]
    ranking = [{"doc_id": d, "score": s} for d, s in docs]
    gold_known = file_has_eval_set or row.gold is not None or record.type == "unanswerable"
    error = {"node": name, "type": "ExternalError", "message": row.error} if failed else None
    wrote = {"retrieved": ids, "answer": row.answer, "contexts": len(row.contexts or []), "abstained": abstained,
             "abstention": finding}
    trace = scored_trace(name, wrote, row.latency_ms, error)
    # as in a run (evalkit.run.health): a reply that is an error message degrades the query; a failed one is failed
    degraded = [] if failed else degradations(trace, finding)
    with usage_scope() as usage:
        scores, generation = score_outputs(record, ranking, ranking, metrics if ranked else (), answer, judge,
                                           gold_known=gold_known, scoring=scoring, degraded=bool(degraded))
    return QueryResult(query_id=record.id, question=record.question, gold_doc_ids=list(record.relevant_doc_ids),
                       retrieved=ranking, reranked=ranking, metrics=scores, trace=trace,
                       error=error, outcome="failed" if failed else "abstained" if abstained else "answered",
                       type=record.type, lang=record.lang, generation=generation,
                       usage={k: v.to_dict() for k, v in sorted(usage.items())}, gold_known=gold_known,
                       degraded=degraded)


def _missing(name: str, record: EvalRecord, label: str, metrics: Sequence[str]) -> QueryResult:
    """An eval-set query the answers file lacks: a failed query with an empty ranking (a miss, counted and gated)."""
    error = {"node": name, "type": "MissingOutput", "message": f"no answer for this query in {label}"}
    answer = Answer(text="", abstained=False, failed=True)
    scores, generation = score_outputs(record, [], [], metrics, answer, None)
    return QueryResult(query_id=record.id, question=record.question, gold_doc_ids=list(record.relevant_doc_ids),
                       retrieved=[], reranked=[], metrics=scores, trace=scored_trace(name, {}, None, error), error=error,
                       outcome="failed", type=record.type, lang=record.lang, generation=generation)
