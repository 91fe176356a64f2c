"""Per-tool diagnostics of agent-scheduler variants: hand counts from hand-made traces, and compare's output
on a real scheduler run."""
from __future__ import annotations

import math

import pytest
import yaml
from click.testing import CliRunner

from evalkit.analysis.tool_diag import format_tools, has_tools, percentile, tool_diagnostics

from .conftest import qr, real_run


def _event(stats: dict, tool_hits: dict, cls: str = "open_semantic", source: str = "rule",
           fallback: bool = False) -> dict:
    def rows(docs):
        return [[f"{d}#0", d, 1.0 / (i + 1)] for i, d in enumerate(docs)]
    wrote = {"tool_stats": stats, "tool_hits": {t: rows(d) for t, d in tool_hits.items()},
             "scheduler_class": cls, "scheduler_source": source}
    if fallback:
        wrote["llm_fallback"] = {"node": "s", "attempt": 1, "kind": "timeout", "message": "x"}
    return {"step": 0, "node": "s", "type": "agent_scheduler", "role": "retriever", "started_at": 0.0,
            "duration_ms": 1.0, "wrote": wrote, "edge": "end", "edge_reason": "default", "error": None}


def test_counts_latency_and_gold_contributions_by_hand():
    results = [
        # q1: dense and bm25 called; gold g1 in the final top list, only bm25 has it
        qr("q1", ["g1"], retrieved=["g1", "a", "b"], trace=[_event(
            {"dense": {"hits": 2, "supplied": 2, "unique": 0, "latency_ms": 10.0},
             "bm25": {"hits": 3, "supplied": 3, "unique": 1, "latency_ms": 2.0}},
            {"dense": ["a", "b"], "bm25": ["g1", "a", "b"]})]),
        # q2: bm25 only, chosen by the llm; gold g2 not retrieved at all: no gold contribution
        qr("q2", ["g2"], retrieved=["c"], trace=[_event(
            {"bm25": {"hits": 1, "supplied": 1, "unique": 1, "latency_ms": 4.0}}, {"bm25": ["c"]},
            cls="exact_term", source="llm")]),
        # q3: unanswerable; the llm failed, default class
        qr("q3", [], retrieved=["a"], trace=[_event(
            {"dense": {"hits": 1, "supplied": 1, "unique": 1, "latency_ms": 30.0}}, {"dense": ["a"]},
            source="default", fallback=True)]),
        qr("q4", ["a"], retrieved=["a"], trace=[]),  # another kind of variant's query: no scheduler event
    ]
    d = tool_diagnostics(results)
    assert d["queries"] == 3 and d["executions"] == 3 and d["llm_fallbacks"] == 1
    assert d["classes"] == {"exact_term": 1, "open_semantic": 2}
    assert d["sources"] == {"default": 1, "llm": 1, "rule": 1}
    dense, bm25 = d["tools"]["dense"], d["tools"]["bm25"]
    assert dense["calls"] == 2 and dense["supplied_mean"] == 1.5 and dense["unique_mean"] == 0.5
    assert dense["unique_total"] == 1 and dense["gold_supplied"] == 0 and dense["gold_unique"] == 0
    assert bm25["calls"] == 2 and bm25["supplied_mean"] == 2.0 and bm25["unique_total"] == 2
    assert bm25["gold_supplied"] == 1 and bm25["gold_unique"] == 1
    assert dense["latency_ms_mean"] == 20.0 and dense["latency_ms_p50"] == 10.0 and dense["latency_ms_p95"] == 30.0
    assert bm25["latency_ms_mean"] == 3.0
    text = format_tools("v", d)
    assert "bm25   called 2x; supplies 2.00 docs/call, 1.00 that no other tool had (2 in all)" in text
    assert "decided by: default 1, llm 1, rule 1; llm fallbacks 1" in text
    assert has_tools(results) and not has_tools(results[3:])


def test_nearest_rank_percentiles():
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert percentile(values, 50) == 3.0 and percentile(values, 95) == 5.0 and percentile(values, 20) == 1.0
    assert math.isnan(percentile([], 50))


@pytest.mark.integration
def test_compare_prints_tool_diagnostics_of_a_real_scheduler_run(tiny, tmp_path):
    from evalkit.cli import cli

    cfg = {"name": "sched", "nodes": {"s": {"type": "agent_scheduler", "params": {
        "graph": None, "weights": {"entity_relation": {"dense": 1.0, "bm25": 1.0}, "exact_term": {"bm25": 1.0},
                                   "open_semantic": {"dense": 1.0, "bm25": 1.0}}}}},
        "edges": {"start": "s", "s": "end"}}
    path = tmp_path / "sched.yaml"
    path.write_text(yaml.safe_dump(cfg))
    run = real_run(tiny["evalset"], [tiny["configs"] / "bm25.yaml", path], tmp_path / "sched.json")
    res = CliRunner().invoke(cli, ["compare", str(run), "--variants", "bm25,sched", "--resamples", "200",
                                   "--json", str(tmp_path / "c.json")])
    assert res.exit_code == 0, res.output
    assert "tool diagnostics: sched (16 scheduler executions over 16 queries" in res.output
    import json

    tools = json.loads((tmp_path / "c.json").read_text())["tools"][0]
    # codes (E-4012, LX-200, LX-300, LX-500) and retry.max_attempts match exact_term (q04, q06, q10, q11, q15):
    # BM25 only; no rule matches the other 11, which take open_semantic: both tools
    assert tools["tools"]["bm25"]["calls"] == 16 and tools["tools"]["dense"]["calls"] == 11
    assert tools["sources"] == {"default": 11, "rule": 5} and tools["classes"] == {"exact_term": 5,
                                                                                  "open_semantic": 11}
