"""Each query's node trace as an MLflow trace, with its metrics as assessments, linked to its variant's run.

For every query of a variant (up to ``limit``), the trace holds::

    root span  "<variant>"   inputs {query_id, question}; outputs {outcome, error, top documents,
                              answer}; attributes evalkit.variant/query_id/outcome/path/metrics
      span "retrieve"        one per node execution, in step order (a node that runs twice
      span "rerank"          appears twice); attributes evalkit.node_type, evalkit.step,
      span "guard"           evalkit.duration_ms, evalkit.elapsed_ms, evalkit.reused, evalkit.edge,
                              evalkit.edge_reason, evalkit.error; outputs {"wrote": the trace's
                              compact ``wrote`` dict, shortened}; status ERROR when the node raised
      span "documents"       type RETRIEVER (the trace's only one): the documents the answer was
                              written from, ``[{id, page_content, metadata}]`` (:func:`documents_of`:
                              the generator's evidence passages, each text cut to PASSAGE_CHARS;
                              for a retrieval-only variant the ranking's top ids)

    request / response       the root span's inputs / outputs: the question and the answer, whole up
                              to TEXT_CHARS characters each (what ``evalkit.integrations.mlflow`` reads)

    assessments              one Feedback per headline metric of the query (``hit_at_5``,
                              ``recall_at_20``, ``faithfulness``, ``hallucinated``...; names
                              through ``mlflow_metric_name``), source CODE ``evalkit``, on the
                              root span, with the child run as source run
                              and one Expectation ``expected_document_ids`` (the gold ids, or
                              ``{id: grade}``) when the eval set has gold labels
    tags                     mlflow.traceName = query id, evalkit.variant, evalkit.outcome,
                              evalkit.path (``retrieve>rerank>guard``)

**Timing.** A span lasts what the step really took in this variant (``elapsed_ms``): a
node result reused from another variant (shared work, ``graph.memo``) lasts ~0 ms and is
marked ``evalkit.reused = true``, with the pipeline latency of the execution it came from
kept in ``evalkit.duration_ms``. Spans therefore never overflow their root, which spans
from the first node's start to the last node's end. Events of older runs without
``elapsed_ms`` use ``duration_ms``.

**Filtering.** In the UI's Traces tab, or ``MlflowClient.search_traces(locations=[exp],
run_id=child, filter_string="feedback.hit_at_5 < 1")``; tags with
``"tags.evalkit.outcome = 'failed'"``.

**How it is written** (MLflow 3.17, public client classes): each trace's ``TraceInfo``
(tags, the source-run link, the assessments) goes through ``TracingClient.start_trace``,
then all spans of a batch of traces through one ``TracingClient.log_spans`` request, and
the traces are linked to the child run with ``MlflowClient.link_traces_to_run``. The
fluent API is not used: it exports through the process-global tracer to the *global*
tracking URI. Trace and span ids derive from the child run id and the query id, so
logging needs no RNG. MLflow traces are a shortened view: the full per-node traces stay
in ``per_query.jsonl``.

Nothing secret reaches a span: everything passes :func:`evalkit.track.secrets.scrub`.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.graph.events import event_role
from evalkit.graph.schema import Role
from evalkit.records import QueryResult
from evalkit.track.names import mlflow_metric_name
from evalkit.track.payloads import QUERY_ANSWER_HEADLINE, headline_metrics
from evalkit.track.secrets import mask_text, scrub, scrub_json, secret_env_values
from evalkit.track.trace_documents import (
    DOCUMENTS,
    EVIDENCE_DOCS,
    EXPECTED_IDS,
    PASSAGE_CHARS,
    TEXT_CHARS,
    documents_at,
    documents_of,
)

logger = logging.getLogger(__name__)

TRACES_PER_BATCH = 200      # traces per log_spans request
LINKS_PER_CALL = 100        # MLflow's limit for link_traces_to_run
MAX_ITEMS = 10              # list items kept in span inputs/outputs (the rest is counted)
MAX_STRING = 300            # characters kept of one string
MAX_JSON = 4000             # characters of one span's outputs, as JSON
TOP_DOCS = 10               # documents listed in the root span's outputs
SOURCE_ID = "evalkit"       # the assessments' source (type CODE)
SOURCE_RUN_ID = "mlflow.assessment.sourceRunId"   # assessment metadata MLflow's evaluate also sets
SOURCE_RUN = "mlflow.sourceRun"                   # trace metadata: the run a trace came from

SPAN_TYPES = {Role.RETRIEVER: "CHAIN", Role.RERANKER: "RERANKER", Role.GUARD: "GUARDRAIL",
              Role.GENERATOR: "LLM", Role.ROUTER: "AGENT", Role.GRADER: "EVALUATOR", Role.CHECKER: "EVALUATOR"}
"""MLflow span type of each node role (the UI shows an icon per type); others: CHAIN.

