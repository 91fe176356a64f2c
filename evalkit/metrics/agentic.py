"""Agentic metrics: what reflection loops (rewrite -> retrieve -> grade / self-check -> rewrite) earn and cost.

Defined once, here; docs/metrics.md lists them and ``reports/agentic.md`` uses them.
Everything is read from a finished query's record (its trace, gold documents and answer
metrics): the graph knows nothing of metrics.

**Attempts.** ``query_rewrite`` sets ``state["attempt"]`` (1, 2, ...) and the engine
stamps every trace event with it; events before the first rewrite (attempt 0) belong to
attempt 1. A query **looped** when it reached attempt 2 or more.

**Per-attempt ground truth.** The documents of attempt *n* are those of its last
``retrieved`` write (retrieval stage) and its last ``reranked`` write (final stage; the
retrieval ranking when there is no rerank), reduced to documents in rank order.
``hit@5`` reads the final ranking, ``recall@20`` the retrieval ranking (the conventions
of ``evalkit.metrics.registry``). Answerable queries only.

**Gate.** The graph's own gate of an attempt is every gate decision a node of that attempt
wrote: the fields the state schema marks as gates, with the values that pass
(``grade_decision``: ``generate``; ``self_check_decision``: ``pass`` or ``skipped``;
:func:`evalkit.graph.schema.gate_fields`). An attempt without a gate decision passes.

**Good final outcome.** Answerable query: final ``hit@5`` = 1 and, when the variant
generates answers, a supported answer: answered, no unsupported claim, judge not failed.
Unanswerable query: a correct abstention (variants that generate; for retrieval-only
variants the outcome is undefined and the query is left out of the counts below).

**What the loop changed: the counterfactual.** A loop is credited only with what it changed.
The counterfactual outcome of a query is the one it would have had if the loop had stopped
after attempt 1, i.e. with ``max_attempts: 1``: a query whose first gate passed did not loop
(same outcome); a query whose first gate failed would have taken the exhausted path there,
the fallback (a correct refusal exactly when the question is unanswerable; for a
retrieval-only variant, the first attempt's ``hit@5``). When the gate recorded that its
exhausted path generates instead (``grade_if_last: generate``, ``on_exhausted: generate``
with kept evidence), the counterfactual answer is unknown and the query is undetermined. A
``self_check`` whose ``exhausted`` decision is routed somewhere other than the fallback is
outside this definition (the bundled configs route it to the fallback).
``tests/agentic/test_counterfactual.py`` checks the counts against the same configs run with
``max_attempts: 1``.

**Rescue accounting** (per query, over looped queries whose final and counterfactual
outcomes are both defined):

- ``rescued`` = looped AND final outcome good AND counterfactual outcome not good.
  ``rescued_new_docs`` counts the rescues whose first attempt had hit@5 = 0 (the loop
  found gold documents the first attempt missed, not only a gate's false alarm).
- ``harmed`` = looped AND final outcome not good AND counterfactual outcome good.
- ``futile`` = looped AND the final outcome equals the counterfactual one (the loop cost
  time and calls and changed nothing, e.g. an unanswerable question the gate refused on
  attempt 1 that still ends in the fallback after 3 attempts).
- ``loop_undetermined``: looped queries with an undefined final or counterfactual outcome.

**Gate refusals**, reported apart from rescues: ``gate_refused`` = the query ended in the
fallback after its gate failed on the last attempt; per variant ``gate_refusals`` and
``gate_refusals_unanswerable`` (of them, on unanswerable questions: correct refusals).

Per query (``per_query.jsonl`` ``metrics``; floats, ``None`` = undefined): ``attempts``,
``looped``, ``first_attempt_hit@5``, ``first_attempt_recall@20``, ``attemptN_hit@5`` and
``attemptN_recall@20`` for N >= 2, ``gate_failed_first``, ``final_good``,
``counterfactual_good``, ``rescued``, ``harmed``, ``futile``, ``loop_undetermined``, ``gate_refused``,
``loop_ms`` / ``loop_llm_calls`` / ``loop_tokens`` (duration,
LLM calls and tokens of the trace events of attempts >= 2: the extra cost of the loop;
a node execution reused from another variant of the same invocation, ``reused`` in the
trace, took ~0 ms, so compare loop times with work sharing off),
``futile_rewrites`` (rewrites identical to an earlier attempt's) and ``llm_fallbacks``
(node executions where an LLM failed and the offline path was taken). Router-only
graphs get ``llm_fallbacks`` alone.

Per variant (``aggregate_loops``): ``loop_rate`` (share of queries that looped),
``attempts_mean``, the counts ``rescued``, ``rescued_new_docs``, ``harmed``, ``futile``,
``loop_undetermined``, ``gate_refusals``, ``gate_refusals_unanswerable``, and the rates
over the looped queries with a defined outcome (``rescue_rate``,
``harm_rate``, ``futile_rate``), ``gate_fail_rate_first`` (share of queries whose first
attempt failed its gate), ``first_attempt_hit@5`` / ``first_attempt_recall@20`` (means over
answerable queries; compare with ``hit@5`` / ``recall@20``), ``attemptN_hit@5`` /
``attemptN_recall@20`` (means over the answerable queries that reached attempt N) with
``attemptN_queries``, ``n_first_attempt_queries`` / ``n_first_attempt_hits`` (the answerable
queries, and those of them whose first attempt had hit@5 = 1: the counts behind
``first_attempt_hit@5``, which :mod:`evalkit.analysis.loop_reading` puts in words), ``loop_ms`` / ``loop_llm_calls`` / ``loop_tokens`` (totals) and
``loop_ms_mean`` (per query), ``loop_ms_per_rescue`` and ``loop_llm_calls_per_rescue``
(total loop cost / rescues; absent without rescues), ``futile_rewrites``,
``llm_fallbacks`` and, for router graphs, ``route_share.<label>``.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalkit.graph.events import events_of, is_event, roles_in, wrote
from evalkit.graph.schema import (
    AGENTIC_ROLES,
    GRADE_IF_LAST,
    LLM_FALLBACK,
    LOOP_ROLES,
    OUTCOME_FALLBACK,
    RERANKED,
    RETRIEVED,
    REWRITE_FUTILE,
    ROUTE,
    Role,
    gate_fields,
)
from evalkit.metrics.catalog import NamedMetric, register_metrics
from evalkit.metrics.retrieval import hit, recall
from evalkit.records import QueryResult

HIT_K, RECALL_K = 5, 20
_FLAGS = ("rescued", "rescued_new_docs", "harmed", "futile", "loop_undetermined")


def attempt_of(event: Mapping[str, Any]) -> int:
    """The attempt a trace event belongs to (events before the first rewrite: attempt 1)."""
    return max(int(event.get("attempt") or 0), 1)


def _docs(value: Any) -> list[str]:
    """Document ids, first occurrence kept, of a compacted ranking (``[[id, doc, score], ...]``)."""
    if isinstance(value, Mapping):  # a long list, compacted to {"n": ..., "first": [...]}
        value = value.get("first", [])
    out: list[str] = []
    for item in value or []:
        if isinstance(item, (list, tuple)) and len(item) >= 2 and item[1] not in out:
            out.append(str(item[1]))
    return out


def attempt_rankings(trace: Sequence[Mapping[str, Any]]) -> dict[int, tuple[list[str], list[str]]]:
    """``{attempt: (retrieval-stage documents, final documents)}`` from a query's trace."""
    stages: dict[int, dict[str, list[str]]] = {}
    for e in trace:
        written = wrote(e)
        for key in (RETRIEVED, RERANKED):
            if key in written:
                stages.setdefault(attempt_of(e), {})[key] = _docs(written[key])
    return {a: (s.get("retrieved", s.get("reranked", [])), s.get("reranked", s.get("retrieved", [])))
            for a, s in sorted(stages.items())}


