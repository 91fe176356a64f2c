"""Fixtures for the agentic tests: a tiny bilingual corpus, a toy embedder, the LLM fault server.

The ``toy`` embedder (hashed bag of words, 64-d) is registered for these tests only: it is
deterministic and instant, so the loop logic is tested without loading e5. Tests that
need the real offline models say so (``integration``).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from fakes import BagOfWords

from evalkit.index.corpus import Corpus
from evalkit.index.resources import Resources
from evalkit.judges import make_judge
from evalkit.models.embedders import EMBEDDERS
from evalkit.records import Document

# Gold chains: q-chip needs d-spec (ZX-100 uses the KS-9 chip) then d-chip (KS-9 is made by Borealis).
DOCS = [
    ("d-spec", "ZX-100 spec", "The ZX-100 gateway uses the KS-9 chip. The ZX-100 weighs 2 kg."),
    ("d-chip", "KS-9 chip", "The KS-9 chip is made by Borealis Semiconductor in Oslo."),
    ("d-leave", "Parental leave policy", "Employees get 10 days of parental leave after the birth of a child."),
    ("d-price", "Price list", "The ZX-100 costs 300 dollars. The ZX-200 costs 450 dollars."),
    ("d-noise", "Cafeteria", "The cafeteria serves lunch specials on Fridays."),
    ("d-zh", "差旅制度", "一线城市每晚住宿标准为 750 元，二线城市为 500 元。"),
]


EMBEDDERS.setdefault("toy", lambda spec: BagOfWords("toy-bow/v1"))

DOCUMENT_CHUNKING = {"method": "document", "prepend_title": True}


def make_corpus(docs=DOCS) -> Corpus:
    documents = [Document(id=i, title=t, text=x) for i, t, x in docs]
    return Corpus(path="<tiny>", documents=documents, sha256=hashlib.sha256(repr(docs).encode()).hexdigest())


@pytest.fixture
def view(tmp_path: Path):
    """Node resources over the tiny corpus, one passage per document."""
    resources = Resources(make_corpus(), cache_root=tmp_path / "cache", make_judge=make_judge)
    return resources.for_variant(DOCUMENT_CHUNKING, seed=0)


@pytest.fixture
def evalset(tmp_path: Path) -> Path:
    """The tiny corpus as a frozen eval set: answerable, multi-hop and unanswerable questions."""
    from evalkit.evalsets import freeze

    (tmp_path / "corpora").mkdir()
    corpus = tmp_path / "corpora" / "tiny.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in DOCS),
                      encoding="utf-8")
    questions = [
        ("q1", "How many days of parental leave do employees get?", ["d-leave"], "single", "en"),
        ("q2", "Who makes the chip used in the ZX-100?", ["d-spec", "d-chip"], "multi_hop", "en"),
        ("q3", "How much does the ZX-900 cost?", [], "unanswerable", "en"),
        ("q4", "Which is cheaper, the ZX-100 or the ZX-200?", ["d-price"], "comparison", "en"),
    ]
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": g, "type": t, "lang": lang})
                            + "\n" for i, q, g, t, lang in questions), encoding="utf-8")
    freeze(path, corpus=str(corpus))
    return path


@pytest.fixture
def llm_spec(fault_server) -> dict:
    """An ``openai`` LLM spec for the fault server: no retries, no cache (every call reaches it)."""
    return {"backend": "openai", "model": "scripted", "base_url": fault_server.base_url, "max_retries": 0,
            "timeout_s": 10.0, "cache": "off"}
