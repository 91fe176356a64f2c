"""Each query's node trace as an MLflow trace: one span per node execution, linked to its variant's run.

For every query of a variant (up to ``limit``), the trace holds::

    root span  "<variant>"   inputs {query_id, question}; outputs {outcome, error, top documents,
                              answer}; attributes evalkit.variant/query_id/outcome/path/metrics
      span "retrieve"        one per node execution, in step order (a node that runs twice
      span "rerank"          appears twice); attributes evalkit.node_type, evalkit.step,
      span "guard"           evalkit.duration_ms, evalkit.edge, evalkit.edge_reason,
                              evalkit.error; outputs {"wrote": the trace's compact ``wrote``
                              dict, shortened}; status ERROR when the node raised

Start and end times are the ones the engine recorded (``started_at`` and
``duration_ms`` of each ``TraceEvent``), so the MLflow timeline shows real latencies.
Trace tags: ``mlflow.traceName`` = query id, ``evalkit.variant``, ``evalkit.query_id``,
``evalkit.outcome``, ``evalkit.path`` (``retrieve>rerank>guard``); search them with
``MlflowClient.search_traces(run_id=child_run_id, filter_string="tags.evalkit.outcome = 'failed'")``.

How it is written (MLflow 3.17): spans are built as finished ``mlflow.entities.Span``
objects and sent with ``TracingClient.log_spans`` (the store creates each trace from
its root span) in batches, then linked to the child run with
``MlflowClient.link_traces_to_run``. The fluent/``MlflowClient.start_trace`` API is not
used: it exports through the process-global tracer to the *global* tracking URI
(asynchronously, dropping traces with a warning when that store lacks the
experiment) and took ~200 ms per trace here. Trace and span ids are derived from the
child run id and the query id, so logging is deterministic and needs no RNG.

Nothing secret reaches a span: everything a span holds goes through
:func:`evalkit.redact.redact_obj` (keys that name secrets, credentials in URLs, key-shaped
strings, and the values of secret environment variables are masked).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.graph.events import event_role
from evalkit.graph.schema import Role
from evalkit.records import QueryResult
from evalkit.redact import redact_obj, secret_env_values

logger = logging.getLogger(__name__)

TRACES_PER_BATCH = 500      # traces per log_spans request
LINKS_PER_CALL = 100        # MLflow's limit for link_traces_to_run
MAX_ITEMS = 10              # list items kept in span inputs/outputs (the rest is counted)
MAX_STRING = 300            # characters kept of one string
MAX_JSON = 4000             # characters of one span's outputs, as JSON
TOP_DOCS = 10               # documents listed in the root span's outputs

SPAN_TYPES = {Role.RETRIEVER: "RETRIEVER", Role.RERANKER: "RERANKER", Role.GUARD: "GUARDRAIL",
              Role.GENERATOR: "LLM", Role.ROUTER: "AGENT", Role.GRADER: "EVALUATOR", Role.CHECKER: "EVALUATOR"}
"""MLflow span type of each node role (the UI shows an icon per type); others: CHAIN."""

@dataclass
class TraceLogResult:
    """What :func:`log_traces` did for one variant."""

    logged: int
    skipped: int
    trace_ids: list[str]
    seconds: float

    def note(self) -> str:
        return f"logged {self.logged} trace(s)" + (f", {self.skipped} query(s) not traced" if self.skipped else "")


# ---------------------------------------------------------------------------- summarising


def scrub(value: Any, secrets: Sequence[str] = ()) -> Any:
    """A copy of ``value`` with secret keys masked and secrets in strings masked (:func:`evalkit.redact.redact_obj`).

    ``secrets`` are literal values to mask as well (the values of secret environment variables).
    """
    if isinstance(value, tuple):
        value = list(value)
    return redact_obj(value, list(secrets))


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


def _hex_id(*parts: str, bits: int) -> int:
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[: bits // 8], "big") or 1


def mlflow_trace_id(run_id: str, query_id: str) -> str:
    """The MLflow trace id of ``query_id`` in child run ``run_id``: ``tr-`` + 32 hex digits, deterministic."""
    return "tr-" + format(_hex_id(run_id, query_id, bits=128), "032x")


def build_spans(result: QueryResult, variant: str, run_id: str, secrets: Sequence[str] = ()) -> list[Any]:
    """The finished MLflow spans of one query: a root span, then one per node execution (step order).

    Returns an empty list for a query without trace events.
    """
    from mlflow.entities import Span
    from mlflow.tracing.constant import SpanAttributeKey
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

    events = sorted(result.trace, key=lambda e: e.get("step", 0))
    if not events:
        return []
    otel_trace = _hex_id(run_id, result.query_id, bits=128)
    trace_id = "tr-" + format(otel_trace, "032x")
    resource = Resource.get_empty()

    def context(span_id: int) -> Any:
        return SpanContext(trace_id=otel_trace, span_id=span_id, is_remote=False,
                           trace_flags=TraceFlags(TraceFlags.SAMPLED))

    def span(name: str, span_id: int, parent: int | None, start: int, end: int, span_type: str,
             inputs: Any, outputs: Any, attributes: dict[str, Any], error: str | None) -> Any:
        attrs = {SpanAttributeKey.REQUEST_ID: trace_id, SpanAttributeKey.SPAN_TYPE: span_type,
                 SpanAttributeKey.INPUTS: bounded(scrub(inputs, secrets)),
                 SpanAttributeKey.OUTPUTS: bounded(scrub(outputs, secrets)),
                 **{k: scrub(v, secrets) for k, v in attributes.items() if v is not None}}
        status = Status(StatusCode.ERROR, scrub(error, secrets)) if error else Status(StatusCode.OK)
        return Span(ReadableSpan(
            name=name, context=context(span_id), parent=context(parent) if parent else None,
            start_time=start, end_time=end, resource=resource, status=status,
            attributes={k: json.dumps(v, ensure_ascii=False, default=str) for k, v in attrs.items()}))

    root_id = _hex_id(trace_id, "root", bits=64)
    spans, times, previous = [], [], "start"
    for i, e in enumerate(events):
        start = int(float(e["started_at"]) * 1e9) + i  # +i ns keeps the order of equal clock readings
        end = start + max(0, int(float(e.get("duration_ms") or 0.0) * 1e6))
        times.append((start, end))
        err = e.get("error")
        error = f"{err.get('type', 'Error')}: {err.get('message', '')}" if err else None
        spans.append(span(
            str(e["node"]), _hex_id(trace_id, str(e.get("step", i)), bits=64), root_id, start, end,
            SPAN_TYPES.get(event_role(e), "CHAIN"),  # type: ignore[arg-type]
            {"query_id": result.query_id, "step": e.get("step"), "from": previous},
            {"wrote": shorten(e.get("wrote") or {})},
            {"evalkit.node_type": e.get("type"), "evalkit.step": e.get("step"),
             "evalkit.duration_ms": round(float(e.get("duration_ms") or 0.0), 3), "evalkit.edge": e.get("edge"),
             "evalkit.edge_reason": e.get("edge_reason"), "evalkit.error": error and shorten(error)}, error))
        previous = str(e["node"])
    path = ">".join(str(e["node"]) for e in events)
    err = result.error
    error = f"{err.get('type', 'Error')} at node {err.get('node')}: {err.get('message', '')}" if err else None
    answer = (result.generation or {}).get("answer")
    outputs = {"outcome": result.outcome, "error": error and shorten(error),
               "retrieved": [d["doc_id"] for d in result.retrieved[:TOP_DOCS]],
               "final": [d["doc_id"] for d in result.reranked[:TOP_DOCS]]}
    if answer is not None:
        outputs["answer"] = shorten(answer)
    tags = {"mlflow.traceName": result.query_id, "evalkit.variant": variant, "evalkit.query_id": result.query_id,
            "evalkit.outcome": result.outcome or "", "evalkit.path": path}
    root = span(variant, root_id, None, min(s for s, _ in times), max(e for _, e in times), "CHAIN",
                {"query_id": result.query_id, "question": shorten(result.question)}, outputs,
                {"evalkit.variant": variant, "evalkit.query_id": result.query_id, "evalkit.outcome": result.outcome,
                 "evalkit.path": path, "evalkit.gold_doc_ids": shorten(result.gold_doc_ids),
                 "evalkit.metrics": result.metrics or None,
                 **{f"{SpanAttributeKey.TRACE_TAG_PREFIX}{k}": _tag(v) for k, v in tags.items()}}, error)
    return [root, *spans]


def _tag(value: str) -> str:
    return value if len(value) <= 250 else value[:247] + "..."


# ---------------------------------------------------------------------------- logging


def log_traces(tracking_uri: str, experiment_id: str, run_id: str, variant: str,
               results: Sequence[QueryResult], limit: int | None = None,
               batch: int = TRACES_PER_BATCH) -> TraceLogResult:
    """Log one MLflow trace per query of ``results`` (the first ``limit``), linked to run ``run_id``.

    Args:
        tracking_uri: the store to write to (the same as the run's; never the global URI).
        experiment_id: the experiment of ``run_id``.
        run_id: the variant's child run; traces are linked to it.
        variant: the variant name (root span name, ``evalkit.variant`` tag).
        results: the variant's per-query results, in eval-set order.
        limit: trace at most this many queries (the first ones); ``None`` for all.
        batch: traces per ``log_spans`` request.

    Returns:
        How many traces were logged, how many queries were skipped (over ``limit`` or
        without trace events), their trace ids, and the seconds it took.
    """
    import time

    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow import MlflowClient
    from mlflow.tracing.client import TracingClient

    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    t0 = time.perf_counter()
    chosen = list(results) if limit is None else list(results)[:limit]
    secrets = secret_env_values()
    tracing = TracingClient(tracking_uri)
    client = MlflowClient(tracking_uri=tracking_uri)
    ids: list[str] = []
    pending: list[Any] = []
    pending_ids: list[str] = []

    def flush() -> None:
        if pending:
            tracing.log_spans(experiment_id, list(pending))
            for i in range(0, len(pending_ids), LINKS_PER_CALL):
                client.link_traces_to_run(pending_ids[i:i + LINKS_PER_CALL], run_id)
            ids.extend(pending_ids)
            pending.clear()
            pending_ids.clear()

    for r in chosen:
        spans = build_spans(r, variant, run_id, secrets)
        if not spans:
            continue
        pending.extend(spans)
        pending_ids.append(spans[0].trace_id)
        if len(pending_ids) >= batch:
            flush()
    flush()
    seconds = time.perf_counter() - t0
    logger.info("variant %s: %d trace(s) logged in %.2f s", variant, len(ids), seconds)
    return TraceLogResult(logged=len(ids), skipped=len(results) - len(ids), trace_ids=ids, seconds=seconds)


def log_variant_traces(client: Any, tracking_uri: str, experiment_id: str, run_id: str, variant: str,
                       results: Sequence[QueryResult], limit: int | None = None) -> TraceLogResult | None:
    """:func:`log_traces` for :func:`evalkit.track.log_invocation`: never raises.

    Traces are a view of what ``per_query.jsonl`` already holds, so a failure is logged
    as a warning and recorded in the run's ``evalkit.traces`` tag instead of failing the run.
    """
    try:
        done = log_traces(tracking_uri, experiment_id, run_id, variant, results, limit=limit)
        note = done.note()
    except Exception as exc:  # noqa: BLE001 - optional view; the run and its artifacts are logged already
        logger.warning("variant %s: MLflow traces not logged (%s: %s)", variant, type(exc).__name__, exc)
        done, note = None, f"failed: {type(exc).__name__}: {exc}"[:500]
    try:
        client.set_tag(run_id, "evalkit.traces", note)
    except Exception as exc:  # noqa: BLE001
        logger.warning("variant %s: could not tag run %s: %s", variant, run_id, exc)
    return done
