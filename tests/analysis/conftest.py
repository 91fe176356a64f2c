"""Fixtures for the analysis tests: synthetic runs written to disk, and one real tiny run.

Synthetic runs are written in exactly the layout ``evalkit run`` produces
(``NAME.json`` + ``NAME/<variant>/per_query.jsonl``), from hand-made ``QueryResult``s,
so the numbers in the tests can be checked by hand.

The real runs (session-scoped, built once): a 12-document English corpus and 16
questions (12 answerable, 4 unanswerable), five variants in two runs:

    tiny.json       bm25             BM25 only
                    bm25_plain       BM25 with k1 1.5, b 0.75 and no stemming (a second lexical variant)
                    hybrid_weighted  e5 dense + BM25, weighted fusion (0.5 / 0.5, min-max)
    rerankers.json  rerank_e5        BM25 -> rerank with e5 (top-1 cosine ~0.81-0.93) -> guard 0.8
                    rerank_minilm    BM25 -> rerank with MiniLM (top-1 cosine ~0.39-0.81) -> guard 0.3

Three questions get no BM25 hit at all (no shared term), so they have no rerank score.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalkit.records import EvalSetRef, QueryResult, RunSummary, VariantSummary

DOCS = [
    ("fin-001", "Invoice limits", "Employees may claim at most 5000 yuan per electronic invoice; more needs a director."),
    ("fin-002", "Hotel allowance", "In tier one cities the hotel allowance is 600 yuan per night; tier two cities 450."),
    ("it-001", "Laptop repair", "If your laptop is broken, open a ticket in the IT portal. Repairs take 3 days."),
    ("it-002", "Error codes", "Error E-4012 means the battery controller failed. E-4013 means the fan failed."),
    ("it-003", "VPN access", "Connect to the LanLink VPN with your badge number and a one-time code."),
    ("cfg-001", "Config reference", "The field retry.max_attempts defaults to 3. timeout.seconds defaults to 30."),
    ("hr-001", "Parental leave", "After a child is born, employees get 10 days of parental leave."),
    ("hr-002", "Annual leave", "Employees receive 15 days of annual leave, plus one day per year of service."),
    ("hr-003", "Remote work", "Staff may work from home two days per week with their manager's approval."),
    ("prod-001", "LX-200 gateway", "The LX-200 edge gateway has four Ethernet ports and supports 5G."),
    ("prod-002", "LX-300 terminal", "The LX-300 vision terminal records 4K video at 30 frames per second."),
    ("sec-001", "Passwords", "Passwords must have at least 12 characters and must change every 90 days."),
]
QUESTIONS = [
    ("q01", "What is the limit per electronic invoice?", ["fin-001"], "single"),
    ("q02", "How much is the hotel allowance in a tier one city?", ["fin-002"], "single"),
    ("q03", "my computer broke, who fixes it", ["it-001"], "colloquial"),
    ("q04", "what does error E-4012 mean", ["it-002"], "exact_term"),
    ("q05", "How do I log in to the VPN?", ["it-003"], "single"),
    ("q06", "retry.max_attempts default", ["cfg-001"], "exact_term"),
    ("q07", "How many days off when my baby is born?", ["hr-001"], "colloquial"),
    ("q08", "How many vacation days do I get?", ["hr-002"], "colloquial"),
    ("q09", "Can I work from home?", ["hr-003"], "single"),
    ("q10", "How many Ethernet ports does the LX-200 have?", ["prod-001"], "exact_term"),
    ("q11", "What frame rate does the LX-300 record?", ["prod-002"], "single"),
    ("q12", "How long must a password be, and how do I reach the VPN?", ["sec-001", "it-003"], "multi_hop"),
    ("q13", "What is the daily meal allowance abroad?", [], "unanswerable"),
    ("q14", "Who is the chief executive of the company?", [], "unanswerable"),
    ("q15", "What does the LX-500 cost?", [], "unanswerable"),
    ("q16", "How do I book a meeting room?", [], "unanswerable"),
]


def _graph(name: str, retrieve: dict[str, Any], rerank: str | None = None, threshold: float = 0.0) -> dict:
    nodes: dict[str, Any] = {"retrieve": {"type": "retrieve", "params": retrieve}}
    edges = {"start": "retrieve", "retrieve": "end"}
    routes = {}
    if rerank:
        nodes["rerank"] = {"type": "rerank", "params": {"model": rerank, "top_k": 10}}
        nodes["guard"] = {"type": "guard", "params": {"mode": "absolute", "threshold": threshold}}
        edges = {"start": "retrieve", "retrieve": "rerank", "rerank": "guard", "guard": "end"}
        routes = {"guard": {"field": "guard_triggered", "cases": {True: "end"}}}
    return {"name": name, "nodes": nodes, "edges": edges, "routes": routes}


CONFIGS = [
    _graph("bm25", {"bm25": {}}),
    _graph("bm25_plain", {"bm25": {"k1": 1.5, "b": 0.75, "stem": False}}),
    _graph("hybrid_weighted", {"dense": {"embedder": "e5", "weight": 0.5}, "bm25": {"weight": 0.5},
                               "fusion": {"method": "weighted", "norm": "minmax"}}),
    _graph("rerank_e5", {"bm25": {}}, rerank="e5", threshold=0.8),
    _graph("rerank_minilm", {"bm25": {}}, rerank="minilm", threshold=0.3),
]


def write_eval_set(folder: Path, questions=QUESTIONS) -> Path:
    """Write and freeze the tiny eval set (and its corpus) under ``folder``; returns the set path."""
    from evalkit.evalsets import freeze

    (folder / "corpora").mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpora" / "tiny.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in DOCS))
    path = folder / "tiny.jsonl"
    path.write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": g, "type": t, "lang": "en"})
                            + "\n" for i, q, g, t in questions))
    freeze(path, corpus=str(corpus))
    return path


def config_files(folder: Path) -> list[Path]:
    """The five configs as YAML files (so summaries record a config_path)."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for c in CONFIGS:
        p = folder / f"{c['name']}.yaml"
        p.write_text(yaml.safe_dump(c, sort_keys=False))
        paths.append(p)
    return paths