def _gate_failed(trace: Sequence[Mapping[str, Any]], attempt: int) -> bool:
    gates = gate_fields()
    for e in trace:
        if attempt_of(e) != attempt or e.get("error"):
            continue
        for name, value in wrote(e).items():
            if name in gates and value is not None and value not in gates[name]:
                return True
    return False


def _events_cost(events: Iterable[Mapping[str, Any]]) -> tuple[float, float, float]:
    ms = calls = tokens = 0.0
    for e in events:
        ms += float(e.get("duration_ms") or 0.0)
        llm = e.get("llm") or {}
        calls += float(llm.get("calls") or 0)
        tokens += float(llm.get("tokens_in") or 0) + float(llm.get("tokens_out") or 0)
    return round(ms, 3), calls, tokens


def final_good(result: QueryResult) -> bool | None:
    """The good final outcome of the module docstring; None when undefined."""
    gen, m = result.generation, result.metrics
    if result.degraded:
        return None  # its outcome is the fallback's, not the loop's (evalkit.run.health)
    if not result.gold_doc_ids:
        return None if gen is None else bool(gen.get("abstained"))
    if not hit([d["doc_id"] for d in result.reranked], result.gold_doc_ids, HIT_K):
        return False
    if gen is None:
        return True
    if m.get("judge_failed"):
        return None
    return bool(gen.get("answered")) and not (m.get("claims_unsupported") or 0) and not m.get("hallucinated")


