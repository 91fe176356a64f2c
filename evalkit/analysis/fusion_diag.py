"""Fusion diagnostics of hybrid variants, read from the ``retrieve`` node's trace.

The retrieve node records each channel's own ranking in its trace
(``wrote.channel_hits = {"dense": [[passage_id, doc_id, score], ...], "bm25": [...]}``).
From it, without re-running anything:

* **complementarity**: gold documents one channel has in its top 20 (documents, first
  passage counts) that the other channel misses, summed over answerable queries;
* **overlap**: the Jaccard index of the two channels' top-20 document sets, averaged
  over queries;
* **weight sweep** (weighted fusion only): the dense weight ``w`` from 0 to 1 in steps of
  0.1 (BM25 gets ``1 - w``), fused with :func:`evalkit.nodes.fusion.weighted` and the
  node's own normalisation, scored with one metric. The in-sample best weight is
  optimistic (chosen and scored on the same queries), so the weight is also chosen by
  k-fold cross-validation: seeded folds of queries; on each fold the weight that is best
  on the *other* folds is scored on the held-out fold; the CV estimate is the mean of
  those held-out scores. Reported next to the configured weight's score.

Traces written before the trace kept 100 hits hold ``{"n": 100, "first": [...]}``
(the first 50): the sweep then normalises over fewer hits than the node did. The
report says how often re-fusing with the configured weights reproduces the run's own
top 20, which exposes any such drift.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from evalkit.analysis import stats
from evalkit.graph.events import event_role, events_of, wrote
from evalkit.graph.node import node_types
from evalkit.graph.schema import CHANNEL_HITS, QUERIES, Role
from evalkit.metrics import Scoring, order_ranking, parse_metric, score_query
from evalkit.nodes.fusion import Columns, weighted, weighted_documents_grid
from evalkit.records import Hit, QueryResult

TOP_N = 20
WEIGHTS: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(11))


def channel_lists(result: QueryResult) -> tuple[dict[str, list[Any]], bool]:
    """Each channel's ranking from the retrieve trace event as written (``[passage_id, doc_id, score]`` lists),
    and whether the trace was cut short: what :func:`channel_hits` and the diagnostics read."""
    for event in events_of(result.trace, Role.RETRIEVER):
        if CHANNEL_HITS in wrote(event):
            raw = wrote(event)[CHANNEL_HITS]
            if not isinstance(raw, dict):
                return {}, False
            out: dict[str, list[Any]] = {}
            cut = False
            for channel, items in raw.items():
                if isinstance(items, dict):  # compacted: {"n": total, "first": [...]}
                    cut = cut or int(items.get("n", 0)) > len(items.get("first", []))
                    items = items.get("first", [])
                out[channel] = items
            return out, cut
    return {}, False


def channel_hits(result: QueryResult) -> tuple[dict[str, list[Hit]], bool]:
    """Each channel's ranking from the retrieve trace event as ``Hit`` objects, and whether the trace was cut short."""
    lists, cut = channel_lists(result)
    return {c: _hits(items) for c, items in lists.items()}, cut


def _hits(items: list[Any]) -> list[Hit]:
    """A channel list as the trace wrote it (``[passage_id, doc_id, score]`` items) as ``Hit`` objects."""
    return [Hit(str(pid), str(doc), float(score)) for pid, doc, score in items]


def _rewrote_queries(result: QueryResult) -> bool:
    """True when a node before retrieval replaced the queries (channel_hits are then RRF-merged)."""
    for event in result.trace:
        if event_role(event) is Role.RETRIEVER:
            return False
        if QUERIES in wrote(event):
            return True
    return False


def top_docs(hits: Sequence[Hit], n: int = TOP_N) -> list[str]:
    """The first ``n`` distinct documents of a passage ranking."""
    return list(dict.fromkeys(h.doc_id for h in hits))[:n]


