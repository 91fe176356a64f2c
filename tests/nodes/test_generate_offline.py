"""The ``generate`` node with the offline ``extractive`` backend (real e5): what it quotes from the
corpus is never read as something it is not. Corpus tags in 【…】 are not citations, and graph
relation lines (``A --co_occurs--> B``) never become answer sentences."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from graphrag.conftest import DOCS as GRAPH_DOCS  # the tiny supply-chain corpus (ZX-100 -> KS-9 -> Borealis)

from evalkit.graph import build_graph, config_from_dict, initial_state
from evalkit.index.corpus import Corpus
from evalkit.index.resources import Resources
from evalkit.records import Document
from evalkit.text.citations import strip_markers

pytestmark = pytest.mark.integration  # the extractive backend loads the real e5 model

EXTRACTIVE = {"backend": "extractive", "cache": "off"}
TAGGED = [  # the demo's corpus marks withdrawn rules like this (eval_sets/corpora/demo_kb.jsonl)
    ("fin-020", "旧版差旅标准", "【已废弃】旧版差旅标准：一线城市每晚住宿不超过 500 元。【重要提示】请改用 2026 版标准。"),
    ("fin-021", "食堂", "食堂每周五供应特色午餐。"),
]


def _view(docs, tmp_path: Path):
    corpus = Corpus(path="<tiny>", documents=[Document(id=i, title=t, text=x) for i, t, x in docs],
                    sha256=hashlib.sha256(repr(docs).encode()).hexdigest())
    return Resources(corpus, cache_root=tmp_path / "cache").for_variant({"method": "document"}, seed=0)


def _run(view, nodes: dict, edges: dict, question: str, lang: str) -> dict:
    cfg = config_from_dict({"name": "t", "chunking": {"method": "document"}, "nodes": nodes, "edges": edges})
    outcome = build_graph(cfg, view).run(initial_state("q1", question, lang))
    assert outcome.error is None, outcome.error
    return outcome.state


def test_a_corpus_tag_in_full_width_brackets_copied_into_the_answer_is_no_citation(tmp_path: Path):
    nodes = {"retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "auto", "top_k": 2}}},
             "generate": {"type": "generate", "params": {"llm": EXTRACTIVE, "evidence_from": "retrieved",
                                                         "evidence_k": 2}}}
    state = _run(_view(TAGGED, tmp_path), nodes, {"start": "retrieve", "retrieve": "generate", "generate": "end"},
                 "旧版差旅标准一线城市住宿上限是多少？", "zh")
    assert "【已废弃】" in state["answer"]  # the generator quoted the tagged sentence...
    assert state["invalid_citations"] == []  # ...and the tag is not an invalid citation (it was before)
    assert state["used_documents"] == ["fin-020"] and state["citations"] == ["fin-020"]


def test_graph_facts_reach_an_extractive_answer_as_their_source_sentences(tmp_path: Path):
    """Only d-box is shown as a passage; the graph's triples come from d-spec, d-box and d-chip.
    Before the fix the answer was 'ZX-100 --co_occurs--> KS-9 [d-spec]' (a relation line quoted as a claim)."""
    nodes = {"g": {"type": "graph_local", "params": {"link": {"embedding": False}, "max_evidence": 5}},
             "generate": {"type": "generate", "params": {"llm": EXTRACTIVE, "evidence_from": "retrieved",
                                                         "evidence_k": 1, "graph_evidence": True}}}
    state = _run(_view(GRAPH_DOCS, tmp_path), nodes, {"start": "g", "g": "generate", "generate": "end"},
                 "Which company makes the chip used in the ZX-100?", "en")
    assert any("[co_occurs]" in line for line in state["graph_evidence"])  # there were relation lines to quote
    assert state["retrieved"][0].doc_id == "d-box"
    answer = state["answer"]
    assert "-->" not in answer and "co_occurs" not in answer
    texts = {i: f"{t}\n{x}" for i, t, x in GRAPH_DOCS}
    for line in answer.splitlines():  # every answer line is a sentence of the document it cites
        cited = re.findall(r"\[([^\]]+)\]", line)
        assert len(cited) == 1 and strip_markers(line).strip() in texts[cited[0]], line
    assert "d-spec" in state["used_documents"]  # a triple's source document, not shown as a passage
    assert state["invalid_citations"] == []
    assert {"d-spec", "d-chip"} <= {h.doc_id for h in state["answer_evidence"]}
