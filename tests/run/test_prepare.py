"""Batching (``Node.prepare``) changes no number: every per-query record, with it and without.

Each variant runs twice on the same eval set, ``RunOptions(prepare=True)`` (all questions
searched in one batch per channel before the loop) and ``prepare=False`` (every query
encodes and searches alone), with sharing off and fresh caches, so neither run can reuse
the other's vectors or searches. Records are compared whole, except wall-clock timings.
Real models: e5 (batch-invariant, so its queries are batch-encoded) and MiniLM (not, so
its queries are encoded alone either way); flat, IVF and HNSW indexes; BM25 both IDFs;
a rewrite node that adds queries ``prepare`` never saw.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.evalsets import freeze, load_eval_set
from evalkit.graph import config_from_dict
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import read_results

TOPICS = [
    ("invoice", "Electronic invoices above {n} euros need the director's approval before payment."),
    ("laptop", "A broken laptop is repaired by the IT desk within {n} business days; open a ticket first."),
    ("error", "Error E-{n} means the battery controller failed and the unit must be replaced."),
    ("retry", "The field retry.max_attempts defaults to {n}; timeout.seconds defaults to 30."),
    ("leave", "After a child is born, employees get {n} days of parental leave."),
    ("hotel", "Hotel allowance is {n} euros per night in capital cities and less elsewhere."),
]


def make_set(tmp_path: Path) -> Path:
    docs = [{"id": f"{t}-{i:02d}", "title": f"{t} policy {i}", "text": text.format(n=100 + 37 * i)}
            for t, text in TOPICS for i in range(8)]
    (tmp_path / "corpora").mkdir()
    corpus = tmp_path / "corpora" / "c.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    questions = [("who approves electronic invoices above 137 euros", ["invoice-01"]),
                 ("my laptop is broken, how long is the repair", ["laptop-00"]),
                 ("what does error E-211 mean", ["error-03"]), ("retry.max_attempts default", ["retry-00"]),
                 ("parental leave days after a child is born", ["leave-00"]), ("hotel allowance or invoice limit", []),
                 ("what does error E-211 mean", ["error-03"])]  # a repeated question
    rows = [{"id": f"q{i}", "question": q, "relevant_doc_ids": g, "type": "single" if g else "unanswerable", "lang": "en"}
            for i, (q, g) in enumerate(questions)]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    freeze(path, corpus=str(corpus))
    return path


def _retrieve(name: str, params: dict, extra: dict | None = None) -> dict:
    nodes = {"retrieve": {"type": "retrieve", "params": params}}
    edges = {"start": "retrieve", "retrieve": "end"}
    if extra:
        nodes = {**extra, **nodes}
        edges = {"start": next(iter(extra)), next(iter(extra)): "retrieve", "retrieve": "end"}
    return {"name": name, "chunking": {"method": "document"}, "nodes": nodes, "edges": edges}


VARIANTS = [
    _retrieve("hybrid_e5", {"dense": {"embedder": "e5", "top_k": 20}, "bm25": {"top_k": 20}, "top_k": 20}),
    _retrieve("minilm_hnsw", {"dense": {"embedder": "minilm", "index": "hnsw", "ef_search": 64, "top_k": 10},
                              "top_k": 10}),
    _retrieve("e5_ivf_okapi", {"dense": {"embedder": "e5", "index": "ivf", "nlist": 4, "nprobe": 2, "top_k": 15},
                               "bm25": {"idf": "okapi", "k1": 1.2, "b": 0.75, "top_k": 15},
                               "fusion": {"method": "weighted", "norm": "zscore"}, "top_k": 15}),
    _retrieve("rewrite_hybrid", {"dense": {"embedder": "e5", "top_k": 10}, "bm25": {"top_k": 10}, "top_k": 10},
              {"rewrite": {"type": "query_rewrite", "params": {"dictionary": {"broken": ["repair ticket"]}}}}),
]
TIMING = ("duration_ms", "elapsed_ms", "started_at")


def comparable(row) -> dict:
    """A per-query record without wall-clock fields (the only thing allowed to differ)."""
    d = row.to_dict()
    d["trace"] = [{k: v for k, v in ev.items() if k not in TIMING} for ev in d["trace"]]
    d.pop("latency_ms", None)
    d["usage"] = {k: {f: x for f, x in u.items() if "latency" not in f} for k, u in d.get("usage", {}).items()}
    return d


@pytest.mark.integration
def test_prepare_on_and_off_give_identical_records(tmp_path, monkeypatch):
    es = make_set(tmp_path)
    configs = [config_from_dict(v) for v in VARIANTS]
    rows = {}
    for prepare in (True, False):
        monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path / f"cache-{prepare}"))  # no shared vectors or indexes
        out = tmp_path / f"p{prepare}.json"
        summary = run_eval(load_eval_set(str(es)), configs, RunOptions(output=out, progress=False, mlflow=False,
                                                                        share_work=False, prepare=prepare),
                           echo=lambda m: None)
        rows[prepare] = {v["name"]: (summary.variants[v["name"]].metrics,
                                     [comparable(r) for r in read_results(out.with_suffix("") / v["name"]
                                                                          / "per_query.jsonl")])
                         for v in VARIANTS}
    for name in rows[True]:
        on, off = rows[True][name], rows[False][name]
        assert on[0] == off[0], name
        assert len(on[1]) == 7
        for a, b in zip(on[1], off[1]):
            assert a == b, (name, a["query_id"])
    # the rewrite variant really ran queries that prepare never saw
    rewritten = [r for r in rows[True]["rewrite_hybrid"][1] if len(r["trace"][0]["wrote"].get("queries", [])) > 1]
    assert rewritten


def test_prepare_batches_and_run_reads_it(tmp_path, monkeypatch):
    """With prepare, a variant does one BM25 batch call and no per-query search."""
    from evalkit.index.bm25 import BM25Index

    es = make_set(tmp_path)
    calls = {"search": 0, "many": 0}
    real_search, real_many = BM25Index.search, BM25Index.search_many
    monkeypatch.setattr(BM25Index, "search", lambda self, q, k: calls.__setitem__("search", calls["search"] + 1)
                        or real_search(self, q, k))
    monkeypatch.setattr(BM25Index, "search_many", lambda self, qs, k: calls.__setitem__("many", calls["many"] + 1)
                        or real_many(self, qs, k))
    cfg = config_from_dict(_retrieve("bm25", {"bm25": {"top_k": 5}}))
    run_eval(load_eval_set(str(es)), [cfg], RunOptions(output=tmp_path / "a.json", progress=False, mlflow=False),
             echo=lambda m: None)
    assert calls == {"search": 6, "many": 1}  # one batch of the 6 distinct questions, nothing per query
    calls.update(search=0, many=0)
    run_eval(load_eval_set(str(es)), [cfg], RunOptions(output=tmp_path / "b.json", progress=False, mlflow=False,
                                                       prepare=False), echo=lambda m: None)
    assert calls == {"search": 6, "many": 6}  # each query alone (the repeated one reused from the work memo)
