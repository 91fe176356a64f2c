"""``evalkit score``: outputs produced elsewhere, scored and written exactly as ``evalkit run`` writes.

:func:`score_run` scores ranked lists (:mod:`evalkit.scoring.runfile`) against a frozen eval
set; :func:`score_answers` scores answers (:mod:`evalkit.scoring.answers`), against an eval
set or self-contained. Every per-query number comes from
:func:`evalkit.run.query.score_outputs`, the function ``evalkit run`` scores its graphs'
outputs with; the files (summary JSON, ``<stem>/<variant>/per_query.jsonl`` and
``run.json``) and MLflow runs are written by the runner's own code, so ``compare``,
``gate``, ``report`` and ``export`` read a scored variant like any other.

Checks that keep a score honest: a query id the eval set lacks is an error listing them
(never dropped), a query id given twice is an error, a question that differs from the
eval set's is an error; eval-set queries the file lacks are scored as an empty ranking
(``--run``, trec_eval ``-c``) or recorded as failed queries (``--answers``: no answer is
a miss, and ``gate`` refuses failures by default; ``--unanswered skip`` scores a partial
file on the queries it answers instead), and both are announced.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError, LocatedError
from evalkit.evalsets import EvalSet, load_eval_set
from evalkit.index.corpus import Corpus
from evalkit.llm.usage import usage_scope
from evalkit.metrics import Scoring
from evalkit.records import EvalRecord, EvalSetRef, QueryResult, RunSummary, TraceEvent
from evalkit.run.health import SCORED_EVENT, UNUSABLE_ANSWERS, degradations
from evalkit.run.query import Answer, abstention_finding, score_outputs
from evalkit.run.runner import RunOptions, git_commit
from evalkit.run.store import VariantStore, results_folder, write_json_atomic
from evalkit.run.summarise import variant_summary
from evalkit.run.tracking import log_variants
from evalkit.scoring.answers import (
    AnswerRow,
    AnswersFile,
    answer_evidence,
    content_sha256,
    context_ids,
    read_answers,
    self_contained,
)
from evalkit.scoring.locate import CorpusLocator
from evalkit.scoring.runfile import Ranking, first_ranks, read_run

SHOW = 5  # ids listed in an error or notice before "... and N more"
CITE_BY = ("id", "position")


@dataclass
class Scored:
    """One scored variant before it is written: its records and where they came from."""

    name: str
    ref: EvalSetRef
    results: list[QueryResult]
    metrics: Sequence[str]
    source: dict[str, Any]
    judge: str | None = None
    notices: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what may make the numbers wrong (printed as warnings)
    scoring: Scoring = field(default_factory=Scoring)  # relevance level and tie order of the retrieval metrics


def _eval_set(spec: str | Path | EvalSet) -> tuple[EvalSet, EvalSetRef]:
    es = spec if isinstance(spec, EvalSet) else load_eval_set(spec)
    if es.corpus is None:
        es = load_eval_set(f"{es.path}@v{es.version}")
    ref = es.ref()
    ref.corpus, ref.corpus_sha256 = str(es.corpus_path), _corpus(es).sha256
    return es, ref


def _corpus(es: EvalSet) -> Corpus:
    """The eval set's corpus (loaded by :func:`_eval_set`), which document ids are checked against."""
    if es.corpus is None:
        raise EvalkitError(f"eval set {es.name} v{es.version} has no corpus loaded; load it with its corpus "
                           f"({es.corpus_path}): load_eval_set('{es.path}@v{es.version}')")
    return es.corpus


def _listing(items: Sequence[str]) -> str:
    shown = ", ".join(items[:SHOW])
    return shown + (f" ... and {len(items) - SHOW} more" if len(items) > SHOW else "")


def _unknown_ids(file: str, found: dict[str, int], es: EvalSet) -> None:
    known = {r.id for r in es.records}
    unknown = [(q, n) for q, n in found.items() if q not in known]
    if unknown:
        raise LocatedError(file, "id", f"{len(unknown)} query id(s) are not in eval set {es.name} v{es.version}: "
                           + _listing([f"'{q}' (line {n})" for q, n in unknown])
                           + "; score against the eval set these outputs were produced for", line=unknown[0][1])


