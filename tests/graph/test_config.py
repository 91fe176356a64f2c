"""Graph configs: every mistake is refused at load time, naming file, line, path and a fix."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from evalkit.errors import ConfigError
from evalkit.graph import config_from_dict, load_graph_config

REPO = Path(__file__).resolve().parents[2]

GOOD = """\
name: tiny
chunking: {method: fixed, size: 300, overlap: 30}
nodes:
  retrieve:
    type: retrieve
    params:
      bm25: {top_k: 50}
  rerank:
    type: rerank
    params: {model: e5, top_k: 20}
  guard:
    type: guard
    params: {threshold: 0.8}
edges:
  start: retrieve
  retrieve: rerank
  rerank: guard
  guard: end
routes:
  guard: {field: guard_triggered, cases: {true: end}}
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "variant.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def error_of(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_graph_config(write(tmp_path, text))
    return info.value


def test_good_config_loads_and_round_trips(tmp_path: Path):
    cfg = load_graph_config(write(tmp_path, GOOD))
    assert cfg.name == "tiny" and list(cfg.nodes) == ["retrieve", "rerank", "guard"]
    again = config_from_dict(yaml.safe_load(cfg.to_yaml()))
    assert again.to_dict() == cfg.to_dict() and again.sha256() == cfg.sha256()
    assert cfg.flat_params()["nodes.rerank.params.top_k"] == "20"


@pytest.mark.parametrize("path", sorted((REPO / "graph_configs").glob("*.yaml")), ids=lambda p: p.name)
def test_every_bundled_config_loads(path: Path):
    cfg = load_graph_config(path)
    assert cfg.nodes and cfg.edges["start"] in cfg.nodes


@pytest.mark.parametrize("old,new,line,where,message", [
    ("type: rerank", "type: rerankr", 9, "nodes.rerank.type", "unknown node type 'rerankr'; did you mean 'rerank'?"),
    ("params: {model: e5, top_k: 20}", "params: {model: e5, topk: 20}", 10, "nodes.rerank.params.topk",
     "unknown parameter 'topk'"),
    ("bm25: {top_k: 50}", "bm25: {top_k: 50, k_1: 1.2}", 7, "nodes.retrieve.params.bm25.k_1",
     "did you mean 'k1'?"),
    ("rerank: guard\n", "rerank: gaurd\n", 17, "edges.rerank", "edge to unknown node 'gaurd'; did you mean 'guard'?"),
    ("name: tiny", "name: tiny\nseeds: 3", 2, "seeds", "did you mean 'seed'?"),
    ("{threshold: 0.8}", "{threshold: high}", 13, "nodes.guard.params.threshold", "valid number"),
    ("cases: {true: end}", "cases: {true: ned}", None, "routes.guard.cases.True", "did you mean 'end'?"),
    ("field: guard_triggered", "field: guard_tripped", None, "routes.guard.field", "no node writes state field"),
    ("{method: fixed, size: 300, overlap: 30}", "{method: fixed, size: 300, overlap: 300}", 2, "chunking",
     "0 <= overlap < size"),
])
def test_mistakes_name_the_line_the_path_and_a_fix(tmp_path, old, new, line, where, message):
    assert old in GOOD
    err = error_of(tmp_path, GOOD.replace(old, new, 1))
    assert err.where == where
    assert message in err.message
    if line is not None:
        assert err.line == line and f"variant.yaml:{line}: {where}" in str(err)


def test_missing_default_edge(tmp_path: Path):
    err = error_of(tmp_path, GOOD.replace("  guard: end\n", ""))
    assert err.where == "nodes.guard" and "has no default edge" in err.message


def test_end_must_be_reachable(tmp_path: Path):
    text = GOOD.replace("  guard: end\n", "  guard: rerank\n").replace("cases: {true: end}", "cases: {true: rerank}")
    err = error_of(tmp_path, text)
    assert "'end' cannot be reached" in err.message


