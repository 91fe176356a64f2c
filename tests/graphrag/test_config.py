"""The shipped GraphRAG configs, their round trip, and the load-time errors of the graph nodes."""
from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.errors import ConfigError
from evalkit.graph import config_from_dict, load_graph_config

REPO = Path(__file__).resolve().parents[2]
SHIPPED = ("graphrag_local", "graphrag_global", "agent_scheduler")


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_configs_load_and_round_trip(name):
    cfg = load_graph_config(REPO / "graph_configs" / f"{name}.yaml")
    assert cfg.name == name and cfg.chunking["method"] == "fixed"
    again = config_from_dict(cfg.to_dict())
    assert again.to_dict() == cfg.to_dict() and again.sha256() == cfg.sha256()


def test_the_shipped_configs_share_one_graph():
    specs = []
    for name in SHIPPED:
        nodes = load_graph_config(REPO / "graph_configs" / f"{name}.yaml").nodes
        params = nodes["scheduler"]["params"]["graph"] if "scheduler" in nodes else nodes["graph"]["params"]
        specs.append(params["graph"])
    assert specs[0] == specs[1] == specs[2]  # same extraction and aliases: one cached graph for all three


def _graph(node_type: str, params: dict) -> dict:
    return {"name": "t", "nodes": {"g": {"type": node_type, "params": params}}, "edges": {"start": "g", "g": "end"}}


@pytest.mark.parametrize("node_type, params, where, message", [
    ("graph_local", {"deph": 2}, "nodes.g.params.deph", "did you mean 'depth'"),
    ("graph_local", {"depth": 9}, "nodes.g.params.depth", "less than or equal to 4"),
    ("graph_local", {"graph": {"mode": "llm"}}, "nodes.g.params.graph.llm", "'llm' needs an LLM: set 'llm'"),
    ("graph_local", {"graph": {"chunk_wieght": 1}}, "nodes.g.params.graph.chunk_wieght", "did you mean 'chunk_weight'"),
    ("graph_local", {"link": {"threshold": 2}}, "nodes.g.params.link.threshold", "less than or equal to 1"),
    ("graph_global", {"graph": {"mode": "llm"}}, "nodes.g.params.graph.llm", "needs an LLM"),
    ("graph_local", {"graph": {"mode": "llm", "llm": {"backend": "extractive"}}}, "nodes.g.params.graph.llm",
     "needs a model backend"),
    ("graph_local", {"graph": {"mode": "llm", "llm": {"backend": "local"}, "min_confidence": 0.9}},
     "nodes.g.params.graph", "full_confidence (0.8) is below min_confidence (0.9)"),
    ("graph_global", {"communities": {"algorithm": "spectral"}}, "nodes.g.params.communities.algorithm",
     "'auto', 'louvain' or 'leiden'"),
    ("agent_scheduler", {"llm": {"model": "x"}, "examples": [{"question": "q?", "label": "nope"}]}, "nodes.g.params",
     "examples[0].label: 'nope' is not a class of 'weights'"),
    ("agent_scheduler", {"llm": {"backend": "gpt"}}, "nodes.g.params.llm.backend", "'openai', 'local' or 'extractive'"),
    ("agent_scheduler", {"graph": {"graph": {"mode": "llm"}}}, "nodes.g.params.graph.graph.llm", "needs an LLM"),
])
def test_bad_params_are_refused_at_load_time(node_type, params, where, message):
    with pytest.raises(ConfigError) as err:
        config_from_dict(_graph(node_type, params))
    assert err.value.where == where and message in err.value.message


def test_llm_mode_without_an_llm_in_a_yaml_file_names_the_file_and_field(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("name: g\nnodes:\n  g:\n    type: graph_local\n    params:\n      graph:\n        mode: llm\n"
                    "edges: {start: g, g: end}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"g\.yaml(:\d+)?: nodes\.g\.params\.graph\.llm: .*needs an LLM"):
        load_graph_config(path)