A retriever node's span is a CHAIN: the trace's one RETRIEVER span is ``documents`` (what the
answer was written from, as documents), the span MLflow's scorers and evalkit's read."""


EXAMPLES = 10               # queries traced beside the misses under the "misses" policy
POLICIES = ("misses", "all")


@dataclass
class TraceLogResult:
    """What :func:`log_traces` did for one variant."""

    logged: int
    skipped: int
    trace_ids: list[str]
    seconds: float
    chosen: str = ""
    store_cpu: float = 0.0      # CPU seconds of this process inside MLflow's calls (start_trace, log_spans, links)

    def note(self) -> str:
        return (f"logged {self.logged} trace(s)" + (f", {self.skipped} query(s) not traced" if self.skipped else "")
                + (f" ({self.chosen})" if self.chosen else ""))


def is_miss(result: QueryResult, retrieval: Sequence[str]) -> bool:
    """A query worth a trace: it failed, a retrieval metric is 0, or its answer is hallucinated or wrong."""
    m = result.metrics
    return (result.error is not None or result.outcome == "failed" or any(m.get(k) == 0 for k in retrieval)
            or bool(m.get("hallucinated")) or m.get("answer_correctness") == 0)


def select_traced(results: Sequence[QueryResult], policy: str = "all", limit: int | None = None,
                  examples: int = EXAMPLES) -> tuple[list[QueryResult], str]:
    """The queries to trace, in eval-set order, and a phrase saying which.

    ``all``: every query. ``misses``: every query :func:`is_miss` flags, plus the first
    ``examples`` others (so a filter such as ``feedback.hit_at_5 < 1`` finds every miss).
    ``limit`` then keeps the first ``limit`` of those.
    """
    if policy not in POLICIES:
        raise ValueError(f"trace policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    chosen, phrase = list(results), "every query"
    if policy == "misses":
        retrieval = [n for n in assessed_metrics(results) if n not in QUERY_ANSWER_HEADLINE]
        misses = {r.query_id for r in results if is_miss(r, retrieval)}
        others = [r.query_id for r in results if r.query_id not in misses][:examples]
        keep = misses | set(others)
        chosen = [r for r in results if r.query_id in keep]
        phrase = f"the {len(misses)} misses/failures and the first {len(others)} others"
    if limit is not None:
        chosen, phrase = chosen[:limit], f"{phrase}, at most {limit}"
    return chosen, phrase


# ---------------------------------------------------------------------------- summarising


def shorten(value: Any, max_items: int = MAX_ITEMS, max_string: int = MAX_STRING) -> Any:
    """Lists cut to ``max_items`` (``{"n", "first"}``), strings to ``max_string`` characters, recursively."""
    if isinstance(value, dict):
        if set(value) == {"n", "first"} and isinstance(value["first"], list):  # a list compact() cut already
            return {"n": value["n"], "first": [shorten(v, max_items, max_string) for v in value["first"][:max_items]]}
        return {k: shorten(v, max_items, max_string) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [shorten(v, max_items, max_string) for v in value[:max_items]]
        return {"n": len(value), "first": items} if len(value) > max_items else items
    if isinstance(value, str) and len(value) > max_string:
        return value[:max_string] + f"...({len(value)} chars)"
    return value


def bounded(value: Any, max_json: int = MAX_JSON) -> Any:
    """``value`` itself when its JSON fits ``max_json`` characters, else a truncated JSON preview."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= max_json:
        return value
    return {"truncated": True, "json_chars": len(text), "preview": text[:max_json]}


# ---------------------------------------------------------------------------- building a trace


