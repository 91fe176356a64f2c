"""Per-query views of the report: one query's drill-down, and two variants query by query.

Read from the records, never re-run (DESIGN.md). Besides ``per_query.jsonl`` the views
use three files the run recorded, each only while it still has the content the run saw
(:class:`Sources`): the eval set (reference answers), the corpus (titles, passage
texts) and each variant's chunking (passage ids -> text, re-cut with
:func:`evalkit.index.chunking.chunk_corpus`, which is deterministic). A file that moved
or changed is named in :attr:`Sources.notes` and the views show ids without text.

The drill-down (:class:`QueryView`) shows the question, the reference answer, the final
top 5, the answer, each claim with its verdict, reason and the passage that decided it
(``ClaimVerdict.evidence_id``: a passage id, or a document id matched to the evidence
passages of that document), the evidence passages (text on demand) and the abstention
and citation findings. Generation fields it does not know are listed as they are, so a
newer record (another judge, another abstention detector) still shows everything.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from evalkit.analysis.direction import sign
from evalkit.analysis.pairing import guard_tripped, per_query_values
from evalkit.analysis.runs import LoadedRun
from evalkit.errors import EvalkitError
from evalkit.evalsets.evalset import display_path
from evalkit.index.chunking import chunk_corpus, chunking_id
from evalkit.records import QueryResult
from evalkit.scoring.answers import answer_evidence, read_answers

TOP_N = 5
PAIR_LIMIT = 30  # queries shown per section of a two-variant view (the counts cover all)
KNOWN_GENERATION = frozenset({"answer", "answered", "abstained", "citations", "used_documents", "invalid_citations",
                              "evidence", "judgement"})
ANSWER_METRICS = ("faithfulness", "hallucinated", "unverified", "answer_f1", "answer_em", "answer_correctness",
                  "citation_recall", "citation_precision", "cited_gold_precision", "invalid_citation_rate", "claims", "claims_supported", "claims_unsupported", "claims_unverified",
                  "claims_not_checkable")


@dataclass
class Sources:
    """Reference answers, document titles and passage texts, when the run's files still match it."""

    references: dict[str, str] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    corpus: Any = None
    texts: dict[str, str] = field(default_factory=dict)  # passage id -> text, from a scored answers file
    _passages: dict[str, Any] = field(default_factory=dict)

    def passage_text(self, chunking: dict[str, Any] | None, passage_id: str) -> str | None:
        """The text of ``passage_id`` under ``chunking`` (None: corpus or chunking unavailable, or unknown id)."""
        if passage_id in self.texts:
            return self.texts[passage_id]
        if self.corpus is None or chunking is None:
            return None

        key = chunking_id(chunking)
        if key not in self._passages:
            self._passages[key] = chunk_corpus(self.corpus, chunking)
        try:
            return self._passages[key].text(passage_id)
        except KeyError:
            return None


def load_sources(run: LoadedRun) -> Sources:
    """Read the eval set and corpus the run names (checked against the recorded hashes)."""
    out = Sources()
    ref = run.summary.eval_set
    if ref.kind == "answers_file":  # scored without an eval set: the answers file holds questions and contexts
        return _answers_file_sources(run, ref, out)
    try:
        from evalkit.evalsets import load_eval_set

        es = load_eval_set(f"{ref.path}@v{ref.version}", check_corpus=False) if ref.path else None
        if es is not None and (not ref.sha256 or es.sha256 == ref.sha256):
            out.references = {r.id: r.reference_answer for r in es.records if r.reference_answer}
        else:
            out.notes.append(f"reference answers not shown: eval set {ref.path or '(not recorded)'} "
                             f"{'changed since the run' if es is not None else 'unknown'}")
    except (EvalkitError, OSError) as exc:
        out.notes.append(f"reference answers not shown: {exc}")
    try:
        from evalkit.index.corpus import load_corpus

        corpus = load_corpus(ref.corpus) if ref.corpus else None
        if corpus is not None and (not ref.corpus_sha256 or corpus.sha256 == ref.corpus_sha256):
            out.corpus = corpus
            out.titles = {d.id: d.title for d in corpus.documents}
        elif corpus is not None:
            out.notes.append(f"passage texts not shown: corpus {display_path(ref.corpus)} changed since the run")
        else:
            out.notes.append("passage texts not shown: the run recorded no corpus path")
    except (EvalkitError, OSError) as exc:
        out.notes.append(f"passage texts not shown: {exc}")
    return out