def counterfactual_good(result: QueryResult, trace: Sequence[Mapping[str, Any]],
                        rankings: Mapping[int, tuple[list[str], list[str]]], good: bool | None) -> bool | None:
    """The good outcome had the loop stopped after attempt 1 (module docstring); None when unknown."""
    if not _gate_failed(trace, 1):
        return good  # the first gate passed: nothing to stop
    if any(wrote(e).get(GRADE_IF_LAST) == "generate" for e in trace if attempt_of(e) == 1):
        return None  # the exhausted path would have generated an answer nobody saw
    gold = result.gold_doc_ids
    if result.generation is None:  # retrieval-only: the first attempt's final ranking
        return None if not gold else bool(hit(rankings.get(1, ([], []))[1], gold, HIT_K))
    return not gold  # the fallback: a correct refusal exactly when the question is unanswerable


def query_loop_metrics(result: QueryResult) -> dict[str, float | None]:
    """Per-query loop metrics (module docstring); ``{}`` when no agentic node ran."""
    trace = [e for e in result.trace if is_event(e)]
    roles = roles_in(trace)
    if not roles & AGENTIC_ROLES:
        return {}
    out: dict[str, float | None] = {
        "llm_fallbacks": float(sum(1 for e in trace if wrote(e).get(LLM_FALLBACK)))}
    if not roles & LOOP_ROLES:
        return out
    attempts = max((attempt_of(e) for e in trace), default=1)
    looped = attempts > 1
    gold = result.gold_doc_ids
    rankings = attempt_rankings(trace)
    for n in range(1, attempts + 1):
        retrieved, final = rankings.get(n, ([], []))
        prefix = "first_attempt" if n == 1 else f"attempt{n}"
        out[f"{prefix}_hit@{HIT_K}"] = hit(final, gold, HIT_K) if gold else None
        out[f"{prefix}_recall@{RECALL_K}"] = recall(retrieved, gold, RECALL_K) if gold else None
    good = final_good(result)
    gate_failed = _gate_failed(trace, 1)
    first_hit = out[f"first_attempt_hit@{HIT_K}"]
    stop1 = counterfactual_good(result, trace, rankings, good) if looped else good
    decided = looped and good is not None and stop1 is not None
    flags = {"rescued": decided and good is True and stop1 is False,
             "rescued_new_docs": decided and good is True and stop1 is False and first_hit == 0.0,
             "harmed": decided and good is False and stop1 is True,
             "futile": decided and good == stop1}
    last = max((attempt_of(e) for e in trace), default=1)
    refused = result.outcome == OUTCOME_FALLBACK and _gate_failed(trace, last)
    ms, calls, tokens = _events_cost(e for e in trace if attempt_of(e) >= 2)
    out.update({"attempts": float(attempts), "looped": float(looped), "gate_failed_first": float(gate_failed),
                "final_good": None if good is None else float(good),
                "counterfactual_good": None if stop1 is None else float(stop1),
                **{k: (float(v) if decided or not looped else None) for k, v in flags.items()},
                "loop_undetermined": float(looped and not decided), "gate_refused": float(refused),
                "loop_ms": ms, "loop_llm_calls": calls, "loop_tokens": tokens,
                "futile_rewrites": float(sum(1 for e in trace if wrote(e).get(REWRITE_FUTILE)))})
    return out


def add_loop_metrics(results: Iterable[QueryResult]) -> None:
    """Add ``query_loop_metrics`` to each result's ``metrics`` (idempotent), so per_query.jsonl and MLflow carry them."""
    for r in results:
        r.metrics.update(query_loop_metrics(r))