def _hex_id(*parts: str, bits: int) -> int:
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[: bits // 8], "big") or 1


def mlflow_trace_id(run_id: str, query_id: str) -> str:
    """The MLflow trace id of ``query_id`` in child run ``run_id``: ``tr-`` + 32 hex digits, deterministic."""
    return "tr-" + format(_hex_id(run_id, query_id, bits=128), "032x")


def step_window(event: dict[str, Any], order: int) -> tuple[int, int]:
    """``(start, end)`` in ns of one trace event: its start, plus the time it really took here.

    ``elapsed_ms`` (the wall time in this variant; ~0 for a reused result) when recorded,
    else ``duration_ms``. ``order`` ns are added so equal clock readings keep step order.
    """
    start = int(float(event["started_at"]) * 1e9) + order
    took = event.get("elapsed_ms")
    took = float(event.get("duration_ms") or 0.0) if took is None else float(took)
    return start, start + max(0, int(took * 1e6))


def build_spans(result: QueryResult, variant: str, run_id: str, secrets: Sequence[str] | None = None) -> list[Any]:
    """The finished MLflow spans of one query: a root span, then one per node execution (step order).

    ``secrets``: the secret environment variables' values (``None``: read them here);
    nothing of them reaches a span. Returns an empty list for a query without trace events.
    """
    from mlflow.entities import Span
    from mlflow.tracing.constant import SpanAttributeKey
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

    events = sorted(result.trace, key=lambda e: e.get("step", 0))
    if not events:
        return []
    secrets = secret_env_values() if secrets is None else secrets
    otel_trace = _hex_id(run_id, result.query_id, bits=128)
    trace_id = "tr-" + format(otel_trace, "032x")
    resource = Resource.get_empty()

    def context(span_id: int) -> Any:
        return SpanContext(trace_id=otel_trace, span_id=span_id, is_remote=False,
                           trace_flags=TraceFlags(TraceFlags.SAMPLED))

    def span(name: str, span_id: int, parent: int | None, start: int, end: int, span_type: str,
             inputs: Any, outputs: Any, attributes: dict[str, Any], error: str | None, limit: int = MAX_JSON) -> Any:
        attrs = {SpanAttributeKey.REQUEST_ID: json.dumps(trace_id), SpanAttributeKey.SPAN_TYPE: json.dumps(span_type),
                 SpanAttributeKey.INPUTS: scrub_json(bounded(inputs, limit), secrets),
                 SpanAttributeKey.OUTPUTS: scrub_json(bounded(outputs, limit), secrets),
                 **{k: scrub_json(v, secrets) for k, v in attributes.items() if v is not None}}
        status = Status(StatusCode.ERROR, scrub(error, secrets)) if error else Status(StatusCode.OK)
        return Span(ReadableSpan(
            name=mask_text(name, secrets), context=context(span_id), parent=context(parent) if parent else None,
            start_time=start, end_time=end, resource=resource, status=status, attributes=attrs))

    root_id = _hex_id(trace_id, "root", bits=64)
    spans, times, previous = [], [], "start"
    for i, e in enumerate(events):
        start, end = step_window(e, i)
        times.append((start, end))
        err = e.get("error")
        error = f"{err.get('type', 'Error')}: {err.get('message', '')}" if err else None
        spans.append(span(
            str(e["node"]), _hex_id(trace_id, str(e.get("step", i)), bits=64), root_id, start, end,
            SPAN_TYPES.get(event_role(e), "CHAIN"),  # type: ignore[arg-type]
            {"query_id": result.query_id, "step": e.get("step"), "from": previous},
            {"wrote": shorten(e.get("wrote") or {})},
            {"evalkit.node_type": e.get("type"), "evalkit.step": e.get("step"),
             "evalkit.duration_ms": round(float(e.get("duration_ms") or 0.0), 3),
             "evalkit.elapsed_ms": None if e.get("elapsed_ms") is None else round(float(e["elapsed_ms"]), 3),
             "evalkit.reused": bool(e.get("reused")), "evalkit.edge": e.get("edge"),
             "evalkit.edge_reason": e.get("edge_reason"), "evalkit.error": error and shorten(error)}, error))
        previous = str(e["node"])
    err = result.error
    error = f"{err.get('type', 'Error')} at node {err.get('node')}: {err.get('message', '')}" if err else None
    answer = (result.generation or {}).get("answer")
    outputs = {"outcome": result.outcome, "error": error and shorten(error),
               "retrieved": [d["doc_id"] for d in result.retrieved[:TOP_DOCS]],
               "final": [d["doc_id"] for d in result.reranked[:TOP_DOCS]]}
    if answer is not None:
        outputs["answer"] = shorten(mask_text(answer, secrets), max_string=TEXT_CHARS)  # masked, then cut
    whole = 2 * TEXT_CHARS + MAX_JSON  # question / answer fit whole up to TEXT_CHARS: the trace's request / response
    root = span(variant, root_id, None, min(s for s, _ in times), max(e for _, e in times), "CHAIN",
                {"query_id": result.query_id, "question": shorten(mask_text(result.question, secrets), max_string=TEXT_CHARS)}, outputs,
                {"evalkit.variant": variant, "evalkit.query_id": result.query_id, "evalkit.outcome": result.outcome,
                 "evalkit.path": trace_path(result), "evalkit.gold_doc_ids": shorten(result.gold_doc_ids),
                 "evalkit.metrics": result.metrics or None}, error, limit=whole)
    docs, kind = documents_of(result, secrets)
    at = documents_at(events, times)
    spans.append(span(DOCUMENTS, _hex_id(trace_id, DOCUMENTS, bits=64), root_id, at, at, "RETRIEVER",
                      {"query": shorten(mask_text(result.question, secrets), max_string=TEXT_CHARS)}, docs,
                      {"evalkit.documents": kind}, None, limit=EVIDENCE_DOCS * (PASSAGE_CHARS + 200) + MAX_JSON))
    return [root, *spans]


def trace_path(result: QueryResult) -> str:
    """The nodes a query went through, ``retrieve>rerank>guard``."""
    return ">".join(str(e["node"]) for e in sorted(result.trace, key=lambda e: e.get("step", 0)))


def _tag(value: str) -> str:
    return value if len(value) <= 250 else value[:247] + "..."


def trace_info(result: QueryResult, spans: Sequence[Any], variant: str, experiment_id: str, run_id: str,
               metrics: Sequence[str]) -> Any:
    """The ``TraceInfo`` of one query's spans: tags, source run, state and one Feedback per metric in ``metrics``."""
    from mlflow.entities import (
        AssessmentSource,
        Expectation,
        Feedback,
        TraceInfo,
        TraceLocation,
        TraceState,
    )

    root = spans[0]
    source = AssessmentSource(source_type="CODE", source_id=SOURCE_ID)
    feedback: list[Any] = [Feedback(name=mlflow_metric_name(m), value=float(v), source=source,
                                    trace_id=root.trace_id, span_id=root.span_id, metadata={SOURCE_RUN_ID: run_id})
                           for m in metrics if (v := result.metrics.get(m)) is not None]
    if result.gold_known:  # the gold ids, where mlflow.genai.evaluate finds a trace's expectations
        feedback.append(Expectation(name=EXPECTED_IDS, value=result.gold_grades if result.gold_relevance
                                    else list(result.gold_doc_ids), source=source, trace_id=root.trace_id,
                                    span_id=root.span_id, metadata={SOURCE_RUN_ID: run_id}))
    tags = {"mlflow.traceName": _tag(result.query_id), "evalkit.variant": _tag(variant),
            "evalkit.outcome": _tag(result.outcome or ""), "evalkit.path": _tag(trace_path(result))}
    return TraceInfo(trace_id=root.trace_id, trace_location=TraceLocation.from_experiment_id(experiment_id),
                     request_time=root.start_time_ns // 1_000_000,
                     execution_duration=(root.end_time_ns - root.start_time_ns) // 1_000_000,
                     state=TraceState.ERROR if result.error else TraceState.OK,
                     trace_metadata={SOURCE_RUN: run_id}, tags=tags, assessments=feedback)


# ---------------------------------------------------------------------------- logging


def assessed_metrics(results: Sequence[QueryResult]) -> list[str]:
    """The per-query metrics logged as assessments: every retrieval metric, then the answer headline ones."""
    return headline_metrics(sorted({m for r in results for m in r.metrics}), QUERY_ANSWER_HEADLINE)


def log_traces(tracking_uri: str, experiment_id: str, run_id: str, variant: str,
               results: Sequence[QueryResult], limit: int | None = None,
               batch: int = TRACES_PER_BATCH, metrics: Sequence[str] | None = None,
               checkpoint: Callable[[], None] = lambda: None, policy: str = "all") -> TraceLogResult:
    """Log one MLflow trace per query of ``results`` (the first ``limit``), linked to run ``run_id``.

    Args:
        tracking_uri: the store to write to (the same as the run's; never the global URI).
        experiment_id: the experiment of ``run_id``.
        run_id: the variant's child run; traces are linked to it.
        variant: the variant name (root span name, ``evalkit.variant`` tag).
        results: the variant's per-query results, in eval-set order.
        limit: trace at most this many queries (the first ones); ``None`` for all.
        batch: traces per ``log_spans`` request.
        policy: which queries to trace before ``limit`` (:func:`select_traced`).
        metrics: per-query metrics logged as assessments; ``None`` for :func:`assessed_metrics`.
        checkpoint: called before each trace; raises to stop between two MLflow calls.

    Returns:
        How many traces were logged, how many queries were skipped (over ``limit`` or
        without trace events), their trace ids, and the seconds it took.
    """
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow import MlflowClient
    from mlflow.tracing.client import TracingClient

    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    t0 = time.perf_counter()
    chosen, phrase = select_traced(results, policy, limit)
    metrics = assessed_metrics(results) if metrics is None else list(metrics)
    secrets = secret_env_values()
    tracing = TracingClient(tracking_uri)
    client = MlflowClient(tracking_uri=tracking_uri)
    ids: list[str] = []
    pending: list[Any] = []
    pending_ids: list[str] = []

    store_cpu = 0.0

    def flush() -> None:
        nonlocal store_cpu
        if pending:
            c = time.process_time()
            tracing.log_spans(experiment_id, list(pending))
            for i in range(0, len(pending_ids), LINKS_PER_CALL):
                client.link_traces_to_run(pending_ids[i:i + LINKS_PER_CALL], run_id)
            store_cpu += time.process_time() - c
            ids.extend(pending_ids)
            pending.clear()
            pending_ids.clear()

    for r in chosen:
        checkpoint()
        spans = build_spans(r, variant, run_id, secrets)
        if not spans:
            continue
        info = trace_info(r, spans, variant, experiment_id, run_id, metrics)
        c = time.process_time()
        tracing.start_trace(info)
        store_cpu += time.process_time() - c
        pending.extend(spans)
        pending_ids.append(spans[0].trace_id)
        if len(pending_ids) >= batch:
            flush()
    flush()
    seconds = time.perf_counter() - t0
    logger.info("variant %s: %d trace(s) logged in %.2f s", variant, len(ids), seconds)
    return TraceLogResult(logged=len(ids), skipped=len(results) - len(ids), trace_ids=ids, seconds=seconds,
                          chosen="" if policy == "all" and limit is None else phrase, store_cpu=store_cpu)


def log_variant_traces(client: Any, tracking_uri: str, experiment_id: str, run_id: str, variant: str,
                       results: Sequence[QueryResult], limit: int | None = None,
                       checkpoint: Callable[[], None] = lambda: None, policy: str = "all") -> TraceLogResult | None:
    """:func:`log_traces` for a variant's run: never raises.

    Traces are a view of what ``per_query.jsonl`` already holds, so a failure is logged
    as a warning and recorded in the run's ``evalkit.traces`` tag instead of failing the run.
    """
    try:
        done = log_traces(tracking_uri, experiment_id, run_id, variant, results, limit=limit, checkpoint=checkpoint,
                          policy=policy)
        note = done.note()
    except Exception as exc:  # noqa: BLE001 - optional view; the run and its artifacts are logged already
        logger.warning("variant %s: MLflow traces not logged (%s: %s)", variant, type(exc).__name__, exc)
        done, note = None, scrub(f"failed: {type(exc).__name__}: {exc}"[:500])
    try:
        client.set_tag(run_id, "evalkit.traces", note)
    except Exception as exc:  # noqa: BLE001
        logger.warning("variant %s: could not tag run %s: %s", variant, run_id, exc)
    return done