def _answers_file_sources(run: LoadedRun, ref: Any, out: Sources) -> Sources:
    """Reference answers and context texts of a self-contained answers file, if it still has the scored content."""
    source = next((v.source for v in run.summary.variants.values() if v.source), None) or {}
    try:
        file = read_answers(ref.path, source.get("columns") or None, source.get("format") or "auto")
    except (EvalkitError, OSError) as exc:
        out.notes.append(f"passage texts not shown: {exc}")
        return out
    if file.sha256 != ref.sha256:
        out.notes.append(f"passage texts and reference answers not shown: answers file {ref.path} changed since "
                         "the run")
        return out
    for row in file.rows:
        qid = row.id or f"row-{row.line:05d}"  # as evalkit.scoring.scorer names rows without an id
        if row.reference_answer:
            out.references[qid] = row.reference_answer
        if row.contexts is not None:  # the passage ids the scorer gave them (DOC@n for several of one document)
            out.texts.update((e.id, e.text) for e in answer_evidence(row, file, None, 0))
    return out


@dataclass
class PassageView:
    """One passage: id, document, score when ranked, whether its document is gold, its text (None: unavailable)."""

    id: str
    doc_id: str
    score: float | None
    gold: bool
    text: str | None


@dataclass
class ClaimView:
    """One judged claim and the evidence passages that decided it."""

    claim: str
    verdict: str
    reason: str
    evidence_id: str | None
    passages: list[PassageView]


@dataclass
class QueryView:
    """Everything the drill-down shows of one query in one variant."""

    variant: str
    query_id: str
    question: str
    lang: str | None
    label: str
    gold: list[str]
    reference: str | None
    ranking: list[dict[str, Any]]  # final top N: doc_id, title, score, gold
    evidence: list[PassageView]
    generates: bool
    answer: str | None
    claims: list[ClaimView]
    findings: list[tuple[str, str]]
    metrics: dict[str, float]
    outcome: str | None
    error: str | None


def _evidence(gen: dict[str, Any], gold: set[str], chunking: dict[str, Any] | None, src: Sources) -> list[PassageView]:
    out = []
    for item in gen.get("evidence") or []:
        if isinstance(item, (list, tuple)) and len(item) >= 2:
            pid, doc = str(item[0]), str(item[1])
            score = float(item[2]) if len(item) > 2 and isinstance(item[2], (int, float)) else None
        elif isinstance(item, dict) and "id" in item:
            pid, doc, score = str(item["id"]), str(item.get("doc_id", item["id"])), item.get("score")
        else:
            continue
        out.append(PassageView(pid, doc, score, doc in gold, src.passage_text(chunking, pid)))
    return out


