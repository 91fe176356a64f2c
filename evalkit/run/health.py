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
  metrics alone. An empty answer from the user's own system (a file scored by ``evalkit score``,
  a ``python_generate`` or ``http_generate`` node) is one too: that system most likely failed,
  and counted as a correct abstention it would flatter unanswerable questions (a scored file's
  row flagged ``abstained: true`` stays a refusal);
- a generator (an LLM, or the user's system) whose reply is an error message, not an answer
  (:mod:`evalkit.text.error_replies`: a gateway page, provider error JSON, a traceback,
  "当前分组上游负载已饱和，请稍后再试"; cause ``error_reply``). It would be judged as a hallucination,
  or pass for a correct abstention. The finding that decides is the answer's final one
  (``generation.abstention``): an eval set's ``not_patterns`` that keep the reply as an
  answer (``NAME.abstention.yaml``) keep the query healthy.

A query that stopped on an error is *failed*, counted apart (``n_failed``). Reads records
only (trace events), so finished runs and scored outputs are judged the same way.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.graph.schema import LLM_FALLBACK
from evalkit.nodes.system_outputs import EXTERNAL_FAILURE


def degradations(trace: Sequence[Mapping[str, Any]], answer: Mapping[str, Any] | None = None
                 ) -> list[dict[str, Any]]:
    """What degraded a query: ``[{node, step, cause, failed_calls, tries}]`` in step order ([] when healthy).

    ``answer``: the final abstention finding of the query's answer (after the eval set's patterns),
    read instead of what the generator that wrote the answer recorded.
    """
    out: list[dict[str, Any]] = []
    last = _answer_event(trace) if answer else None
    for i, e in enumerate(trace):
        if not isinstance(e, Mapping):
            continue
        llm = e.get("llm") or {}
        failed = int(llm.get("failures") or 0)
        wrote: Mapping[str, Any] = w if isinstance(w := e.get("wrote"), Mapping) else {}
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
        unusable = _unusable_answer(e, llm, wrote, answer if i == last else None)
        if unusable:
            causes.append(unusable)
        for cause in dict.fromkeys(causes):
            out.append({"node": e.get("node"), "step": e.get("step"), "cause": cause, "failed_calls": failed,
                        "tries": tries})
    return out


UNUSABLE_ANSWERS = {"empty": "empty_answer", "content_filter": "content_filter", "error_reply": "error_reply"}
"""Abstention reasons (:mod:`evalkit.text.abstention`) of a reply that carried no answer -> cause."""
NEED_LLM_CALL = frozenset({"empty", "content_filter"})
"""Reasons that count only when the generator called an LLM (its fixed refusal, written without one, is healthy)
or is the user's own system (a scored file's answer, :data:`SCORED_EVENT`, or an ``external`` node such as
``http_generate``: evalkit does not see its calls, and an empty answer there most likely means it failed); an
error reply counts from any generator."""
SCORED_EVENT = "external"
"""The trace event type of an answer read from a file by ``evalkit score`` (:mod:`evalkit.scoring.scorer`)."""


def _answer_event(trace: Sequence[Mapping[str, Any]]) -> int | None:
    """Index of the generator event that wrote the query's final answer (the last one to write ``answer``)."""
    for i in range(len(trace) - 1, -1, -1):
        e = trace[i]
        if isinstance(e, Mapping) and e.get("role") == "generator" and "answer" in (e.get("wrote") or {}):
            return i
    return None


def _unusable_answer(event: Mapping[str, Any], llm: Mapping[str, Any], wrote: Mapping[str, Any],
                     final: Mapping[str, Any] | None = None) -> str | None:
    """The cause when a generator event's reply was no usable answer (empty, content filter, an error
    message), else None; ``final``: the answer's final finding, read instead of the one the event wrote."""
    if event.get("role") != "generator":
        return None
    finding = final if final is not None else wrote.get("abstention")
    if not isinstance(finding, Mapping):
        return None
    reason = str(finding.get("reason") or "")
    if reason in NEED_LLM_CALL and not int(llm.get("calls") or 0) and not _from_users_system(event):
        return None
    return UNUSABLE_ANSWERS.get(reason)


def _from_users_system(event: Mapping[str, Any]) -> bool:
    """Whether a trace event's outputs came from the user's own system (a scored file's answer, a node declared
    ``external``: ``python_generate``, ``http_generate``), whose model calls evalkit does not see."""
    kind = str(event.get("type") or "")
    if kind == SCORED_EVENT:
        return True
    from evalkit.graph.node import node_types  # the engine's registry, only for a node's event

    cls = node_types().get(kind)
    return bool(cls is not None and cls.external)


def query_degradations(result: Any) -> list[dict[str, Any]]:
    """A finished query's degradations: its record's (``[]``: healthy), else (not recorded: records written before
    this field) its trace's, read with the answer's final finding (``generation.abstention``)."""
    found = getattr(result, "degraded", None)
    if found is not None:
        return list(found)
    finding = (getattr(result, "generation", None) or {}).get("abstention")
    return degradations(result.trace, finding if isinstance(finding, Mapping) and finding else None)


def is_degraded(result: Any) -> bool:
    """Whether a finished query was degraded (records written before this field are judged by their trace)."""
    return bool(query_degradations(result))


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
        if not isinstance(stats, Mapping):
            continue
        failed = int(stats.get("llm_failures") or 0)
        if failed:
            out.append({"index": name, "cause": "index_llm_failures", "failed": failed, "of": int(meta.get("n") or 0),
                        "transient": int(stats.get("llm_failures_transient") or 0)})
    return out
