"""Degraded queries: a call that failed for good, whatever edge the graph took next.

An LLM that times out, answers 429/500/garbage or is down does not fail the query when
the graph routes around it (an ``on_error: {generate: fallback}`` edge, a rewrite or grade
node falling back to its offline rule). The numbers of such a query describe the
fallback, not the pipeline, so the query is **degraded**: recorded per query with the
node, the cause and the tries, counted per variant, left out of the answer metrics (its
answer is the fallback's), and checked by ``evalkit gate``.

A query is degraded when a trace event shows one of:

- an LLM call that failed after its retries (the event's ``llm.failures`` > 0; this
  includes a reused result whose original execution had a failure);
- a failure the node recorded and worked around (each item it wrote to ``llm_fallback``,
  with its ``kind``: ``timeout``, ``rate_limited``, ``server_error``, ``bad_json``...);
- a call to the user's system that failed and was recorded (an ``http`` node with
  ``on_failure: record`` writes ``external_failure``, with its ``kind`` and ``attempts``);
- a node error after which the graph went on through its ``on_error`` edge (cause: the
  error's ``kind`` when it has one, else its type);
- a generator whose LLM answered HTTP 200 with nothing usable: an empty answer (cause
  ``empty_answer``) or a provider refusal (``finish_reason`` ``content_filter``, cause
  ``content_filter``). The call "succeeded", but the answer describes the endpoint, not the
  pipeline: a candidate whose provider returns nothing must not pass a gate on retrieval
  metrics alone.

A query that stopped on an error is *failed*, counted apart (``n_failed``). Reads records
only (trace events), so finished runs and scored outputs are judged the same way.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.graph.schema import LLM_FALLBACK
from evalkit.nodes.system_outputs import EXTERNAL_FAILURE


def degradations(trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What degraded a query: ``[{node, step, cause, failed_calls, tries}]`` in step order ([] when healthy)."""
    out: list[dict[str, Any]] = []
    for e in trace:
        if not isinstance(e, Mapping):
            continue
        llm = e.get("llm") or {}
        failed = int(llm.get("failures") or 0)
        wrote = e.get("wrote") if isinstance(e.get("wrote"), Mapping) else {}
        recorded = wrote.get(LLM_FALLBACK)
        external = wrote.get(EXTERNAL_FAILURE)
        err = e.get("error")
        causes: list[str] = []
        tries = int(llm.get("calls") or 0) + int(llm.get("retries") or 0)
        if isinstance(recorded, Mapping):
            causes.append(str(recorded.get("kind") or "llm_failure"))
        if isinstance(external, Mapping):
            causes.append(str(external.get("kind") or EXTERNAL_FAILURE))
            tries += int(external.get("attempts") or 0)
        if err and e.get("edge_reason") == "on_error":
            causes.append(str(err.get("kind") or err.get("type") or "error"))
        if failed and not causes:
            causes.append(str((err or {}).get("kind") or "llm_failure"))
        unusable = _unusable_answer(e, llm, wrote)
        if unusable:
            causes.append(unusable)
        for cause in dict.fromkeys(causes):
            out.append({"node": e.get("node"), "step": e.get("step"), "cause": cause, "failed_calls": failed,
                        "tries": tries})
    return out


UNUSABLE_ANSWERS = {"empty": "empty_answer", "content_filter": "content_filter"}
"""Abstention reasons (:mod:`evalkit.judges.abstention`) of an LLM reply that carried no answer -> cause."""


def _unusable_answer(event: Mapping[str, Any], llm: Mapping[str, Any], wrote: Mapping[str, Any]) -> str | None:
    """The cause when a generator event's LLM call returned no usable answer (empty, content filter), else None.

    Only events that called an LLM count: a generator that had no evidence and wrote its fixed
    refusal without asking a model is healthy.
    """
    if event.get("role") != "generator" or not int(llm.get("calls") or 0):
        return None
    finding = wrote.get("abstention")
    if not isinstance(finding, Mapping):
        return None
    return UNUSABLE_ANSWERS.get(str(finding.get("reason") or ""))


def is_degraded(result: Any) -> bool:
    """Whether a finished query was degraded (records written before this field are judged by their trace)."""
    return bool(getattr(result, "degraded", None)) or bool(degradations(result.trace))


def degraded_metrics(results: Sequence[Any]) -> dict[str, float]:
    """Per variant: ``degraded`` (queries), ``degraded_share`` and ``degraded.<cause>`` (queries with that cause)."""
    if not results:
        return {}
    causes: Counter[str] = Counter()
    n = 0
    for r in results:
        found = r.degraded or []
        if found:
            n += 1
            causes.update({d["cause"] for d in found})
    out = {"degraded": float(n), "degraded_share": n / len(results)}
    out.update({f"degraded.{cause}": float(k) for cause, k in sorted(causes.items())})
    return out


def index_degradations(index: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What degraded a variant's indexes when they were built: ``[{index, cause, failed, of, transient}]``.

    An index built with an LLM (the entity graph's ``mode: llm`` extraction,
    :mod:`evalkit.index.llm_entities`) counts in its ``stats`` the passages whose call failed for
    good (``llm_failures``; ``transient`` of them may not fail again). Those passages add nothing to
    the index, so every query searches a partial one while no query's trace shows it. ``index`` is
    a variant's index metadata as the run summary keeps it (``VariantSummary.index``); [] when healthy.
    """
    out: list[dict[str, Any]] = []
    for name, meta in index.items():
        stats = meta.get("stats") if isinstance(meta, Mapping) else None
        failed = int(stats.get("llm_failures") or 0) if isinstance(stats, Mapping) else 0
        if failed and isinstance(stats, Mapping):
            out.append({"index": name, "cause": "index_llm_failures", "failed": failed, "of": int(meta.get("n") or 0),
                        "transient": int(stats.get("llm_failures_transient") or 0)})
    return out
