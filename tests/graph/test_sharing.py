"""Work sharing can never change a number: random graphs and sweeps give identical per-query records
with sharing on and off (and the garbage collector frozen during the query loop or not), on 1 and 2
workers and on Ray; the dry run's estimate is the real sharing.

The per-query records are compared whole (rankings, scores, metrics, answers, judge verdicts,
every trace event's writes and edges); only wall-clock fields (when a step started, how long it
took, whether it was reused, cache hits and latencies of LLM calls) are left out.
"""
from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalkit.evalsets import freeze, load_eval_set
from evalkit.graph import config_from_dict
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import comparable_records as records

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "eval_sets" / "demo_kb.jsonl"
CORPUS = REPO / "eval_sets" / "corpora" / "demo_kb.jsonl"
N_QUERIES = 24


@pytest.fixture(scope="module")
def demo_subset(tmp_path_factory) -> Any:
    """The first ``N_QUERIES`` questions of the bundled demo, as a frozen eval set over the demo corpus."""
    folder = tmp_path_factory.mktemp("subset")
    path = folder / "demo_sub.jsonl"
    path.write_text("".join(DEMO.read_text(encoding="utf-8").splitlines(keepends=True)[:N_QUERIES]), encoding="utf-8")
    freeze(path, corpus=str(CORPUS))
    return load_eval_set(f"{path}@v1")


def run(eval_set: Any, configs: list[dict], out: Path, **options: Any) -> Any:
    loaded = [config_from_dict(copy.deepcopy(c), source=str(out.parent / f"{c['name']}.yaml")) for c in configs]
    return run_eval(eval_set, loaded, RunOptions(output=out, mlflow=False, progress=False, **options),
                    echo=lambda _: None)


# --- the case the issue reported -----------------------------------------------------------------
def graph_after_bm25(name: str, top_k: int) -> dict:
    return {"name": name, "nodes": {
        "retrieve": {"type": "retrieve", "params": {"bm25": {"top_k": top_k}, "top_k": top_k}},
        "graph": {"type": "graph_local", "params": {"link": {"embedding": False}, "fuse_with": "retrieved"}}},
        "edges": {"start": "retrieve", "retrieve": "graph", "graph": "end"}}


def test_graph_fused_with_different_retrievals_is_never_shared(demo_subset, tmp_path: Path):
    variants = [graph_after_bm25("bm25_2_graph", 2), graph_after_bm25("bm25_50_graph", 50)]
    shared = run(demo_subset, variants, tmp_path / "on.json")
    alone = run(demo_subset, variants, tmp_path / "off.json", share_work=False)
    for v in variants:
        assert records(tmp_path / "on.json", v["name"]) == records(tmp_path / "off.json", v["name"])
        assert shared.variants[v["name"]].metrics == alone.variants[v["name"]].metrics
    # the two graph nodes are identical in config, but read different rankings: nothing may be reused
    assert shared.sharing["node_hits"] == 0
    a, b = records(tmp_path / "on.json", "bm25_2_graph"), records(tmp_path / "on.json", "bm25_50_graph")
    assert sum(x != y for x, y in zip(a, b)) >= N_QUERIES // 2  # reuse would have made them equal


def test_scheduler_tools_share_searches_with_retrieve_and_change_no_record(demo_subset, tmp_path: Path):
    """The scheduler's dense and BM25 tools are the retrieve node's channel searches: shared across variants,
    with per-tool latency taken from the search as computed (a wall-clock field) and everything else equal."""
    weights = {"entity_relation": {"dense": 1.0, "bm25": 1.0}, "exact_term": {"bm25": 1.0, "dense": 0.5},
               "open_semantic": {"dense": 1.0, "bm25": 1.0}}
    variants = [
        {"name": "hybrid", "nodes": {"r": {"type": "retrieve", "params": {"dense": {"embedder": "e5"}, "bm25": {}}}},
         "edges": {"start": "r", "r": "end"}},
        {"name": "sched", "nodes": {"s": {"type": "agent_scheduler", "params": {"graph": None, "weights": weights}}},
         "edges": {"start": "s", "s": "end"}},
        {"name": "sched_most_hits", "nodes": {"s": {"type": "agent_scheduler", "params": {
            "graph": None, "weights": weights, "dedupe": {"keep": "most_hits"}, "k": 20}}},
         "edges": {"start": "s", "s": "end"}},
    ]
    shared = run(demo_subset, variants, tmp_path / "on.json")
    run(demo_subset, variants, tmp_path / "off.json", share_work=False)
    for v in variants:
        assert records(tmp_path / "on.json", v["name"]) == records(tmp_path / "off.json", v["name"])
    assert shared.sharing["part_hits"] >= 2 * N_QUERIES  # both schedulers reuse the hybrid's searches
    sched = [json.loads(line) for line in records(tmp_path / "on.json", "sched")]
    stats = [e["wrote"]["tool_stats"] for r in sched for e in r["trace"]]
    assert len(stats) == N_QUERIES and all(set(s) <= {"dense", "bm25"} and s for s in stats)