def real_run(evalset: Path, configs: list[Path], out: Path, mlflow: bool = False) -> Path:
    from evalkit.evalsets import load_eval_set
    from evalkit.graph import load_graph_config
    from evalkit.run.runner import RunOptions, run_eval

    opts = RunOptions(output=out, progress=False, mlflow=mlflow)
    run_eval(load_eval_set(str(evalset)), [load_graph_config(p) for p in configs], opts, echo=lambda m: None)
    return out


@pytest.fixture(scope="session")
def tiny(tmp_path_factory) -> dict[str, Path]:
    """Real runs (no MLflow): ``run`` = bm25, bm25_plain, hybrid_weighted; ``rerankers`` is built on demand."""
    root = tmp_path_factory.mktemp("tiny")
    evalset = write_eval_set(root)
    configs = config_files(root / "configs")
    run = real_run(evalset, configs[:3], root / "results" / "tiny.json")
    return {"root": root, "evalset": evalset, "configs": root / "configs", "run": run}


@pytest.fixture(scope="session")
def rerankers(tiny) -> Path:
    """A real run of rerank_e5 and rerank_minilm on the tiny set (loads MiniLM: ~20 s once)."""
    configs = [tiny["configs"] / "rerank_e5.yaml", tiny["configs"] / "rerank_minilm.yaml"]
    return real_run(tiny["evalset"], configs, tiny["root"] / "results" / "rerankers.json")


@pytest.fixture(scope="session")
def _mlflow_template(tmp_path_factory) -> Path:
    """An empty, fully migrated MLflow sqlite store (creating one costs ~12 s; copying it, nothing)."""
    import os

    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow import MlflowClient

    path = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    MlflowClient(f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def mlflow_store(_mlflow_template):
    """``store(folder)``: put a fresh copy of the migrated store at ``folder/mlflow.db`` (the default location)."""
    import shutil

    def store(folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy(_mlflow_template, folder / "mlflow.db"))
    return store


# ---------------------------------------------------------------------------- synthetic runs


def qr(qid: str, gold: list[str], metrics: dict[str, float] | None = None, *, retrieved: list[str] | None = None,
       reranked: list[str] | None = None, top1: float | None = None, outcome: str | None = None,
       error: dict | None = None, trace: list[dict] | None = None, question: str | None = None) -> QueryResult:
    """A hand-made QueryResult; rankings are document ids, best first."""
    def docs(ids: list[str] | None) -> list[dict]:
        return [{"doc_id": d, "score": 1.0 / (i + 1)} for i, d in enumerate(ids or [])]

    return QueryResult(query_id=qid, question=question or f"question {qid}?", gold_doc_ids=list(gold),
                       retrieved=docs(retrieved), reranked=docs(reranked if reranked is not None else retrieved),
                       metrics=dict(metrics or {}), trace=list(trace or []), error=error,
                       outcome=outcome or ("failed" if error else "completed"), type="single", lang="en",
                       rerank_top1=top1)


def write_run(folder: Path, name: str, variants: dict[str, list[QueryResult]], *, es_name: str = "tiny",
              version: int = 1, sha: str = "a" * 64, corpus_sha: str = "c" * 64, path: str = "",
              mlflow: dict | None = None, extra_rows: dict[str, list[dict]] | None = None,
              log_mlflow: bool = False) -> Path:
    """Write a run in the runner's layout; returns the summary path.

    ``log_mlflow`` logs it with ``evalkit.track.log_invocation`` into the sqlite store
    beside it (parent + child runs), as ``evalkit run`` does, and records the run ids.
    """
    from evalkit.analysis.runs import summary_metrics

    out = folder / f"{name}.json"
    n = max(len(v) for v in variants.values())
    summary = RunSummary(eval_set=EvalSetRef(name=es_name, version=version, sha256=sha, n_queries=n, path=path,
                                             corpus_sha256=corpus_sha), variants={}, mlflow=mlflow or {})
    if log_mlflow:  # as evalkit run records it (evalkit.machine), so a run read back from MLflow has it too
        from evalkit.machine import environment

        summary.environment = environment()
    for vname, results in variants.items():
        d = folder / name / vname
        d.mkdir(parents=True, exist_ok=True)
        rows = [r.to_dict() for r in results]
        for row, extra in zip(rows, (extra_rows or {}).get(vname, [])):
            row.update(extra)
        (d / "per_query.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        summary.variants[vname] = VariantSummary(metrics=summary_metrics(results),
                                                 n_failed=sum(r.error is not None for r in results),
                                                 n_queries=len(results),
                                                 n_excluded=sum(not r.gold_doc_ids for r in results))
    if log_mlflow:
        from evalkit.track import VariantLog, log_invocation

        yaml = "name: {}\nnodes: {{retrieve: {{type: retrieve, params: {{bm25: {{}}}}}}}}\nedges: {{start: retrieve, retrieve: end}}\n"
        logs = [VariantLog(name=v, params={"variant": v}, config_yaml=yaml.format(v), summary=summary.variants[v],
                           results=results, per_query_path=folder / name / v / "per_query.jsonl")
                for v, results in variants.items()]
        summary.mlflow = log_invocation(summary, logs, folder)
    out.write_text(json.dumps(summary.to_dict(), indent=2))
    return out