def _mean(values: Sequence[float | None]) -> float | None:
    defined = [v for v in values if v is not None and not math.isnan(v)]
    return math.fsum(defined) / len(defined) if defined else None


def aggregate_loops(results: Sequence[QueryResult]) -> dict[str, float]:
    """Variant-level loop metrics (module docstring); ``{}`` when no agentic node ran."""
    rows = [(r, query_loop_metrics(r)) for r in results]
    rows = [(r, m) for r, m in rows if m]
    if not rows:
        return {}
    out: dict[str, float | None] = {"llm_fallbacks": math.fsum(m["llm_fallbacks"] or 0 for _, m in rows)}
    routes = [str(wrote(e)[ROUTE]) for r, _ in rows for e in events_of(r.trace, Role.ROUTER) if ROUTE in wrote(e)]
    for label in sorted(set(routes)):
        out[f"route_share.{label}"] = routes.count(label) / len(rows)
    loops = [m for _, m in rows if "attempts" in m]
    if not loops:
        return {k: v for k, v in out.items() if v is not None}
    looped = [m for m in loops if m["looped"]]
    decided = [m for m in looped if m["rescued"] is not None]
    counts = {k: math.fsum(m[k] or 0 for m in loops) for k in _FLAGS}
    ms, calls = math.fsum(m["loop_ms"] or 0.0 for m in loops), math.fsum(m["loop_llm_calls"] or 0.0 for m in loops)
    out.update({
        "loop_rate": len(looped) / len(loops), "attempts_mean": _mean([m["attempts"] for m in loops]),
        **counts,
        "gate_refusals": math.fsum(m["gate_refused"] or 0.0 for m in loops),
        "gate_refusals_unanswerable": math.fsum(m["gate_refused"] or 0.0 for r, m in rows
                                                if "attempts" in m and not r.gold_doc_ids),
        "rescue_rate": counts["rescued"] / len(decided) if decided else None,
        "harm_rate": counts["harmed"] / len(decided) if decided else None,
        "futile_rate": counts["futile"] / len(decided) if decided else None,
        "gate_fail_rate_first": _mean([m["gate_failed_first"] for m in loops]),
        "loop_ms": round(ms, 3), "loop_ms_mean": round(ms / len(loops), 3), "loop_llm_calls": calls,
        "loop_tokens": math.fsum(m["loop_tokens"] or 0.0 for m in loops),
        "loop_ms_per_rescue": round(ms / counts["rescued"], 3) if counts["rescued"] else None,
        "loop_llm_calls_per_rescue": calls / counts["rescued"] if counts["rescued"] else None,
        "futile_rewrites": math.fsum(m["futile_rewrites"] or 0.0 for m in loops),
    })
    max_attempt = int(max(m["attempts"] or 0.0 for m in loops))
    for n in range(1, max_attempt + 1):
        prefix = "first_attempt" if n == 1 else f"attempt{n}"
        for name in (f"hit@{HIT_K}", f"recall@{RECALL_K}"):
            out[f"{prefix}_{name}"] = _mean([m.get(f"{prefix}_{name}") for m in loops])
        if n == 1:
            firsts = [v for m in loops if (v := m.get(f"first_attempt_hit@{HIT_K}")) is not None]
            out["n_first_attempt_queries"], out["n_first_attempt_hits"] = float(len(firsts)), math.fsum(firsts)
        if n > 1:
            out[f"{prefix}_queries"] = float(sum(1 for m in loops if f"{prefix}_hit@{HIT_K}" in m))
    return {k: v for k, v in out.items() if v is not None}