def test_a_fusion_sweep_writes_the_same_records_when_shared_rankings_are_compacted_each_time(
        demo_subset, tmp_path: Path, monkeypatch):
    """The trace's compact form of a channel search every variant shares is made once (SharedRanking)
    and written once (its JSON spliced into later records); made again for every variant and query
    instead (plain lists, so nothing is spliced either), every record is the same."""
    from evalkit.graph.memo import SharedRanking

    fusions = [{"method": "rrf", "k": 60}, {"method": "rrf", "k": 10},
               {"method": "weighted", "norm": "minmax"}, {"method": "weighted", "norm": "zscore", "missing": "zero"}]
    variants = [{"name": f"fuse{i}", "nodes": {"retrieve": {"type": "retrieve", "params": {
        "dense": {"top_k": 20}, "bm25": {"top_k": 20, "weight": 0.7}, "fusion": f, "top_k": 10}}},
        "edges": {"start": "retrieve", "retrieve": "end"}} for i, f in enumerate(fusions)]
    run(demo_subset, variants, tmp_path / "once.json")
    monkeypatch.setattr(SharedRanking, "compacted", lambda self, compact: compact(list(self)))
    run(demo_subset, variants, tmp_path / "each.json")
    for v in variants:
        once = records(tmp_path / "once.json", v["name"])
        assert once == records(tmp_path / "each.json", v["name"]) and len(once) == N_QUERIES
        channels = [json.loads(line)["trace"][0]["wrote"]["channel_hits"] for line in once]
        assert all(set(c) == {"dense", "bm25"} and c["dense"] and c["bm25"] for c in channels)
        assert sum(len(c["dense"]) == len(c["bm25"]) == 20 for c in channels) > N_QUERIES // 2


