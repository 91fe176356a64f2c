"""The shipped agentic graph configs: valid, offline, round-trip, and they run end to end."""
from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.evalsets import load_eval_set
from evalkit.graph import config_from_dict, load_graph_config
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import read_results

REPO = Path(__file__).resolve().parents[2]
SHIPPED = ("agentic_reflect", "modular_rag", "router")


def load(name: str):
    return load_graph_config(REPO / "graph_configs" / f"{name}.yaml")


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_config_round_trips(name):
    cfg = load(name)
    assert cfg.name == name
    assert config_from_dict(cfg.to_dict()).to_dict() == cfg.to_dict()


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_configs_are_offline(name):
    for node in load(name).nodes.values():
        p = node["params"]
        if node["type"] == "generate":
            assert p["llm"]["backend"] == "extractive"
        if node["type"] in ("grade", "query_rewrite", "intent_router"):
            assert p.get("llm") is None
        if node["type"] == "self_check":
            assert p.get("judge", "offline") == "offline"


def test_modular_rag_wires_guard_and_self_check_branches():
    cfg = load("modular_rag")
    path, node = [], "start"
    while node != "end":
        node = cfg.edges[node]
        path.append(cfg.nodes[node]["type"] if node != "end" else "end")
    assert path == ["query_rewrite", "retrieve", "rerank", "guard", "generate", "self_check", "end"]
    assert cfg.routes["guard"]["cases"] == {True: "fallback"}
    assert cfg.routes["self_check"]["cases"]["retry"] == "rewrite"
    assert cfg.routes["self_check"]["cases"]["exhausted"] == "fallback"


def test_agentic_reflect_routes_grade_to_generate_rewrite_or_fallback():
    cases = load("agentic_reflect").routes["grade"]["cases"]
    assert cases == {"generate": "generate", "rewrite": "rewrite", "fallback": "fallback"}


def test_router_routes_to_distinct_retrieval_paths():
    cfg = load("router")
    cases = cfg.routes["router"]["cases"]
    assert set(cases) == set(cfg.nodes["router"]["params"]["routes"])
    channels = {k: sorted(c for c in ("dense", "bm25") if c in cfg.nodes[v]["params"]) for k, v in cases.items()}
    assert channels["keyword"] == ["bm25"] and channels["vector"] == ["dense"]


@pytest.mark.integration
def test_shipped_configs_run_on_a_tiny_set(evalset: Path, tmp_path: Path):
    configs = [load(n) for n in SHIPPED]
    out = tmp_path / "s.json"
    summary = run_eval(load_eval_set(str(evalset)), configs, RunOptions(output=out, progress=False, mlflow=False),
                       echo=lambda m: None)
    for name in SHIPPED:
        v = summary.variants[name]
        assert v.n_failed == 0 and "llm_fallbacks" in v.metrics
        rows = read_results(tmp_path / "s" / name / "per_query.jsonl")
        assert all(e["attempt"] is not None for r in rows for e in r.trace)
    assert "loop_rate" in summary.variants["agentic_reflect"].metrics
    assert "loop_rate" in summary.variants["modular_rag"].metrics
    assert any(k.startswith("route_share.") for k in summary.variants["router"].metrics)
