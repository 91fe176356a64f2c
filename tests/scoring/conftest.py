"""Fixtures for ``evalkit score``: a tiny frozen eval set and a real run of two variants over it.

Corpus of 7 short English documents; questions (gold in brackets):
  q1 invoice approval above 5000        [doc-a]
  q2 error E-4012 battery                [doc-d]
  q3 hotel allowance invoice per night   [doc-b, doc-g, doc-e]  (BM25 cannot find doc-e: recall 2/3)
  q4 laptop repair days                  [doc-c]
  q5 salary of the CEO                   []  unanswerable
  q6 quantum chromodynamics              [doc-c]  (no shared term: an empty ranking, 0)
Variants (real ``run_eval``, BM25 only, no models):
  bm25      retrieve                      final ranking = retrieval ranking
  reversed  retrieve -> test_reverse   final ranking = retrieval ranking reversed (two stages differ)
"""
from __future__ import annotations

import json
from pathlib import Path

import fakes  # noqa: F401  (registers the test_reverse node type)
import pytest
from fakes import DOCS, QUESTIONS

from evalkit.evalsets import freeze, load_eval_set
from evalkit.graph import config_from_dict
from evalkit.run.runner import RunOptions, run_eval

METRICS = ("recall@20", "recall@3", "hit@1", "hit@5", "mrr@10", "ndcg@10", "ndcg@3", "precision@5")


BM25 = {"name": "bm25", "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}}}},
        "edges": {"start": "retrieve", "retrieve": "end"}}
REVERSED = {"name": "reversed",
            "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}}},
                      "rev": {"type": "test_reverse", "params": {}}},
            "edges": {"start": "retrieve", "retrieve": "rev", "rev": "end"}}


def write_eval_set(folder: Path, questions=QUESTIONS, docs=DOCS) -> Path:
    """``folder/tiny.jsonl`` frozen as v1 over ``folder/corpora/tiny.jsonl``."""
    (folder / "corpora").mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpora" / "tiny.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in docs))
    es = folder / "tiny.jsonl"
    es.write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": g, "type": t, "lang": "en"}) + "\n"
                          for i, q, g, t in questions))
    freeze(es, corpus=str(corpus))
    return es


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, Path]:
    """(eval set path, summary JSON of a real run of bm25 and reversed)."""
    tmp = tmp_path_factory.mktemp("score")
    es = write_eval_set(tmp)
    out = tmp / "results" / "tiny.json"
    run_eval(load_eval_set(f"{es}@v1"), [config_from_dict(BM25), config_from_dict(REVERSED)],
             RunOptions(output=out, progress=False, mlflow=False, metrics=METRICS), echo=lambda m: None)
    return es, out


def _per_query(summary: Path, variant: str) -> list[dict]:
    path = summary.with_suffix("") / variant / "per_query.jsonl"
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def per_query():
    """``per_query(summary_json, variant)``: the raw rows of that variant's per_query.jsonl."""
    return _per_query


@pytest.fixture
def metrics() -> tuple[str, ...]:
    """The metrics the ``tiny`` run computed."""
    return METRICS


@pytest.fixture
def make_eval_set():
    """``make_eval_set(folder, questions=..., docs=...)``: a frozen tiny eval set (see ``write_eval_set``)."""
    return write_eval_set