# --- random graphs and sweeps ----------------------------------------------------------------------
def random_variants(seed: int) -> list[dict]:
    """A random pipeline over the bundled node types and 2 variants of it that change one parameter each."""
    rng = random.Random(seed)
    mech = random.Random(seed + 1000)  # the retrieval and evidence mechanisms draw apart: base graphs stay as they were
    nodes: dict[str, dict] = {}
    order: list[str] = []
    if rng.random() < 0.4:
        nodes["rewrite"] = {"type": "query_rewrite", "params": {"split": rng.choice([True, False])}}
        order.append("rewrite")
    channels = rng.choice([["bm25"], ["dense"], ["bm25", "dense"]])
    retrieve: dict[str, Any] = {c: {"top_k": rng.choice([5, 20, 50])} for c in channels}
    if channels == ["bm25"]:
        retrieve["bm25"]["tokenizer"] = "auto"
    retrieve["fusion"] = {"method": rng.choice(["rrf", "weighted"]), "k": rng.choice([20, 60])}
    retrieve["top_k"] = rng.choice([20, 50])
    if mech.random() < 0.3:
        retrieve["dedupe"] = {"by": "document", "keep": mech.choice(["best_rank", "most_hits"])}
    nodes["retrieve"] = {"type": "retrieve", "params": retrieve}
    order.append("retrieve")
    if mech.random() < 0.3:
        nodes["mmr"] = {"type": "mmr", "params": {"lambda_mult": mech.choice([0.5, 0.8]), "candidates": 20,
                                                  "relevance": mech.choice(["cosine", "score"])}}
        order.append("mmr")
    if rng.random() < 0.3:
        nodes["graph"] = {"type": "graph_local", "params": {"link": {"embedding": False}, "depth": rng.choice([1, 2]),
                                                            "fuse_with": rng.choice(["retrieved", None])}}
        order.append("graph")
    if rng.random() < 0.6:
        nodes["rerank"] = {"type": "rerank", "params": {"model": "e5", "top_k": rng.choice([5, 10])}}
        order.append("rerank")
    routes: dict[str, Any] = {}
    generate = rng.random() < 0.6
    if "rerank" in nodes and rng.random() < 0.6:
        nodes["guard"] = {"type": "guard", "params": {"threshold": rng.choice([0.8, 0.86, 0.9])}}
        order.append("guard")
        routes["guard"] = {"field": "guard_triggered", "cases": {True: "fallback" if generate else "end"}}
    if generate:
        source = "evidence" if "guard" in nodes else rng.choice(["retrieved", "reranked" if "rerank" in nodes
                                                                 else "retrieved"])
        if mech.random() < 0.4:
            nodes["compress"] = {"type": "compress", "params": {"evidence_from": source, "evidence_k": 5,
                                                                "budget": mech.choice([150, 300])}}
            order.append("compress")
            source = "evidence"
        if source == "evidence" and mech.random() < 0.4:
            nodes["reorder"] = {"type": "reorder", "params": {"k": 5}}
            order.append("reorder")
        nodes["generate"] = {"type": "generate", "params": {"llm": {"backend": "extractive"}, "evidence_from": source}}
        order.append("generate")
    edges = {"start": order[0]}
    for a, b in zip(order, [*order[1:], "end"]):
        edges[a] = b
    if generate:
        if "rewrite" in nodes and rng.random() < 0.5:  # a reflection loop: self-check sends failures back
            nodes["check"] = {"type": "self_check", "params": {"max_attempts": 2}}
            edges["generate"], edges["check"] = "check", "end"
            routes["check"] = {"field": "self_check_decision", "cases": {"retry": "rewrite", "exhausted": "fallback"}}
        if "guard" in nodes or "check" in nodes:
            nodes["fallback"] = {"type": "fallback", "params": {}}
            edges["fallback"] = "end"
    base = {"name": f"g{seed}", "nodes": nodes, "edges": edges, "routes": routes}
    config_from_dict(copy.deepcopy(base))  # every generated pipeline is a valid config
    variants = [base]
    tweaks = [("retrieve", "top_k", [10, 30]), ("retrieve", "fusion", [{"method": "rrf", "k": 5}]),
              ("rerank", "top_k", [3, 8]), ("guard", "threshold", [0.83, 0.88]), ("graph", "depth", [0]),
              ("mmr", "lambda_mult", [0.3, 1.0]), ("compress", "budget", [100, 600]), ("reorder", "k", [2, 3])]
    for i in range(2):
        node, param, values = rng.choice([t for t in tweaks if t[0] in nodes])
        v = copy.deepcopy(base)
        v["name"] = f"g{seed}_v{i}"
        v["nodes"][node]["params"][param] = rng.choice(values)
        variants.append(v)
    return variants


@pytest.mark.parametrize("seed", range(8))
def test_random_sweeps_are_identical_with_sharing_on_and_off_and_on_two_workers(demo_subset, tmp_path: Path,
                                                                                seed: int):
    variants = random_variants(seed)
    (tmp_path / "variants.yaml").write_text(yaml.safe_dump(variants), encoding="utf-8")  # kept for a failure
    # the reference run has every run-level optimisation off: work sharing and the frozen garbage collector
    runs = {"shared_1": {}, "alone_1": {"share_work": False, "gc_freeze": False}, "shared_2": {"workers": 2}}
    for label, options in runs.items():
        run(demo_subset, variants, tmp_path / f"{label}.json", **options)
    for v in variants:
        want = records(tmp_path / "alone_1.json", v["name"])
        assert len(want) == N_QUERIES
        for label in ("shared_1", "shared_2"):
            assert records(tmp_path / f"{label}.json", v["name"]) == want, (label, v["name"])


