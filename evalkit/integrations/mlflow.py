"""evalkit's judge and retrieval metrics as MLflow GenAI scorers: ``mlflow.genai.evaluate`` with no LLM.

    import mlflow
    from evalkit.integrations.mlflow import EvalkitGroundedness, HitAtK, NDCGAtK, RecallAtK

    mlflow.genai.evaluate(data=rows_or_traces, predict_fn=app,           # predict_fn optional
                          scorers=[EvalkitGroundedness(), RecallAtK(20), HitAtK(5), NDCGAtK(10)])

Where each scorer reads its data:

* **question**: ``inputs["question"]`` (``query`` and ``user_input`` are accepted; an
  ``inputs`` that is a plain string is the question);
* **answer**: ``outputs`` when it is a string, else ``outputs["answer"]`` (or ``response``);
* **evidence** (the passages the answer was written from): the documents of the trace's
  top-level ``RETRIEVER`` spans, in span order (``page_content`` / ``content`` / ``text``,
  as MLflow's own scorers read them), each with its document id: the document's ``id``,
  else ``metadata["doc_id"]``, else ``metadata["doc_uri"]``. A row without a trace (or
  whose trace has no retriever span) reads ``inputs["context"]``: a list of passage texts;
* **expected documents** (``RecallAtK``, ``HitAtK``, ``NDCGAtK``):
  ``expectations["expected_document_ids"]``, a list of ids or ``{id: grade}``.

``EvalkitGroundedness`` judges the answer with evalkit's judge (``offline`` by default, no
model; ``judge="llm"`` with ``judge_options`` for the LLM judge or cascade) through ``evalkit
score --answers``'s own code (:class:`~evalkit.integrations.samples.SampleScorer`): its value
is the row's ``faithfulness`` (share of claims the evidence supports), its rationale lists each
claim with its verdict, and its metadata holds the claim counts and the share of claims left
``unverified``. An answer evalkit does not judge (an abstention, no checkable claim) gets no
value and a rationale saying why.

The retrieval scorers rank the evidence's document ids, each document at its first place
(trec_eval semantics: a document counts once; several passages of one document are one
entry), and score them with :func:`evalkit.metrics.score_query`, the function ``evalkit run``
and ``evalkit score`` use. A question without expected documents (unanswerable) has no
ranking metric in evalkit, so these return no value for it.

Traces that evalkit itself logs (``evalkit run``, :mod:`evalkit.track.traces`) are read the same
way: their one RETRIEVER span, ``documents``, holds the passages the generator was shown (their
texts cut to ``PASSAGE_CHARS``; for a retrieval-only variant, the ranking's top ids without text),
the request is ``{query_id, question}``, the response holds the ``answer``, and the gold ids are
an ``expected_document_ids`` Expectation, so ``mlflow.genai.evaluate(data=mlflow.search_traces(...))``
needs nothing more. There the ranking scorers rank the evidence documents, as ``evalkit score``
does on the run's ragas export; the run's own ``recall_at_20``... assessments rank its whole list.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mlflow.entities import Feedback, SpanType, Trace
from mlflow.genai.scorers import Scorer
from pydantic import PrivateAttr

from evalkit.errors import EvalkitError
from evalkit.integrations.samples import Sample, SampleScorer, Verdicts, check_sample
from evalkit.metrics import score_query

__all__ = ["EXPECTED_IDS", "EvalkitGroundedness", "HitAtK", "NDCGAtK", "RecallAtK", "evidence_of", "question_of",
           "ranking_of"]

EXPECTED_IDS = "expected_document_ids"
QUESTION_KEYS = ("question", "query", "user_input")
ANSWER_KEYS = ("answer", "response")
CONTENT_KEYS = ("page_content", "content", "text")


# ---------------------------------------------------------------------------------------- reading a row


def question_of(inputs: Any) -> Any:
    """The question of a row's ``inputs`` (module docstring), as given (checked later)."""
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, Mapping):
        return next((inputs[k] for k in QUESTION_KEYS if k in inputs), None)
    return None


def answer_of(outputs: Any) -> Any:
    """The answer of a row's ``outputs``: the string itself, or its ``answer`` / ``response``."""
    if isinstance(outputs, Mapping):
        return next((outputs[k] for k in ANSWER_KEYS if k in outputs), None)
    return outputs