def top_listed_docs(items: Sequence[Any], n: int = TOP_N) -> list[str]:
    """:func:`top_docs` of a channel list as the trace wrote it (``[passage_id, doc_id, score]`` items), read
    only as far as its ``n``-th distinct document: no ``Hit`` built for the ~100 items a channel holds."""
    docs: dict[str, None] = {}
    for item in items:
        if len(docs) >= n:
            break
        docs[str(item[1])] = None
    return list(docs)


def is_hybrid(results: Sequence[QueryResult]) -> bool:
    """Whether the variant's retrieve node ran two or more channels."""
    return any(len(channel_lists(r)[0]) >= 2 for r in results[:5])


def channel_diagnostics(results: Sequence[QueryResult], top_n: int = TOP_N) -> dict[str, Any]:
    """Gold documents found by one channel only, and mean top-``top_n`` Jaccard overlap per channel pair."""
    only: dict[str, int] = {}
    only_queries: dict[str, int] = {}
    found: dict[str, int] = {}
    jaccard: dict[str, list[float]] = {}
    n_gold = n_answerable = 0
    truncated = 0
    for r in results:
        lists, cut = channel_lists(r)
        truncated += cut
        if len(lists) < 2:
            continue
        tops = {c: set(top_listed_docs(items, top_n)) for c, items in sorted(lists.items())}
        for a, b in itertools.combinations(sorted(tops), 2):
            union = tops[a] | tops[b]
            jaccard.setdefault(f"{a}/{b}", []).append(len(tops[a] & tops[b]) / len(union) if union else 1.0)
        if not r.gold_doc_ids:
            continue
        n_answerable += 1
        gold = set(r.gold_doc_ids)
        n_gold += len(gold)
        for c, docs in tops.items():
            others = set().union(*(d for o, d in tops.items() if o != c))
            alone = (gold & docs) - others
            found[c] = found.get(c, 0) + len(gold & docs)
            only[c] = only.get(c, 0) + len(alone)
            only_queries[c] = only_queries.get(c, 0) + bool(alone)
    return {"top_n": top_n, "answerable_queries": n_answerable, "gold_documents": n_gold,
            "gold_found": found, "gold_found_only_by": only, "queries_with_gold_only_from": only_queries,
            "jaccard_mean": {k: float(np.mean(v)) for k, v in jaccard.items()},
            "truncated_traces": truncated}


def _retrieve_params(config: Any) -> dict[str, Any] | None:
    if config is None:
        return None
    types = node_types()
    for spec in config.nodes.values():  # the first retriever with fusable channels (the retrieve node's params)
        if types[spec["type"]].role is Role.RETRIEVER and {"dense", "bm25"} & set(spec["params"]):
            return spec["params"]
    return None