def _trace(name: str, wrote: dict[str, Any], latency_ms: float | None, error: dict[str, Any] | None,
           role: str = "generator") -> list[dict]:
    """The one trace event of a scored query: the user's system, as a node of its role."""
    from evalkit.graph.state import compact

    # started_at: when evalkit read the output (the system ran elsewhere, at a time the file does not say);
    # 0.0 dated every MLflow trace of a scored run 1970-01-01, with no end time
    event = TraceEvent(step=0, node=name, type=SCORED_EVENT, started_at=time.time(), duration_ms=latency_ms or 0.0,
                       wrote=compact(wrote), edge=None if error else "end", edge_reason="error" if error else "default",
                       error=error, role=role)
    return [event.to_dict()]


# ---------------------------------------------------------------------------- rankings


def score_run(run: str | Path, eval_set: str | Path | EvalSet, name: str, *, run_format: str | None = None,
              retrieval_run: str | Path | None = None, metrics: Sequence[str] | None = None,
              scoring: Scoring | None = None) -> Scored:
    """Score a run file (the final ranking; ``retrieval_run``: the first-stage one, default the same);
    ``scoring``: relevance level and tie order, as ``evalkit run --relevance-level / --ties``."""
    from evalkit.metrics import DEFAULT_METRICS, parse_metric

    metrics = tuple(metrics or DEFAULT_METRICS)
    for m in metrics:
        parse_metric(m)
    es, ref = _eval_set(eval_set)
    final = read_run(run, run_format)
    first = read_run(retrieval_run, run_format) if retrieval_run else final
    notices = []
    for path, rankings in ((run, final), (retrieval_run, first if retrieval_run else None)):
        if rankings is None:
            continue
        _unknown_ids(str(path), {q: r.line for q, r in rankings.items()}, es)
        notices += _doc_id_check(str(path), rankings, es)
    results = []
    missing = []
    for record in es.records:
        ranked, stage1 = final.get(record.id), first.get(record.id)
        if ranked is None:
            missing.append(record.id)
        docs = [{"doc_id": d, "score": s} for d, s in (ranked.docs if ranked else [])]
        docs1 = [{"doc_id": d, "score": s} for d, s in (stage1.docs if stage1 else [])]
        scores, _ = score_outputs(record, docs1, docs, metrics, scoring=scoring)
        results.append(QueryResult(
            query_id=record.id, question=record.question, gold_doc_ids=list(record.relevant_doc_ids), retrieved=docs1,
            reranked=docs, metrics=scores, trace=_trace(name, {"retrieved": [d["doc_id"] for d in docs1],
                                                                "reranked": [d["doc_id"] for d in docs]}, None, None,
                                                          "retriever"),
            outcome="completed", type=record.type, lang=record.lang))
    if missing:
        notices.append(f"{len(missing)} of {len(es.records)} eval-set queries have no line in {run}: scored as empty "
                       f"rankings (0), as trec_eval -c does: {_listing(missing)}")
    source = {"kind": "run", "format": run_format or "auto", "file": str(Path(run).resolve()),
              "sha256": content_sha256(Path(run))}
    if retrieval_run:
        source.update(retrieval_file=str(Path(retrieval_run).resolve()),
                      retrieval_sha256=content_sha256(Path(retrieval_run)))
    return Scored(name=name, ref=ref, results=results, metrics=metrics, source=source, notices=notices,
                  scoring=scoring or Scoring())


def _doc_id_check(file: str, rankings: dict[str, Ranking], es: EvalSet) -> list[str]:
    """Refuse a run none of whose documents is in the corpus (another id scheme); count strays."""
    corpus = _corpus(es)
    ids = {d for r in rankings.values() for d in r.doc_ids()}
    stray = sorted(d for d in ids if d not in corpus)
    if ids and len(stray) == len(ids):
        corpus_ids = [d.id for d in corpus.documents[:3]]
        raise LocatedError(file, "docid", f"none of the {len(ids)} document ids is in the corpus of {es.name} "
                           f"({es.corpus_path}): the run uses other ids (e.g. '{stray[0]}'; the corpus has "
                           f"{', '.join(repr(c) for c in corpus_ids)}...)")
    if stray:
        return [f"{len(stray)} document id(s) in {file} are not in the corpus (never relevant): {_listing(stray)}"]
    return []