def test_a_loop_without_exit_is_refused(tmp_path: Path):
    # end is reachable (retrieve may route there), but rerank <-> guard can never leave
    text = GOOD.replace("  guard: end\n", "  guard: rerank\n").replace(
        "  guard: {field: guard_triggered, cases: {true: end}}", "  retrieve: {field: retrieved, cases: {none: end}}")
    err = error_of(tmp_path, text)
    assert err.where == "nodes.rerank" and "cannot be reached from node 'rerank'" in err.message


def test_nodes_must_be_wired_from_start(tmp_path: Path):
    text = GOOD.replace("start: retrieve", "start: rerank")
    err = error_of(tmp_path, text)
    assert err.where == "nodes.retrieve" and "unreachable from 'start'" in err.message


def test_reads_need_a_writer(tmp_path: Path):
    text = """\
nodes:
  rerank: {type: rerank}
edges: {start: rerank, rerank: end}
"""
    err = error_of(tmp_path, text)
    assert "reads state field 'retrieved'" in err.message


def test_reserved_names_and_start_edge(tmp_path: Path):
    assert "reserved" in error_of(tmp_path, "nodes: {end: {type: rerank}}\nedges: {start: end}\n").message
    err = error_of(tmp_path, "nodes: {r: {type: retrieve, params: {bm25: {}}}}\nedges: {r: end}\n")
    assert "no edge from 'start'" in err.message


def test_a_retrieve_node_needs_a_channel(tmp_path: Path):
    err = error_of(tmp_path, "nodes: {r: {type: retrieve}}\nedges: {start: r, r: end}\n")
    assert "at least one channel" in err.message


def test_yaml_never_executes_code(tmp_path: Path):
    err = error_of(tmp_path, "name: !!python/object/apply:os.system ['echo pwned']\nnodes: {}\n")
    assert "not valid YAML" in str(err)


def test_unreadable_file_is_named(tmp_path: Path):
    with pytest.raises(ConfigError, match="cannot read graph config"):
        load_graph_config(tmp_path / "missing.yaml")


@pytest.mark.parametrize("node, where, message", [
    ("retrieve: {type: retrieve, params: {dense: {embedder: e55}}}", "nodes.retrieve.params.dense.embedder",
     "unknown embedder 'e55'; did you mean 'e5'?"),
    ("retrieve: {type: retrieve, params: {dense: {embedder: {name: minilmm}}}}", "nodes.retrieve.params.dense.embedder",
     "unknown embedder 'minilmm'"),
    ("retrieve: {type: retrieve, params: {dense: {query_embedder: nosuch}}}",
     "nodes.retrieve.params.dense.query_embedder", "unknown embedder 'nosuch'"),
])
def test_an_unknown_model_is_refused_at_load_naming_line_and_field(tmp_path: Path, node, where, message):
    # `graph check` said ok and the run failed later without file or line
    path = tmp_path / "m.yaml"
    path.write_text(f"name: m\nnodes:\n  {node}\nedges: {{start: retrieve, retrieve: end}}\n")
    with pytest.raises(ConfigError) as err:
        load_graph_config(path)
    assert str(err.value).startswith(f"{path}:3: {where}") and message in str(err.value), str(err.value)


def test_an_unknown_reranker_is_refused_at_load(tmp_path: Path):
    path = tmp_path / "r.yaml"
    path.write_text("name: r\nnodes:\n  retrieve: {type: retrieve, params: {bm25: {}}}\n"
                    "  rerank: {type: rerank, params: {model: flagg}}\n"
                    "edges: {start: retrieve, retrieve: rerank, rerank: end}\n")
    with pytest.raises(ConfigError) as err:
        load_graph_config(path)
    assert str(err.value).startswith(f"{path}:4: nodes.rerank.params.model") and "unknown reranker 'flagg'" in str(err.value)
    for ok in ("e5", "minilm", "{name: flag, path: /models/bge}", "{name: cross-encoder, path: /m}"):
        path.write_text(path.read_text().replace("model: flagg", f"model: {ok}").replace("flagg", ok))
        load_graph_config(path)
        path.write_text(path.read_text().replace(f"model: {ok}", "model: flagg"))