def weight_sweep(results: Sequence[QueryResult], config: Any, metric: str = "ndcg@10", folds: int = 5,
                 seed: int = 0, n_resamples: int = 10_000, confidence: float = 0.95,
                 scoring: Any = None) -> dict[str, Any]:
    """Sweep the dense weight of a weighted-fusion variant; in-sample best, CV estimate, configured weight.

    Re-fused rankings are scored as the run scored its own (``scoring``: the run's
    ``evalkit.metrics.Scoring``, relevance grades of each record included).
    Returns ``{"skipped": reason}`` when the variant is not a weighted dense+BM25 fusion.
    """
    scoring = scoring or Scoring()

    params = _retrieve_params(config)
    if params is None:
        return {"skipped": "graph config not available (the configured fusion is unknown)"}
    fusion = params.get("fusion") or {}
    if fusion.get("method", "rrf") != "weighted":
        return {"skipped": f"fusion method is '{fusion.get('method', 'rrf')}', not weighted"}
    if not params.get("dense") or not params.get("bm25"):
        return {"skipped": "weighted fusion needs both a dense and a bm25 channel"}
    parse_metric(metric)
    norm, missing = fusion.get("norm", "minmax"), fusion.get("missing", "min")
    top_k = int(params.get("top_k", 100))
    dw, bw = float(params["dense"].get("weight", 1.0)), float(params["bm25"].get("weight", 1.0))
    configured = dw / (dw + bw) if dw + bw > 0 else 0.5
    grid = sorted(set(WEIGHTS) | {round(configured, 6)})
    weights = [*grid, configured]  # the configured weight last: the check that the sweep reproduces the run
    # a metric cut at k reads a ranking's first k documents; in the pipeline's order those are its first k (trec's
    # order sorts the whole ranking again by score, so it reads all of it); the check reads TOP_N
    depth = max(parse_metric(metric).k, TOP_N) if scoring.ties == "pipeline" else None

    def fused(dense: list[Any], bm25: list[Any]) -> list[list[tuple[str, float]]]:
        """The document ranking each of ``weights`` gives the query, as the run records it."""
        columns = [Columns.of_items(dense), Columns.of_items(bm25)]  # their union and normalised scores made once
        found = weighted_documents_grid(columns, [[w, 1.0 - w] for w in weights], norm, missing, limit=top_k,
                                        documents=depth)
        return [docs if docs is not None else _fuse_hits(dense, bm25, w, norm, missing, top_k, columns)[:depth]
                for w, docs in zip(weights, found or [None] * len(weights), strict=True)]

    def score(scored: list[tuple[str, float]], r: QueryResult) -> float:
        docs = order_ranking(scored, scoring.ties)
        return score_query(docs, docs, r.gold_grades, (metric,), scoring.relevance_level)[metric]

    # each query is fused and scored as it is read, nothing of its channels kept (holding 10,000 queries' lists
    # cost a tenth of the sweep in the collector's passes over them)
    query_ids: list[str] = []
    by_query: list[list[float]] = []
    skipped_rewrite = truncated = reproduced = 0
    for r in results:
        if not r.gold_doc_ids:
            continue
        lists, cut = channel_lists(r)
        if "dense" not in lists or "bm25" not in lists:
            continue
        if _rewrote_queries(r):
            skipped_rewrite += 1
            continue
        truncated += cut
        *by_weight, mine = fused(lists["dense"], lists["bm25"])
        query_ids.append(r.query_id)
        by_query.append([score(docs, r) for docs in by_weight])
        reproduced += [doc for doc, _ in mine][:TOP_N] == [x["doc_id"] for x in r.retrieved[:TOP_N]]
    if not query_ids:
        return {"skipped": "no answerable query has both channels in its trace"}
    in_id_order = sorted(range(len(query_ids)), key=query_ids.__getitem__)  # the folds are drawn over this order
    # (weight, query), each weight's row contiguous: numpy sums a strided row in another order (the last bits)
    scores = np.ascontiguousarray(np.array(by_query, dtype=np.float64)[in_id_order].T)
    means = scores.mean(axis=1)
    best = _best(grid, means, configured)
    ci = grid.index(round(configured, 6))
    n = len(query_ids)
    k = max(2, min(folds, n))
    order = np.random.default_rng(stats.derive_seed(seed, "cv-folds", metric)).permutation(n)
    held_out = np.empty(n)
    chosen: list[float] = []
    for fold in np.array_split(order, k):
        train = np.setdiff1d(np.arange(n), fold)
        w = _best(grid, scores[:, train].mean(axis=1), configured)
        chosen.append(grid[w])
        held_out[fold] = scores[w, fold]
    gain = held_out - scores[ci]
    lo, hi = stats.bootstrap_ci(gain, n_resamples, confidence, stats.derive_seed(seed, "cv-gain", metric))
    return {"metric": metric, "queries": n, "norm": norm, "missing": missing, "folds": k, "seed": seed,
            "grid": grid, "mean_by_weight": [float(x) for x in means],
            "configured_weight": configured, "configured_score": float(means[ci]),
            "in_sample_best_weight": grid[best], "in_sample_best_score": float(means[best]),
            "cv_estimate": float(held_out.mean()), "cv_chosen_weights": chosen,
            "cv_minus_configured": float(gain.mean()), "cv_minus_configured_ci": [lo, hi],
            "reproduced_top20": reproduced, "truncated_traces": truncated, "skipped_rewritten_queries": skipped_rewrite}


