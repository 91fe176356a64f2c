"""Sweeps: one config file -> named, validated variants in a fixed order; errors name the sweep key.

Fixture: a retrieve (dense + BM25) -> rerank graph swept over
  fusion.method  [rrf, weighted]     (full path; 'fusion' is left to defaults in the base)
  retrieve.top_k [50, 100]           (short form of nodes.retrieve.params.top_k)
= 4 variants, fusion.method varying slowest.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from evalkit.errors import ConfigError
from evalkit.graph import load_graph_config
from evalkit.graph.sweep import MAX_VARIANTS, expand_sweep, load_variants, short_labels

BASE = """\
name: hybrid
description: dense + BM25
nodes:
  retrieve:
    type: retrieve
    params:
      dense: {embedder: e5}
      bm25: {}
  rerank: {type: rerank, params: {model: e5, top_k: 10}}
edges: {start: retrieve, retrieve: rerank, rerank: end}
"""
SWEEP = BASE + """\
sweep:
  nodes.retrieve.params.fusion.method: [rrf, weighted]
  retrieve.top_k: [50, 100]
"""


def write(tmp_path: Path, text: str, name: str = "variant.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def error_of(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_variants(write(tmp_path, text))
    return info.value


def test_plain_file_gives_one_config_like_load_graph_config(tmp_path: Path):
    path = write(tmp_path, BASE)
    (cfg,) = load_variants(path)
    assert cfg.to_dict() == load_graph_config(path).to_dict() and cfg.source == str(path)


def test_sweep_expands_in_declared_order_with_stable_names(tmp_path: Path):
    configs = load_variants(write(tmp_path, SWEEP))
    assert [c.name for c in configs] == [
        "hybrid__method-rrf__top_k-50", "hybrid__method-rrf__top_k-100",
        "hybrid__method-weighted__top_k-50", "hybrid__method-weighted__top_k-100"]
    got = [(c.nodes["retrieve"]["params"]["fusion"]["method"], c.nodes["retrieve"]["params"]["top_k"])
           for c in configs]
    assert got == [("rrf", 50), ("rrf", 100), ("weighted", 50), ("weighted", 100)]
    # the rest of the base is untouched, and each variant says what it sets
    assert all(c.nodes["rerank"]["params"] == {"model": "e5", "top_k": 10} for c in configs)
    assert configs[0].description == "dense + BM25 (sweep: method=\"rrf\", top_k=50)"
    # the logged config (to_yaml) is the full expanded config, loadable on its own, without 'sweep'
    again = yaml.safe_load(configs[3].to_yaml())
    assert "sweep" not in again and again["nodes"]["retrieve"]["params"]["top_k"] == 100
    assert len({c.sha256() for c in configs}) == 4
    # the same file always expands the same way
    assert [c.name for c in load_variants(write(tmp_path, SWEEP, "again.yaml"))] == [c.name for c in configs]


def test_names_are_folder_and_mlflow_safe(tmp_path: Path, monkeypatch):
    from evalkit.models.embedders import EMBEDDERS

    monkeypatch.setitem(EMBEDDERS, "intfloat/multilingual e5", EMBEDDERS["e5"])  # a name that needs slugging
    text = BASE + "sweep:\n  retrieve.dense.embedder: [e5, 'intfloat/multilingual e5']\n  seed: [0, 1]\n"
    names = [c.name for c in load_variants(write(tmp_path, text))]
    assert names[2] == "hybrid__embedder-intfloat_multilingual_e5__seed-0"
    import re

    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+", n) for n in names)


def test_expand_sweep_returns_plain_dicts_without_sweep():
    raw = yaml.safe_load(SWEEP)
    variants = expand_sweep(raw, "x.yaml")
    assert len(variants) == 4 and all("sweep" not in d and d["name"] == n for n, d in variants)
    assert raw["nodes"]["retrieve"]["params"].get("fusion") is None  # the input is not modified
    assert expand_sweep(yaml.safe_load(BASE), "x.yaml") == [("hybrid", yaml.safe_load(BASE))]


def test_labels_grow_until_they_differ():
    paths = [("nodes", "retrieve", "params", "top_k"), ("nodes", "rerank", "params", "top_k"),
             ("nodes", "retrieve", "params", "fusion", "k"), ("seed",)]
    assert short_labels(paths) == ["retrieve.top_k", "rerank.top_k", "k", "seed"]


# ---------------------------------------------------------------- errors


def test_bad_value_names_sweep_key_line_and_value(tmp_path: Path):
    err = error_of(tmp_path, BASE + "sweep:\n  retrieve.top_k: [50, 0]\n")
    assert err.where == "sweep.retrieve.top_k" and err.line == 12
    assert "value 0" in str(err) and "hybrid__top_k-0" in str(err) and "greater than or equal to 1" in str(err)


def test_bad_choice_value_is_located(tmp_path: Path):
    err = error_of(tmp_path, BASE + "sweep:\n  nodes.retrieve.params.fusion.method: [rrf, borda]\n")
    assert err.where == "sweep.nodes.retrieve.params.fusion.method" and 'value "borda"' in str(err)


def test_unknown_parameter_gets_did_you_mean(tmp_path: Path):
    err = error_of(tmp_path, BASE + "sweep:\n  retrieve.topk: [1, 2]\n")
    assert err.where == "sweep.retrieve.topk" and "did you mean 'top_k'" in str(err)


@pytest.mark.parametrize(("sweep", "where", "needle"), [
    ("  retreive.top_k: [1]\n", "sweep.retreive.top_k", "did you mean 'retrieve'"),
    ("  nodes.missing.params.top_k: [1]\n", "sweep.nodes.missing.params.top_k", "no node 'missing'"),
    ("  nodes.retrieve.type: [rerank]\n", "sweep.nodes.retrieve.type", "sweep a node's parameters"),
    ("  retrieve: [1]\n", "sweep.retrieve", "names a whole node"),
    ("  retrieve.top_k: 50\n", "sweep.retrieve.top_k", "expected a non-empty list"),
    ("  retrieve.top_k: []\n", "sweep.retrieve.top_k", "expected a non-empty list"),
    ("  retrieve.top_k: [50, 50]\n", "sweep.retrieve.top_k", "listed twice"),
    ("  name: [a, b]\n", "sweep.name", "cannot be swept"),
    ("  retrieve.top_k: [1]\n  nodes.retrieve.params.top_k: [2]\n", "sweep.nodes.retrieve.params.top_k",
     "both set"),
    ("  edges.nowhere: [end]\n", "sweep.edges.nowhere", None),
])
def test_sweep_key_errors(tmp_path: Path, sweep: str, where: str, needle: str | None):
    err = error_of(tmp_path, BASE + "sweep:\n" + sweep)
    assert err.where == where, str(err)
    assert err.line is not None and err.line >= 12
    if needle:
        assert needle in str(err)


def test_ambiguous_short_form_is_refused(tmp_path: Path):
    text = BASE.replace("  rerank: {type: rerank", "  chunking: {type: rerank").replace(
        "retrieve: rerank, rerank: end", "retrieve: chunking, chunking: end")
    err = error_of(tmp_path, text + "sweep:\n  chunking.top_k: [5, 10]\n")
    assert "ambiguous" in str(err) and "nodes.chunking.params.top_k" in str(err)
    configs = load_variants(write(tmp_path, text + "sweep:\n  nodes.chunking.params.top_k: [5, 10]\n"))
    assert [c.nodes["chunking"]["params"]["top_k"] for c in configs] == [5, 10]


def test_sweep_must_be_a_mapping(tmp_path: Path):
    assert "non-empty mapping" in str(error_of(tmp_path, BASE + "sweep: [1, 2]\n"))


def test_error_in_base_config_keeps_its_own_location(tmp_path: Path):
    err = error_of(tmp_path, SWEEP.replace("model: e5, top_k: 10", "model: e5, top_k: 10, colour: red"))
    assert err.where == "nodes.rerank.params.colour" and err.line == 9 and "sweep variant" in str(err)


def test_too_many_variants(tmp_path: Path):
    values = ", ".join(str(i) for i in range(1, MAX_VARIANTS + 2))
    assert "more than" in str(error_of(tmp_path, BASE + f"sweep:\n  retrieve.top_k: [{values}]\n"))


# ---------------------------------------------------------------- end to end


def test_sweep_variants_run_log_and_trace(tmp_path: Path):
    """A sweep file through the runner: one folder, MLflow child run (expanded config.yaml) and traces each."""
    import json

    from mlflow import MlflowClient

    from evalkit.evalsets import freeze, load_eval_set
    from evalkit.run.runner import RunOptions, run_eval

    (tmp_path / "corpora").mkdir()
    docs = [("d1", "Invoices", "Electronic invoices above 5000 need approval."),
            ("d2", "Hotels", "Hotel allowance is 600 per night."), ("d3", "Laptops", "Laptops are repaired by IT.")]
    (tmp_path / "corpora" / "c.jsonl").write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n"
                                                          for i, t, x in docs))
    (tmp_path / "es.jsonl").write_text(json.dumps({"id": "q1", "question": "invoice approval", "relevant_doc_ids":
                                                   ["d1"], "type": "single", "lang": "en"}) + "\n")
    freeze(tmp_path / "es.jsonl", corpus=str(tmp_path / "corpora" / "c.jsonl"))
    cfg = write(tmp_path, "name: bm25\nnodes:\n  retrieve: {type: retrieve, params: {bm25: {tokenizer: en}}}\n"
                          "edges: {start: retrieve, retrieve: end}\n"
                          "sweep:\n  retrieve.bm25.k1: [0.9, 1.5]\n  retrieve.top_k: [2, 5]\n")
    out = tmp_path / "results" / "sweep.json"
    summary = run_eval(load_eval_set(str(tmp_path / "es.jsonl")), load_variants(cfg),
                       RunOptions(output=out, progress=False), echo=lambda m: None)
    names = ["bm25__k1-0.9__top_k-2", "bm25__k1-0.9__top_k-5", "bm25__k1-1.5__top_k-2", "bm25__k1-1.5__top_k-5"]
    assert list(summary.variants) == names
    assert all((out.with_suffix("") / n / "per_query.jsonl").is_file() for n in names)
    assert summary.mlflow, "MLflow logging failed (variant names must be valid MLflow keys)"
    client = MlflowClient(tracking_uri=summary.mlflow["tracking_uri"])
    run_id = summary.variants[names[3]].mlflow_run_id
    logged = yaml.safe_load(Path(client.download_artifacts(run_id, "config.yaml", str(tmp_path / "dl"))).read_text())
    assert logged["name"] == names[3] and logged["nodes"]["retrieve"]["params"]["bm25"]["k1"] == 1.5
    assert logged["nodes"]["retrieve"]["params"]["top_k"] == 5 and "sweep" not in logged
    traces = client.search_traces(locations=[summary.mlflow["experiment_id"]], run_id=run_id)
    assert [t.info.tags["evalkit.variant"] for t in traces] == [names[3]]
