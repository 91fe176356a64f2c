"""route_accuracy against gold routes: the metric, its confusion table in the report and in compare."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.analysis.run_report import build_report
from evalkit.analysis.runs import load_run
from evalkit.cli import cli
from evalkit.evalsets import freeze, load_eval_set
from evalkit.graph import config_from_dict
from evalkit.metrics.routing import chosen_route, query_route_metrics, route_confusion
from evalkit.records import QueryResult
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import read_results

DOCS = [("it-002", "Error codes", "Error E-4012 means the battery controller failed."),
        ("sup-001", "Suppliers", "The KS-9 chip is supplied by Borealis Semiconductor."),
        ("hr-001", "Leave", "Employees get 10 days of parental leave.")]
Q = [  # id, question, gold docs, gold route; the rules below route E-4012 to keyword, supplier to graph
    ("q1", "what does error E-4012 mean", ["it-002"], "keyword"),        # keyword: right
    ("q2", "who is the supplier of the KS-9 chip", ["sup-001"], "graph"),  # graph: right
    ("q3", "how many days of parental leave", ["hr-001"], "vector"),     # no rule: default hybrid, wrong
    ("q4", "supplier code E-4012", ["it-002"], "graph"),                 # keyword rule first: wrong
    ("q5", "parental leave days", ["hr-001"], None),                     # no gold route: not counted
]


def _router(name="router"):
    return {"name": name, "chunking": {"method": "document"},
            "nodes": {"router": {"type": "intent_router", "params": {
                "routes": {"keyword": "codes", "graph": "relations", "vector": "how-to", "hybrid": "else"},
                "default_route": "hybrid",
                "rules": [{"label": "keyword", "patterns": ["[A-Z]-\\d{4}"]},
                          {"label": "graph", "keywords": ["supplier"]}]}},
                "bm25": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}}}},
            "edges": {"start": "router", "router": "bm25", "bm25": "end"}}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    (tmp_path / "corpora").mkdir()
    corpus = tmp_path / "corpora" / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in DOCS))
    path = tmp_path / "routes.jsonl"
    path.write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": g, "type": "single", "lang": "en",
                                        **({"gold_route": r} if r else {})}) + "\n" for i, q, g, r in Q))
    freeze(path, corpus=str(corpus))
    plain = {"name": "plain", "chunking": {"method": "document"},
             "nodes": {"bm25": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}}}},
             "edges": {"start": "bm25", "bm25": "end"}}
    out = tmp_path / "run.json"
    run_eval(load_eval_set(path), [config_from_dict(_router()), config_from_dict(_router("router2")),
                                   config_from_dict(plain)],
             RunOptions(output=out, mlflow=False, progress=False, cache_root=tmp_path / "cache"), echo=lambda s: None)
    return out


def test_route_accuracy_is_the_share_of_gold_routes_the_router_chose(run: Path):
    summary = json.loads(run.read_text())
    metrics = summary["variants"]["router"]["metrics"]
    assert metrics["route_accuracy"] == pytest.approx(2 / 4) and metrics["n_gold_route"] == 4  # q1, q2 of q1-q4
    assert "route_accuracy" not in summary["variants"]["plain"]["metrics"]  # no router: no metric
    results = {r.query_id: r for r in read_results(run.with_suffix("") / "router" / "per_query.jsonl")}
    assert [results[q].metrics.get("route_correct") for q in ("q1", "q2", "q3", "q4", "q5")] == [1.0, 1.0, 0.0, 0.0,
                                                                                                    None]
    assert route_confusion(list(results.values())) == {"graph": {"graph": 1, "keyword": 1}, "keyword": {"keyword": 1},
                                                       "vector": {"hybrid": 1}}


def test_the_chosen_route_is_the_first_router_event_and_a_missing_one_is_wrong():
    trace = [{"node": "r", "role": "router", "wrote": {"route": "graph"}},
             {"node": "r2", "role": "router", "wrote": {"route": "vector"}}]
    assert chosen_route(trace) == "graph"
    failed = QueryResult("q", "?", [], [], [], {}, [{"node": "r", "role": "router", "wrote": {}, "error": {}}],
                         gold_route="graph")
    assert query_route_metrics(failed, has_router=True) == {"route_correct": 0.0}
    assert query_route_metrics(failed, has_router=False) == {}


def test_report_and_compare_show_the_confusion_table(run: Path):
    report = build_report(load_run(str(run)), n_resamples=200)
    assert '<h2 id="routes-section">Routes</h2>' in report.html and 'id="routes-router"' in report.html
    assert "| gold \\ chosen | graph | hybrid | keyword | n | correct |" in report.markdown
    assert "| graph | 1 | 0 | 1 | 2 | 0.500 |" in report.markdown
    out = CliRunner().invoke(cli, ["compare", str(run), "--variants", "router,router2", "--no-fusion",
                                   "--resamples", "200"])
    assert out.exit_code == 0, out.output
    assert "route_correct" in out.output  # the per-query flag is paired like any metric
    assert "routes: router (rows: gold route, columns: chosen route)" in out.output