def _fuse_hits(dense: list[Any], bm25: list[Any], w: float, norm: str, missing: str, top_k: int,
               columns: list[Columns]) -> list[tuple[str, float]]:
    """One weight's document ranking by :func:`weighted` itself: for rankings its array form does not take."""
    hits = weighted([_hits(dense), _hits(bm25)], [w, 1.0 - w], norm, missing, limit=top_k, columns=columns)
    return [(d["doc_id"], d["score"]) for d in Hit.by_document(hits)]


def _best(grid: Sequence[float], means: np.ndarray, configured: float) -> int:
    """Index of the best mean; ties go to the weight closest to the configured one, then the smaller."""
    top = means.max()
    tied = [i for i, m in enumerate(means) if m >= top - 1e-12]
    return min(tied, key=lambda i: (abs(grid[i] - configured), grid[i]))


def format_fusion(name: str, diag: dict[str, Any], sweep: dict[str, Any] | None) -> str:
    """Plain-text fusion diagnostics of one variant."""
    out = [(f"fusion diagnostics: {name} (top {diag['top_n']} documents per channel, "
            f"{diag['answerable_queries']} answerable queries, {diag['gold_documents']} gold documents)")]
    for c in sorted(diag["gold_found"]):
        out.append(f"  {c:<6} finds {diag['gold_found'][c]} gold docs; {diag['gold_found_only_by'][c]} that no other "
                   f"channel has (in {diag['queries_with_gold_only_from'][c]} queries)")
    for pair_, j in sorted(diag["jaccard_mean"].items()):
        out.append(f"  overlap {pair_}: mean Jaccard of top-{diag['top_n']} doc sets {j:.3f}")
    if diag["truncated_traces"]:
        out.append(f"  note: {diag['truncated_traces']} traces keep only part of each channel's ranking "
                   "(older trace format)")
    if sweep is None:
        return "\n".join(out)
    if "skipped" in sweep:
        out.append(f"  weight sweep: skipped ({sweep['skipped']})")
        return "\n".join(out)
    m = sweep["metric"]
    curve = "  ".join(f"{w:g}:{s:.3f}" for w, s in zip(sweep["grid"], sweep["mean_by_weight"]))
    lo, hi = sweep["cv_minus_configured_ci"]
    out += [f"  weight sweep ({m}, dense weight w, bm25 1-w, {sweep['norm']} norm, {sweep['queries']} queries): {curve}",
            f"    configured w={sweep['configured_weight']:.2f}: {m} {sweep['configured_score']:.4f}",
            (f"    in-sample best w={sweep['in_sample_best_weight']:.2f}: {sweep['in_sample_best_score']:.4f} "
             "(optimistic: chosen and scored on the same queries)"),
            (f"    {sweep['folds']}-fold CV (seed {sweep['seed']}): {sweep['cv_estimate']:.4f}; weights chosen per "
             f"fold {', '.join(f'{w:g}' for w in sweep['cv_chosen_weights'])}"),
            f"    CV minus configured: {sweep['cv_minus_configured']:+.4f} [{lo:+.4f}, {hi:+.4f}]",
            (f"    re-fusing with the configured weights reproduces the run's top 20 for "
             f"{sweep['reproduced_top20']}/{sweep['queries']} queries")]
    if sweep["reproduced_top20"] < sweep["queries"]:
        out.append("    note: not every query reproduces: the trace's channel lists are shorter than the node's "
                   "(min-max runs over fewer hits) or the config changed since the run")
    return "\n".join(out)