@pytest.mark.integration
@pytest.mark.parametrize("seed", [1, 4])
def test_random_sweeps_are_identical_on_ray(demo_subset, tmp_path: Path, seed: int):
    pytest.importorskip("ray")
    variants = random_variants(seed)
    run(demo_subset, variants, tmp_path / "local.json")
    run(demo_subset, variants, tmp_path / "ray.json", executor="ray", workers=2)
    for v in variants:
        assert records(tmp_path / "ray.json", v["name"]) == records(tmp_path / "local.json", v["name"])


# --- the dry run estimates exactly what the memo shares (graphs without routes) -----------------------
def test_dry_run_estimate_equals_the_real_sharing(demo_subset, tmp_path: Path):
    from evalkit.run.plan import make_plan

    hybrid = {"dense": {"embedder": "e5"}, "bm25": {}}
    variants = [
        {"name": "rrf", "nodes": {"retrieve": {"type": "retrieve", "params": {**hybrid, "fusion": {"method": "rrf"}}},
                                  "rerank": {"type": "rerank", "params": {"model": "e5"}}},
         "edges": {"start": "retrieve", "retrieve": "rerank", "rerank": "end"}},
        {"name": "rrf_k20", "nodes": {"retrieve": {"type": "retrieve", "params": {**hybrid,
                                                                                 "fusion": {"method": "rrf", "k": 20}}},
                                      "rerank": {"type": "rerank", "params": {"model": "e5"}}},
         "edges": {"start": "retrieve", "retrieve": "rerank", "rerank": "end"}},
        {"name": "rrf_rerank5", "nodes": {"retrieve": {"type": "retrieve", "params": {**hybrid,
                                                                                     "fusion": {"method": "rrf"}}},
                                          "rerank": {"type": "rerank", "params": {"model": "e5", "top_k": 5}}},
         "edges": {"start": "retrieve", "retrieve": "rerank", "rerank": "end"}},
        {"name": "bm25", "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {}}}},
         "edges": {"start": "retrieve", "retrieve": "end"}},
    ]
    configs = [config_from_dict(copy.deepcopy(v)) for v in variants]
    plan = make_plan(demo_subset, configs, "offline", tmp_path / "cache")
    summary = run(demo_subset, variants, tmp_path / "on.json")
    n = N_QUERIES
    # hand count: 7 node executions per query; rrf_rerank5's retrieve is rrf's; rrf_k20's rerank reads another
    # ranking; 4 channel searches needed (rrf: dense+bm25, rrf_k20: dense+bm25 reused, bm25: bm25 reused)
    assert plan.node_executions == 7 * n and plan.node_executions_shared == 6 * n
    assert plan.searches == 5 * n and plan.searches_shared == 2 * n
    stats = summary.sharing
    assert stats["node_misses"] == plan.node_executions_shared and stats["node_hits"] == 1 * n
    assert stats["part_misses"] == plan.searches_shared
    assert stats["part_hits"] == plan.searches - plan.searches_shared


# --- the memo forgets what no later variant can reuse (issue 34: it held every variant's work to the end) -----
def test_forgetting_work_no_later_variant_reuses_changes_no_record_and_no_count(demo_subset, tmp_path: Path,
                                                                                monkeypatch):
    from evalkit.graph.memo import WorkMemo

    variants = random_variants(3) + [graph_after_bm25("late_bm25", 7)]
    held: list[tuple[int, int]] = []
    retain = WorkMemo.retain

    def counted(self, keys):
        before = sum(len(t) for tables in self._nodes.values() for _, t in tables) + len(self._parts)
        retain(self, keys)
        held.append((before, sum(len(t) for tables in self._nodes.values() for _, t in tables) + len(self._parts)))

    monkeypatch.setattr(WorkMemo, "retain", counted)
    forgetting = run(demo_subset, variants, tmp_path / "forgetting.json")
    monkeypatch.setattr(WorkMemo, "retain", lambda self, keys: None)
    keeping = run(demo_subset, variants, tmp_path / "keeping.json")
    assert forgetting.sharing == keeping.sharing and forgetting.sharing["node_hits"] > 0
    for v in variants:
        assert records(tmp_path / "forgetting.json", v["name"]) == records(tmp_path / "keeping.json", v["name"])
    assert len(held) == len(variants) and held[-1][1] == 0          # nothing is left after the last variant
    assert any(after < before for before, after in held[:-1])       # and something went before it