def _claims(judgement: dict[str, Any], evidence: list[PassageView]) -> list[ClaimView]:
    out = []
    for c in judgement.get("claims") or []:
        if not isinstance(c, dict):
            continue
        eid = c.get("evidence_id")
        deciding = [p for p in evidence if eid is not None and eid in (p.id, p.doc_id)]
        out.append(ClaimView(str(c.get("claim", "")), str(c.get("verdict", "?")), str(c.get("reason", "")),
                             None if eid is None else str(eid), deciding))
    return out


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _findings(r: QueryResult, gen: dict[str, Any], judgement: dict[str, Any]) -> list[tuple[str, str]]:
    """Abstention and citation findings, the judge's other fields and any generation field not known here."""
    out: list[tuple[str, str]] = [("answered", _text(gen.get("answered"))), ("abstained", _text(gen.get("abstained")))]
    if guard_tripped(r):
        out.append(("guard", f"stopped the query (outcome {r.outcome})"))
    out += [("cited", ", ".join(map(str, gen.get("citations") or [])) or "none"),
            ("valid citations (documents)", ", ".join(map(str, gen.get("used_documents") or [])) or "none"),
            ("invalid citations", ", ".join(map(str, gen.get("invalid_citations") or [])) or "none")]
    if judgement.get("error"):
        out.append(("judge error", _text(judgement["error"])))
    out += [(f"judge: {k}", _text(v)) for k, v in judgement.items() if k not in ("claims", "error") and v is not None]
    out += [(k, _text(v)) for k, v in gen.items() if k not in KNOWN_GENERATION and v is not None]
    return out


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when a record holds a JSON object there, else ``{}`` (an older or partial record)."""
    return value if isinstance(value, dict) else {}


def query_view(run: LoadedRun, variant: str, row: dict[str, Any], label: str, src: Sources,
               chunking: dict[str, Any] | None) -> QueryView:
    """The drill-down of one per-query record (``row``: the raw JSON object)."""
    r = QueryResult.from_dict(row)
    gold = set(r.gold_doc_ids)
    gen = _dict(row.get("generation"))
    judgement = _dict(gen.get("judgement"))
    evidence = _evidence(gen, gold, chunking, src)
    ranking = [{"doc_id": d["doc_id"], "title": src.titles.get(d["doc_id"], ""), "score": d.get("score"),
                "gold": d["doc_id"] in gold} for d in (r.reranked or r.retrieved)[:TOP_N]]
    error = None if not r.error else f"{r.error.get('node')}: {r.error.get('type')}: {r.error.get('message')}"
    return QueryView(
        variant=variant, query_id=r.query_id, question=r.question, lang=r.lang, label=label, gold=r.gold_doc_ids,
        reference=src.references.get(r.query_id), ranking=ranking, evidence=evidence, generates=bool(gen),
        answer=gen.get("answer") if gen else None, claims=_claims(judgement, evidence),
        findings=_findings(r, gen, judgement) if gen else [],
        metrics={m: v for m in ANSWER_METRICS if (v := r.metrics.get(m)) is not None},
        outcome=r.outcome, error=error)


def chunking_of(run: LoadedRun, variant: str) -> dict[str, Any] | None:
    """The chunking the variant ran with (None when its config is not available)."""
    config = run.config(variant)
    return None if config is None else dict(config.chunking)


@dataclass
class PairView:
    """Two variants query by query: where B wins, loses, or differs without a metric change."""

    a: str
    b: str
    metric: str
    won: list[tuple[QueryView, QueryView, float]]
    lost: list[tuple[QueryView, QueryView, float]]
    changed: list[tuple[QueryView, QueryView, float]]
    counts: dict[str, int]
    values: dict[str, tuple[float | None, float | None]]


def _compared(row: dict[str, Any], label: str) -> tuple[list[str], bool, Any, str]:
    """What :func:`pair_view` compares of one query's record: its final top documents (as :func:`query_view` lists
    them), whether it generates, its answer and its failure label (without building the whole view)."""
    r = QueryResult.from_dict(row)
    gen = _dict(row.get("generation"))
    return [d["doc_id"] for d in (r.reranked or r.retrieved)[:TOP_N]], bool(gen), gen.get("answer") if gen else None, label


def _differs(x: tuple[list[str], bool, Any, str], y: tuple[list[str], bool, Any, str]) -> bool:
    """Another final top 5; or, when both variants generate (or neither does), another answer or label."""
    if x[0] != y[0]:
        return True
    return x[1] == y[1] and (x[2] != y[2] or x[3] != y[3])


def pair_view(run: LoadedRun, a: str, b: str, metric: str, labels: dict[str, dict[str, str]], src: Sources,
              limit: int = PAIR_LIMIT) -> PairView:
    """Compare ``b`` with ``a`` on ``metric`` (answerable queries: retrieval metrics are defined there).

    Won / lost: ``b``'s value is higher / lower (in the metric's direction); changed:
    the same value (or no value) but another final top 5, or another answer or failure
    label between two variants that both generate (or both do not: labels of a
    retrieval-only variant are not comparable with a generating one's).
    Sections are sorted by the size of the difference, then query id, and cut at ``limit``.
    """
    rows = {name: {r["query_id"]: r for r in run.rows(name)} for name in (a, b)}
    values = {name: per_query_values(run.results(name), metric) for name in (a, b)}
    chunk = {name: chunking_of(run, name) for name in (a, b)}
    won: list[tuple[str, float]] = []
    lost: list[tuple[str, float]] = []
    changed: list[tuple[str, float]] = []
    shared = [q for q in rows[a] if q in rows[b]]
    out_values: dict[str, tuple[float | None, float | None]] = {}
    for q in shared:
        va, vb = values[a].get(q), values[b].get(q)
        out_values[q] = (va, vb)
        delta = (vb - va) * sign(metric) if va is not None and vb is not None else 0.0
        if delta > 1e-12:
            won.append((q, delta))
        elif delta < -1e-12:
            lost.append((q, delta))
        elif _differs(_compared(rows[a][q], labels[a].get(q, "")), _compared(rows[b][q], labels[b].get(q, ""))):
            changed.append((q, delta))
    counts = {"won": len(won), "lost": len(lost), "changed": len(changed),
              "same": len(shared) - len(won) - len(lost) - len(changed), "queries": len(shared)}

    def top(items: list[tuple[str, float]]) -> list[tuple[QueryView, QueryView, float]]:
        """The ``limit`` largest differences (then by query id), each query's two views built only for those."""
        return [(query_view(run, a, rows[a][q], labels[a].get(q, ""), src, chunk[a]),
                 query_view(run, b, rows[b][q], labels[b].get(q, ""), src, chunk[b]), delta)
                for q, delta in sorted(items, key=lambda t: (-abs(t[1]), t[0]))[:limit]]

    return PairView(a, b, metric, top(won), top(lost), top(changed), counts, out_values)