# ---------------------------------------------------------------------------- answers


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
    from evalkit.judges import make_judge
    from evalkit.metrics import DEFAULT_METRICS, parse_metric

    if cite_by not in CITE_BY:
        raise EvalkitError(f"unknown citation style '{cite_by}'; choose one of {', '.join(CITE_BY)}")
    if unanswered not in UNANSWERED:
        raise EvalkitError(f"unknown unanswered policy '{unanswered}'; choose one of {', '.join(UNANSWERED)}")
    metrics = tuple(metrics or DEFAULT_METRICS)
    for m in metrics:
        parse_metric(m)
    file = answers if isinstance(answers, AnswersFile) else read_answers(answers, mapping, answers_format, split)
    if eval_set is not None:
        es, ref = _eval_set(eval_set)
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
        from evalkit.index.store import default_cache_root

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
                          f"left out (--unanswered skip; {len(results)} scored): ") + _listing(missing))
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
            f"{_listing([str(n) for n in lines])}): recorded as degraded queries (cause {EMPTY_ANSWER}), not as "
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
    _unknown_ids(file.label, found, es)
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
    from evalkit.nodes.generate import parse_citations

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
    else:  # ids first, then 1-based numbers (evalkit.judges.citations.resolve)
        used, invalid = parse_citations(row.answer, shown)
    failed = row.error is not None
    finding = abstention_finding(row.answer, None, rules, failed)
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
    trace = _trace(name, wrote, row.latency_ms, error)
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
                       retrieved=[], reranked=[], metrics=scores, trace=_trace(name, {}, None, error), error=error,
                       outcome="failed", type=record.type, lang=record.lang, generation=generation)


# ---------------------------------------------------------------------------- writing


def write_scored(scored: Scored, options: RunOptions, echo: Callable[[str], None] = print) -> RunSummary:
    """Write a scored variant exactly as ``evalkit run`` writes one (files, then MLflow unless disabled)."""
    from evalkit.graph.config import VARIANT_NAME

    if not VARIANT_NAME.fullmatch(scored.name) or scored.name in (".", ".."):  # the rule graph config names follow
        raise EvalkitError(f"variant name {scored.name[:80]!r} is not a safe identifier: use letters, digits, '_', "
                           "'.' and '-' only (it names the variant's folder under --output), e.g. my_rag-v2")
    from evalkit.locking import output_lock
    from evalkit.run.store import check_output_path

    check_output_path(options.output)
    with output_lock(options.output, note=echo):  # one writer per output, as `evalkit run` (evalkit.locking)
        return _write_locked(scored, options, echo)


def _write_locked(scored: Scored, options: RunOptions, echo: Callable[[str], None]) -> RunSummary:
    """``write_scored`` once the output is locked."""
    import yaml

    if options.mlflow:
        from evalkit.track.store import check_store

        check_store(options.tracking_uri, results_folder(options.output).parent)  # half-migrated: the fix, first
    t0 = time.perf_counter()
    fingerprint = {"eval_set_sha256": scored.ref.sha256, "eval_set_version": scored.ref.version,
                   "source": scored.source, "metrics": list(scored.metrics),
                   "corpus_sha256": scored.ref.corpus_sha256, "judge": scored.judge,
                   **({"scoring": scored.scoring.to_dict()} if scored.scoring != Scoring() else {})}
    store = VariantStore(results_folder(options.output) / scored.name, fingerprint)
    store.start(())
    store.finish(scored.results)
    variant = variant_summary(scored.results, scored.metrics, judge=scored.judge, source=scored.source,
                              seconds=round(time.perf_counter() - t0, 3))
    if not any(e.get("duration_ms") for r in scored.results for e in r.trace):
        variant.timing = {}  # the file gave no latencies: report none rather than zeros
    summary = RunSummary(eval_set=scored.ref, variants={scored.name: variant}, git_commit=git_commit(),
                         scoring=scored.scoring.to_dict())
    write_json_atomic(options.output, summary.to_dict())
    if options.mlflow:
        from evalkit.track import VariantLog

        params = {f"source.{k}": str(v) for k, v in scored.source.items()}
        log = VariantLog(name=scored.name, params=params, config_yaml=yaml.safe_dump({"scored": scored.source},
                                                                                     allow_unicode=True),
                         summary=variant, results=scored.results, per_query_path=store.path)
        log_variants(summary, [log], options, echo)
        write_json_atomic(options.output, summary.to_dict())
    return summary