# The loop and router metrics' printed names, directions and definitions (evalkit.metrics.catalog);
# the order is the agentic table's column order, most important first.
_M = NamedMetric
register_metrics(
    "agentic",
    _M("loop_rate", "none", "share", "share of queries that took a second attempt", header="looped"),
    _M("attempts_mean", "none", "mean", "attempts per query, mean", header="attempts"),
    _M("rescued", "higher", "count", "looped queries whose final outcome is good and whose counterfactual "
       "(stop after attempt 1) is not", header="rescued"),
    _M("harmed", "lower", "count", "looped queries whose final outcome is not good and whose counterfactual is",
       header="harmed"),
    _M("futile", "lower", "count", "looped queries whose final outcome equals the counterfactual one",
       header="futile"),
    _M("gate_refusals", "none", "count", "queries that ended in the fallback after the gate failed on the last "
       "attempt", header="gate-refused"),
    _M("gate_fail_rate_first", "lower", "share", "share of queries whose first attempt failed its gate",
       header="gate-fail(1st)", per_query="gate_failed_first"),
    _M("first_attempt_hit@5", "higher", "share", "hit@5 of the first attempt's final ranking; mean over answerable "
       "queries", header="hit@5(1st)"),
    _M("rescue_rate", "higher", "share", "rescued / looped queries with a defined outcome", header="rescue%",
       per_query="rescued"),
    _M("harm_rate", "lower", "share", "harmed / looped queries with a defined outcome", header="harm%",
       per_query="harmed"),
    _M("futile_rate", "lower", "share", "futile / looped queries with a defined outcome", header="futile%",
       per_query="futile"),
    _M("rescued_new_docs", "higher", "count", "rescues whose first attempt had hit@5 = 0 (the loop found new gold "
       "documents)", header="rescued(new)"),
    _M("loop_ms_mean", "lower", "ms", "duration of attempts >= 2 per query, mean", header="loop ms/q"),
    _M("llm_fallbacks", "lower", "count", "node executions where an LLM failed and the offline path was taken",
       header="llm-fallback"),
    _M("futile_rewrites", "lower", "count", "rewrites identical to an earlier attempt's", header="same-rewrite"),
    _M("first_attempt_recall@20", "higher", "share", "recall@20 of the first attempt's retrieval ranking; mean over "
       "answerable queries", header="recall@20(1st)"),
    # not columns: per-query flags, totals, and the per-attempt family
    _M("attempts", "none", "count", "attempts the query took (per query)", column=False),
    _M("looped", "none", "flag", "1 when the query reached attempt 2 (per query)", column=False),
    _M("gate_failed_first", "lower", "flag", "1 when the first attempt failed its gate (per query)", column=False),
    _M("final_good", "higher", "flag", "1 when the final outcome is good: hit@5 and a supported answer, or a "
       "correct abstention (per query)", column=False),
    _M("counterfactual_good", "none", "flag", "1 when the outcome would have been good had the loop stopped after "
       "attempt 1 (per query)", column=False, descriptive=False),
    _M("loop_undetermined", "none", "count", "looped queries with an undefined final or counterfactual outcome",
       column=False),
    _M("gate_refused", "none", "flag", "1 when the query ended in the fallback after its gate failed on the last "
       "attempt (per query)", column=False, descriptive=False),
    _M("gate_refusals_unanswerable", "none", "count", "gate refusals of unanswerable questions (correct refusals)",
       column=False),
    _M("loop_ms", "lower", "ms", "duration of the trace events of attempts >= 2 (the loop's extra time)",
       column=False, total=True),
    _M("loop_llm_calls", "lower", "calls", "LLM calls of attempts >= 2", column=False, total=True),
    _M("loop_tokens", "lower", "tokens", "LLM tokens of attempts >= 2", column=False, total=True),
    _M("loop_ms_per_rescue", "lower", "ms", "total loop time / rescues (absent without rescues)", column=False),
    _M("loop_llm_calls_per_rescue", "lower", "calls", "total loop LLM calls / rescues (absent without rescues)",
       column=False),
    _M("n_first_attempt_queries", "none", "count", "answerable queries of a looping variant (behind "
       "first_attempt_hit@5)", column=False),
    _M("n_first_attempt_hits", "none", "count", "of them, queries whose first attempt had hit@5 = 1", column=False),
    _M("attempt<N>_hit@5", "higher", "share", "hit@5 of attempt N's final ranking (N >= 2); mean over the answerable "
       "queries that reached it", header="hit@5({0})", pattern=r"attempt(\d+)_hit@5", column=False),
    _M("attempt<N>_recall@20", "higher", "share", "recall@20 of attempt N's retrieval ranking (N >= 2)",
       header="recall@20({0})", pattern=r"attempt(\d+)_recall@20", column=False),
    _M("attempt<N>_queries", "none", "count", "answerable queries that reached attempt N",
       header="queries({0})", pattern=r"attempt(\d+)_queries", column=False),
    source=__name__,
)
register_metrics(
    "routes",
    _M("route_share.<label>", "none", "share", "share of a router graph's queries that took the route <label>",
       header="{0}", pattern=r"route_share\.(.+)", descriptive=False),
    source=__name__,
)
