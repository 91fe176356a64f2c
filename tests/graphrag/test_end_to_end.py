"""GraphRAG variants through the real runner (run_eval) on a tiny eval set."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.evalsets import freeze, load_eval_set
from evalkit.graph import config_from_dict
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import read_results

from .conftest import DOCS

QUESTIONS = [
    ("q1", "Which company makes the chip used in the ZX-100?", ["d-spec", "d-chip"], "multi_hop", "en"),
    ("q2", "Where is Borealis Semiconductor headquartered?", ["d-vendor"], "single", "en"),
    ("q3", "Lanyu Micro 的考核等级是什么？", ["d-zh2"], "single", "zh"),
    ("q4", "What is the ZX-100 warranty period?", [], "unanswerable", "en"),
]
GRAPH = {"aliases": {"岚屿微电子（合肥）有限公司": ["Lanyu Micro"]}}
CHUNKING = {"method": "document"}
BM25 = {"type": "retrieve", "params": {"bm25": {"tokenizer": "auto"}}}
CONFIGS = [
    {"name": "graph_only", "chunking": CHUNKING,
     "nodes": {"g": {"type": "graph_local", "params": {"graph": GRAPH, "link": {"embedding": False}}}},
     "edges": {"start": "g", "g": "end"}},
    {"name": "bm25_graph", "chunking": CHUNKING,
     "nodes": {"retrieve": BM25, "g": {"type": "graph_local", "params": {"graph": GRAPH, "fuse_with": "retrieved"}}},
     "edges": {"start": "retrieve", "retrieve": "g", "g": "end"}},
    {"name": "bm25_global", "chunking": CHUNKING,
     "nodes": {"retrieve": BM25, "g": {"type": "graph_global", "params": {
         "graph": GRAPH, "communities": {"algorithm": "louvain"}, "fuse_with": "retrieved"}}},
     "edges": {"start": "retrieve", "retrieve": "g", "g": "end"}},
    {"name": "scheduler", "chunking": CHUNKING,
     "nodes": {"s": {"type": "agent_scheduler", "params": {"graph": {"graph": GRAPH}}}},
     "edges": {"start": "s", "s": "end"}},
]


@pytest.fixture
def evalset(tmp_path: Path) -> Path:
    (tmp_path / "corpora").mkdir()
    corpus = tmp_path / "corpora" / "tiny_graph.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}, ensure_ascii=False) + "\n"
                              for i, t, x in DOCS), encoding="utf-8")
    path = tmp_path / "tiny_graph.jsonl"
    path.write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": g, "type": t, "lang": lang},
                                       ensure_ascii=False) + "\n" for i, q, g, t, lang in QUESTIONS),
                    encoding="utf-8")
    freeze(path, corpus=str(corpus))
    return path


def test_graph_variants_run_end_to_end(evalset: Path, tmp_path: Path):
    out = tmp_path / "results" / "g.json"
    options = RunOptions(output=out, progress=False, mlflow=False, cache_root=tmp_path / "cache")
    summary = run_eval(load_eval_set(str(evalset)), [config_from_dict(c) for c in CONFIGS], options,
                       echo=lambda m: None)
    for name in ("graph_only", "bm25_graph", "bm25_global", "scheduler"):
        v = summary.variants[name]
        assert v.n_failed == 0 and v.n_excluded == 1
        assert any("/graph-" in str(m.get("path")) for m in v.index.values())  # the graph index is recorded
    rows = {r.query_id: r for r in read_results(out.with_suffix("") / "graph_only" / "per_query.jsonl")}
    assert rows["q1"].metrics["recall@20"] == 1.0  # the bridge document d-chip is found
    wrote = rows["q3"].trace[0]["wrote"]
    assert wrote["graph_entities"][0]["how"] == "alias" and wrote["graph_entities"][0]["node"] == "岚屿微电子"
    assert rows["q3"].retrieved[0]["doc_id"] in ("d-zh", "d-zh2")
    fused = read_results(out.with_suffix("") / "bm25_graph" / "per_query.jsonl")
    assert set(fused[0].trace[-1]["wrote"]["channel_hits"]) == {"bm25", "graph"}
    sched = read_results(out.with_suffix("") / "scheduler" / "per_query.jsonl")
    assert sched[0].trace[0]["wrote"]["scheduler_class"] == "entity_relation"
    assert set(sched[0].trace[0]["wrote"]["tool_hits"]) == {"graph", "dense", "bm25"}
    glob = read_results(out.with_suffix("") / "bm25_global" / "per_query.jsonl")
    assert glob[0].trace[-1]["wrote"]["graph_communities"]
    data = json.loads(out.read_text())
    assert set(data["variants"]) == {c["name"] for c in CONFIGS}


def test_an_entity_graph_built_while_its_llm_failed_is_reported_and_refused_by_the_gate(
        evalset: Path, tmp_path: Path, scripted_server):
    """An LLM-extracted graph whose LLM failed on some passages is partial for every query, and no
    query's trace shows it: the run says so, the summary keeps the count, and the gate refuses it."""
    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.run.health import index_degradations

    def config(port_url: str) -> dict:
        llm = {"backend": "openai", "model": "graph-test", "base_url": port_url, "max_retries": 0,
               "timeout_s": 20.0, "max_tokens": 200, "seed": 3, "concurrency": 1}
        graph = {**GRAPH, "mode": "llm", "llm": llm}
        return {"name": "graph_llm", "chunking": CHUNKING,
                "nodes": {"g": {"type": "graph_local", "params": {"graph": graph, "link": {"embedding": False}}}},
                "edges": {"start": "g", "g": "end"}}

    empty = "text:" + json.dumps({"entities": [], "relations": []})
    runs = {}
    for label, replies in (("healthy", [empty] * len(DOCS)),
                           # passages 2 and 5 answer prose twice (the corrective retry too): not JSON, for good
                           ("flaky", [empty, "text:Sorry, busy.", "text:Still busy.", empty, empty,
                                      "text:no", "text:no", empty, empty])):
        scripted_server.push(*replies)
        said: list[str] = []
        out = tmp_path / label / "r.json"
        summary = run_eval(load_eval_set(str(evalset)), [config_from_dict(config(scripted_server.base_url))],
                           RunOptions(output=out, progress=False, mlflow=False, cache_root=tmp_path / label / "c"),
                           echo=said.append)
        runs[label] = (out, summary.variants["graph_llm"], said)
    _, healthy, said = runs["healthy"]
    assert index_degradations(healthy.index) == [] and not any("partial index" in m for m in said)
    _, flaky, said = runs["flaky"]
    assert [(d["cause"], d["failed"], d["of"]) for d in index_degradations(flaky.index)] == [
        ("index_llm_failures", 2, len(DOCS))]
    assert any("failed on 2 of 7 passages" in m and "partial index" in m for m in said)
    def gate(baseline: str, candidate: str, *extra: str):
        return CliRunner().invoke(cli, ["gate", "--baseline", str(runs[baseline][0]), "--candidate",
                                        str(runs[candidate][0]), "--variant", "graph_llm", "--metric", "recall@20",
                                        "--max-drop", "0.5", *extra])

    res = gate("healthy", "flaky")
    assert res.exit_code == 6, res.output
    assert "failed on 2 of 7 passages (28.6%)" in res.output and "partial" in res.output
    assert gate("flaky", "healthy").exit_code == 0  # a healthy candidate is judged on its metrics
    assert gate("healthy", "flaky", "--max-degraded-share", "0.3").exit_code == 0  # allowed: judged on metrics
