"""The fault suite's workspace: a tiny frozen eval set and fast configs (helpers: tests/faultkit.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from faultkit import DOCS, N_QUESTIONS, jsonl, question

from evalkit.evalsets import freeze

BM25 = ("name: {name}\nchunking: {{method: document}}\nnodes:\n  retrieve: {{type: retrieve, params: {{bm25: "
        "{{tokenizer: en, k1: {k1}}}}}}}\nedges: {{start: retrieve, retrieve: end}}\n")
HELD = ("name: held\nchunking: {{method: document}}\nnodes:\n  hold: {{type: test_hold, params: {{hold: {hold}, "
        "free: {free}}}}}\n  retrieve: {{type: retrieve, params: {{bm25: {{tokenizer: en}}}}}}\nedges: {{start: hold, "
        "hold: retrieve, retrieve: end}}\n")
HELD_AFTER = 25  # held.yaml runs this many queries, then waits while the workspace's file HOLD exists


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """sets/kb.jsonl (40 questions, frozen v1) over sets/corpora/kb.jsonl (60 documents); bm25.yaml,
    bm25b.yaml (another k1) and held.yaml (runs 25 queries, then waits while the file HOLD exists)."""
    (tmp_path / "sets" / "corpora").mkdir(parents=True)
    corpus = tmp_path / "sets" / "corpora" / "kb.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": "", "text": t}) + "\n" for i, t in DOCS))
    (tmp_path / "sets" / "kb.jsonl").write_text(jsonl([question(n) for n in range(N_QUESTIONS)]))
    freeze(tmp_path / "sets" / "kb.jsonl", corpus=str(corpus))
    (tmp_path / "bm25.yaml").write_text(BM25.format(name="bm25", k1=1.5))
    (tmp_path / "bm25b.yaml").write_text(BM25.format(name="bm25b", k1=0.9))
    (tmp_path / "held.yaml").write_text(HELD.format(hold=tmp_path / "HOLD", free=HELD_AFTER))
    return tmp_path