def _documents(trace: Trace | None) -> list[tuple[str | None, str | None]] | None:
    """``(document id, text)`` of every document of the top-level retriever spans, or None without any."""
    if trace is None or trace.data is None:
        return None
    spans = {s.span_id: s for s in trace.data.spans}
    top = []
    # mlflow annotates span_type as the SpanType class, whose members are plain strings (what it compares)
    for span in trace.search_spans(span_type=SpanType.RETRIEVER):  # type: ignore[arg-type]
        parent = spans.get(span.parent_id) if span.parent_id else None
        while parent is not None and parent.span_type != SpanType.RETRIEVER:
            parent = spans.get(parent.parent_id) if parent.parent_id else None
        if parent is None:
            top.append(span)
    if not top:
        return None
    top.sort(key=lambda s: s.start_time_ns)
    out: list[tuple[str | None, str | None]] = []
    for span in top:
        docs = span.outputs
        docs = json.loads(docs) if isinstance(docs, str) else docs
        if isinstance(docs, Mapping) and "wrote" in docs:
            raise EvalkitError(f"trace {trace.info.trace_id} was logged by an evalkit older than its 'documents' span "
                               "(its retriever spans hold node outputs, not documents); its metrics are on it as "
                               "assessments, or log the run again with this evalkit")
        for doc in docs or []:
            if not isinstance(doc, Mapping):
                raise EvalkitError(f"trace {trace.info.trace_id}: retriever span '{span.name}' returned {doc!r:.60}; "
                                   "return documents ({page_content, metadata, id}, e.g. mlflow.entities.Document)")
            raw_meta = doc.get("metadata")
            meta = raw_meta if isinstance(raw_meta, Mapping) else {}
            ident = doc.get("id") or meta.get("doc_id") or meta.get("doc_uri")
            text = next((doc[k] for k in CONTENT_KEYS if isinstance(doc.get(k), str)), None)
            out.append((None if ident is None else str(ident), text))
    return out


def evidence_of(inputs: Any, trace: Trace | None) -> tuple[list[str], list[str] | None]:
    """The passage texts the answer was written from and their document ids (None when unknown)."""
    docs = _documents(trace)
    if docs is not None:
        missing = [i for i, (_, text) in enumerate(docs) if text is None]
        if missing:
            raise EvalkitError(f"trace {trace.info.trace_id if trace else ''}: retriever document {missing[0]} has no "
                               f"text ({', '.join(CONTENT_KEYS)}); the judge needs the passages' texts")
        ids = [d for d, _ in docs if d is not None]
        return [t or "" for _, t in docs], ids if len(ids) == len(docs) else None
    context = inputs.get("context") if isinstance(inputs, Mapping) else None
    if context is None:
        raise EvalkitError("no evidence: the row has no trace with a RETRIEVER span and no inputs['context'] (a list "
                           "of the passage texts the answer was written from)")
    return context, None


def ranking_of(trace: Trace | None) -> list[str]:
    """The document ids of a trace's retriever spans, each once at its first place (trec_eval semantics)."""
    docs = _documents(trace)
    if docs is None:
        raise EvalkitError("no ranking: the row needs a trace with a RETRIEVER span whose documents carry ids "
                           "(Document.id, metadata['doc_id'] or metadata['doc_uri'])")
    unnamed = [i for i, (d, _) in enumerate(docs) if d is None]
    if unnamed:
        raise EvalkitError(f"retriever document {unnamed[0]} has no id (Document.id, metadata['doc_id'] or "
                           "metadata['doc_uri']): a ranking metric needs document ids")
    return list(dict.fromkeys(d for d, _ in docs if d is not None))


