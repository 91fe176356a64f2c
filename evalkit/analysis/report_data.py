"""What a run report shows, computed from the run's records (rendering is ``report_html``).

Per variant:

* **metrics** with seeded bootstrap confidence intervals (the same per-query values as
  ``evalkit compare``: retrieval metrics over answerable queries);
* the **funnel** of answerable queries, each stage a subset of the one before:
  gold in the retrieval top 20 -> gold in the final top 5 -> passed the guard ->
  answered with citations -> supported. Stages a variant cannot have are "n/a" (no
  guard node, no generation);
* a **failure label** per query, the first that applies (:data:`LABELS`);
* **latency** p50/p95 per node (trace ``duration_ms``) and LLM **usage** when recorded;
* the **worst queries**: answerable queries by the primary metric, worst first;
* the **route confusion** of a router variant on an eval set with gold routes
  (``evalkit.metrics.routing``: rows gold route, columns chosen route).

Generation is read in one place (:func:`_generation`): ``QueryResult.generation`` (the
answer, its valid citations, whether it abstained) and the per-query answer metrics of
:mod:`evalkit.metrics.answer` (``hallucinated``, ``faithfulness``, ``answer_f1``, and any
``answer_correctness`` when an LLM judge graded it). Runs without generation show those stages as n/a.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from evalkit.analysis import stats
from evalkit.analysis.direction import sign
from evalkit.analysis.pairing import (
    guard_tripped,
    has_guard,
    metric_names,
    per_query_values,
)
from evalkit.analysis.runs import LoadedRun
from evalkit.graph.events import first_write
from evalkit.graph.schema import GUARD_THRESHOLD, RERANK_MODEL, Role
from evalkit.metrics.routing import route_confusion
from evalkit.records import QueryResult
from evalkit.run.health import is_degraded

RETRIEVAL_DEPTH, FINAL_DEPTH = 20, 5
LABELS = ("failed", "degraded", "retrieval miss", "rerank drop", "ranking miss", "guard abstained", "generator abstained",
          "unsupported claim", "wrong answer", "ok", "abstained (correct)", "answered unanswerable", "not abstained")
"""Failure labels in the order they are tested; the last three are for unanswerable questions."""
CORRECT_F1 = 0.5
PRIMARY_METRICS = ("ndcg@10", "mrr@10", "hit@5", "faithfulness")  # faithfulness: answers scored without rankings
WORST_N = 10


@dataclass
class VariantReport:
    """Everything the report shows about one variant."""

    name: str
    n_queries: int
    n_answerable: int
    n_failed: int
    metrics: dict[str, dict[str, float]]
    funnel: list[dict[str, Any]]
    labels: dict[str, str]
    label_counts: dict[str, int]
    latency: dict[str, dict[str, float]]
    usage: dict[str, dict[str, float]]
    worst: list[dict[str, Any]]
    primary: str | None
    reranker: str | None
    guard_threshold: float | None
    scores: dict[str, list[float]] = field(default_factory=dict)
    traces: dict[str, dict[str, Any]] = field(default_factory=dict)
    route_confusion: dict[str, dict[str, int]] = field(default_factory=dict)  # gold -> chosen -> queries


def _gold_in(ranking: list[dict[str, Any]], gold: set[str], k: int) -> bool:
    return bool(gold & {d["doc_id"] for d in ranking[:k]})


def _events(r: QueryResult) -> list[dict[str, Any]]:
    return [e for e in r.trace if isinstance(e, dict)]


def _generation(r: QueryResult, raw: dict[str, Any]) -> dict[str, bool | None]:
    """``answered``/``cited``/``abstained``/``supported``/``correct`` of one query; None = not applicable.

    From ``QueryResult.generation`` (answer, ``used_documents`` = valid citations,
    ``abstained``) and the per-query answer metrics of ``evalkit.metrics.answer``:
    supported = answered with every checkable claim supported (``hallucinated`` 0 and
    ``faithfulness`` 1); correct = a ``*correctness`` metric (``answer_correctness``, the
    LLM judge's grade) >= 0.5 when one exists,
    else ``answer_f1`` >= :data:`CORRECT_F1` (token F1 with the reference answer).
    """
    gen = r.generation if r.generation is not None else raw.get("generation")
    m = r.metrics
    if not isinstance(gen, dict):
        return {"answered": None, "cited": None, "abstained": None, "supported": None, "correct": None}
    answered = bool(gen.get("answered"))
    halluc = [v for k, v in m.items() if "hallucinat" in k and v is not None]
    faith = [v for k, v in m.items() if "faithfulness" in k and v is not None]
    supported = None
    if answered and (halluc or faith):
        supported = not (any(v > 0 for v in halluc) or any(v < 1 for v in faith))
    graded = [v for k, v in m.items() if k.endswith("correctness") and v is not None]
    correct = None
    if answered and graded:
        correct = all(v >= 0.5 for v in graded)
    elif answered and (f1 := m.get("answer_f1")) is not None:
        correct = f1 >= CORRECT_F1
    return {"answered": answered, "cited": bool(gen.get("used_documents") or gen.get("citations")),
            "abstained": bool(gen.get("abstained")), "supported": supported, "correct": correct}


def failure_label(r: QueryResult, raw: dict[str, Any], reranks: bool) -> str:
    """The first label of :data:`LABELS` that applies to one query."""
    if r.error is not None:
        return "failed"
    if is_degraded(r):
        return "degraded"  # an LLM call failed and the graph fell back: not the pipeline's own answer
    gen = _generation(r, raw)
    if not r.answerable:
        if guard_tripped(r) or gen["abstained"]:
            return "abstained (correct)"
        return "answered unanswerable" if gen["answered"] else "not abstained"
    gold = set(r.gold_doc_ids)  # empty when no gold labels are known (gold_known False): no retrieval label
    if gold and not _gold_in(r.reranked or r.retrieved, gold, FINAL_DEPTH):
        if not _gold_in(r.retrieved, gold, RETRIEVAL_DEPTH):
            return "retrieval miss"
        return "rerank drop" if reranks else "ranking miss"
    if guard_tripped(r):
        return "guard abstained"
    if gen["abstained"]:
        return "generator abstained"
    if gen["supported"] is False:
        return "unsupported claim"
    if gen["correct"] is False:
        return "wrong answer"
    return "ok"


def funnel(results: list[QueryResult], rows: list[dict[str, Any]], guard: bool) -> list[dict[str, Any]]:
    """Cumulative stages over answerable queries; ``count`` None = n/a for this variant."""
    pairs = [(r, raw) for r, raw in zip(results, rows) if r.gold_doc_ids]
    n = len(pairs)
    gens = [_generation(r, raw) for r, raw in pairs]
    stages: list[tuple[str, Any, str]] = [
        (f"gold in retrieval top {RETRIEVAL_DEPTH}",
         lambda r, g: _gold_in(r.retrieved, set(r.gold_doc_ids), RETRIEVAL_DEPTH), ""),
        (f"gold in final top {FINAL_DEPTH}",
         lambda r, g: _gold_in(r.reranked or r.retrieved, set(r.gold_doc_ids), FINAL_DEPTH), ""),
        ("passed guard", (lambda r, g: not guard_tripped(r)) if guard else None, "no guard node"),
        ("answered with citations", (lambda r, g: bool(g["answered"] and g["cited"]))
         if any(g["answered"] is not None for g in gens) else None, "no generation in this run"),
        ("supported", (lambda r, g: bool(g["supported"])) if any(g["supported"] is not None for g in gens)
         else None, "no support judgement in this run"),
    ]
    alive = [True] * n
    out: list[dict[str, Any]] = []
    for name, test, why in stages:
        if test is None:
            out.append({"stage": name, "count": None, "share": None, "note": why})
            continue
        alive = [a and bool(test(r, g)) for a, (r, _), g in zip(alive, pairs, gens)]
        count = sum(alive)
        out.append({"stage": name, "count": count, "share": count / n if n else float("nan"), "note": ""})
    return out


def latency(results: list[QueryResult]) -> dict[str, dict[str, float]]:
    """p50/p95 of ``duration_ms`` per node (in first-seen order), and of the whole query (``total``)."""
    per_node: dict[str, list[float]] = {}
    totals = []
    for r in results:
        total = 0.0
        for e in _events(r):
            ms = float(e.get("duration_ms") or 0.0)
            per_node.setdefault(str(e.get("node")), []).append(ms)
            total += ms
        totals.append(total)
    per_node["total"] = totals
    return {k: {"p50": float(np.percentile(v, 50)), "p95": float(np.percentile(v, 95)), "n": len(v)}
            for k, v in per_node.items() if v}


def usage(results: list[QueryResult]) -> dict[str, dict[str, float]]:
    """LLM usage summed per purpose (``generate``, ``judge``...) from each record's ``usage``; {} when none."""
    out: dict[str, dict[str, float]] = {}
    for r in results:
        for purpose, u in sorted((r.usage or {}).items()):
            if isinstance(u, dict):
                acc = out.setdefault(purpose, {})
                for k, v in u.items():
                    if isinstance(v, (int, float)):
                        acc[k] = acc.get(k, 0) + v
    return out


def variant_report(run: LoadedRun, name: str, n_resamples: int = 2000, confidence: float = 0.95,
                   seed: int = 0, worst_n: int = WORST_N) -> VariantReport:
    """Compute one variant's part of the report."""
    return variant_reports(run, [name], n_resamples, confidence, seed, worst_n)[0]


def variant_reports(run: LoadedRun, names: Sequence[str], n_resamples: int = 2000, confidence: float = 0.95,
                    seed: int = 0, worst_n: int = WORST_N) -> list[VariantReport]:
    """:func:`variant_report` of each of ``names``: a variant's bootstrap intervals run on the resampling threads
    (:func:`evalkit.analysis.stats.start`) while the next variants are read and labelled; each keeps its seed."""
    started = [_started_report(run, name, n_resamples, confidence, seed, worst_n) for name in names]
    for report, samples, cis in started:
        report.metrics = {m: {"mean": float(x.mean()), "low": lo, "high": hi, "n": len(x)}
                          for (m, x), (lo, hi) in zip(samples.items(), cis.results(), strict=True)}
    return [report for report, _, _ in started]


def _started_report(run: LoadedRun, name: str, n_resamples: int, confidence: float, seed: int,
                    worst_n: int) -> tuple[VariantReport, dict[str, np.ndarray], stats.Started]:
    """One variant's report without its metrics, the per-query values of each metric, and their intervals started."""
    results, rows = run.results(name), run.rows(name)
    names = metric_names(results)
    samples: dict[str, np.ndarray] = {}
    for m in names:
        values = per_query_values(results, m)
        if values:
            samples[m] = np.array([values[q] for q in sorted(values)])
    cis = stats.start([partial(stats.bootstrap_ci, x, n_resamples, confidence,
                               stats.derive_seed(seed, "report", name, m)) for m, x in samples.items()])
    reranks = any(r.rerank_top1 is not None for r in results)
    labels = {r.query_id: failure_label(r, raw, reranks) for r, raw in zip(results, rows)}
    primary = next((m for m in PRIMARY_METRICS if m in names), names[0] if names else None)
    order = {lab: i for i, lab in enumerate(LABELS)}
    answerable = [r for r in results if r.answerable]  # with gold documents, or answers scored without gold labels
    direction = sign(primary) if primary else 1
    worst = sorted(answerable, key=lambda r: (direction * (r.metrics.get(primary) or 0.0) if primary else 0.0,
                                              order[labels[r.query_id]], r.query_id))[:worst_n]
    scores: dict[str, list[float]] = {"answerable, gold in top 5": [], "answerable, gold not in top 5": [],
                                      "unanswerable": []}
    for r in results:
        if r.rerank_top1 is None:
            continue
        key = "unanswerable" if not r.gold_doc_ids else (
            "answerable, gold in top 5" if _gold_in(r.reranked, set(r.gold_doc_ids), FINAL_DEPTH)
            else "answerable, gold not in top 5")
        scores[key].append(float(r.rerank_top1))
    threshold = first_write(results, Role.GUARD, GUARD_THRESHOLD)
    counts = Counter(labels.values())
    report = VariantReport(
        name=name, n_queries=len(results), n_answerable=len(answerable),
        n_failed=sum(r.error is not None for r in results), metrics={},
        funnel=funnel(results, rows, has_guard(results)), labels=labels,
        label_counts={lab: counts[lab] for lab in LABELS if counts[lab]},
        latency=latency(results), usage=usage(results),
        worst=[{"query_id": r.query_id, "question": r.question, "label": labels[r.query_id], "gold": r.gold_doc_ids,
                "top5": [d["doc_id"] for d in (r.reranked or r.retrieved)[:FINAL_DEPTH]],
                "metrics": dict(r.metrics), "error": r.error} for r in worst],
        primary=primary, reranker=first_write(results, Role.RERANKER, RERANK_MODEL),
        guard_threshold=None if threshold is None else float(threshold),
        scores=scores if reranks else {},
        traces={r.query_id: {"trace": r.trace, "outcome": r.outcome, "error": r.error} for r in worst},
        route_confusion=route_confusion(results))
    return report, samples, cis