def expected_of(expectations: Mapping[str, Any] | None) -> dict[str, int]:
    """``expectations["expected_document_ids"]`` as ``{id: grade}`` (a list means grade 1 each)."""
    value = (expectations or {}).get(EXPECTED_IDS)
    if value is None:
        raise EvalkitError(f"no expectations['{EXPECTED_IDS}']: give the ids of the documents that answer the "
                           "question (a list, or {id: grade})")
    if isinstance(value, Mapping):
        return {str(k): int(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return {str(v): 1 for v in value}
    raise EvalkitError(f"expectations['{EXPECTED_IDS}'] must be a list of ids or {{id: grade}}, got {value!r:.60}")


# ---------------------------------------------------------------------------------------- scorers


def _rationale(v: Verdicts) -> str:
    if v.error:
        return f"the judge failed: {v.error}"
    if not v.answered:
        return "not judged: the answer abstains (or is empty)"
    if not v.claims:
        return "no checkable claim in the answer"
    return "\n".join(f"{c.get('verdict')}: {c.get('claim')}" for c in v.claims)


class EvalkitGroundedness(Scorer):
    """Share of the answer's claims its evidence supports, by evalkit's judge (evalkit's ``faithfulness``)."""

    name: str = "evalkit_groundedness"
    judge: str = "offline"
    judge_options: dict[str, Any] = {}
    _scorer: SampleScorer | None = PrivateAttr(default=None)

    # mlflow's documented way: a scorer's __call__ takes only the keywords it uses (mlflow passes those)
    def __call__(self, *, inputs: Any = None, outputs: Any = None,  # type: ignore[override]
                 trace: Trace | None = None) -> Feedback:
        texts, ids = evidence_of(inputs, trace)
        sample: Sample = check_sample(question_of(inputs), answer_of(outputs), texts, ids, where="mlflow row")
        if self._scorer is None:
            self._scorer = SampleScorer(self.judge, self.judge_options)
        v = self._scorer.score(sample)
        verdicts = [str(c.get("verdict")) for c in v.claims]
        meta = {"claims": str(len(verdicts)), "judge": self._scorer.judge.identity or self.judge,
                **{f"claims_{k}": str(verdicts.count(k)) for k in sorted(set(verdicts))},
                "unverified_share": str(verdicts.count("unverified") / len(verdicts)) if verdicts else "",
                "hallucinated": "" if v.value("hallucinated") is None else str(v.value("hallucinated"))}
        if v.error:
            return Feedback(name=self.name, error=v.error, rationale=_rationale(v), metadata=meta)
        return Feedback(name=self.name, value=v.value("faithfulness"), rationale=_rationale(v), metadata=meta)


class _RankingScorer(Scorer):
    """A retrieval metric at cutoff ``k`` over a trace's retrieved document ids (module docstring)."""

    k: int = 10
    family: str = "recall"

    def __init__(self, k: int = 10, **kwargs: Any) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise EvalkitError(f"{type(self).__name__}(k): k must be a positive integer, got {k!r}")
        family = type(self).model_fields["family"].default
        fields: dict[str, Any] = {"k": k, "name": kwargs.pop("name", f"{family}_at_{k}"), **kwargs}
        super().__init__(**fields)  # a subclass's pydantic fields: Scorer.__init__'s typed signature lacks k

    @property
    def metric(self) -> str:
        return f"{self.family}@{self.k}"

    # mlflow's documented way: a scorer's __call__ takes only the keywords it uses (mlflow passes those)
    def __call__(self, *, expectations: dict[str, Any] | None = None,  # type: ignore[override]
                 trace: Trace | None = None) -> Feedback | None:
        gold = expected_of(expectations)
        ranking = ranking_of(trace)
        if not gold:
            return None  # unanswerable: evalkit scores no ranking metric (never a 0)
        value = score_query(ranking, ranking, gold, (self.metric,))[self.metric]
        found = [d for d in ranking[:self.k] if gold.get(d, 0) >= 1]
        return Feedback(name=self.name, value=value,
                        rationale=f"{self.metric}: relevant in the top {self.k}: {', '.join(found) or 'none'} "
                                  f"(of {len(gold)} expected, {len(ranking)} retrieved)",
                        metadata={"metric": self.metric, "retrieved": str(len(ranking)), "expected": str(len(gold))})


class RecallAtK(_RankingScorer):
    """evalkit's ``recall@k``: share of the expected documents in the top k (trec_eval ``recall_k``)."""

    family: str = "recall"


class HitAtK(_RankingScorer):
    """evalkit's ``hit@k``: 1 if any expected document is in the top k (trec_eval ``success_k``)."""

    family: str = "hit"


class NDCGAtK(_RankingScorer):
    """evalkit's ``ndcg@k``: graded nDCG of the top k (trec_eval ``ndcg_cut_k``)."""

    family: str = "ndcg"
