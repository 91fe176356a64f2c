"""Retrieval and evidence mechanisms: dedupe on every retrieval node, mmr, reorder, compress, and graph
triples shown to (and citable by) the generator."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from fakes import BagOfWords
from pydantic import ValidationError

from evalkit.errors import ConfigError
from evalkit.graph import build_graph, config_from_dict, initial_state
from evalkit.index.corpus import Corpus
from evalkit.index.resources import Resources
from evalkit.models.embedders import EMBEDDERS
from evalkit.nodes.compress import Compress, CompressParams
from evalkit.nodes.dedupe import Dedupe, dedupe
from evalkit.nodes.evidence import (
    MMR,
    MMRParams,
    Reorder,
    ReorderParams,
    lost_in_the_middle,
    mmr_order,
)
from evalkit.nodes.generate import Generate, GenerateParams, parse_triples
from evalkit.records import Document, Hit

# d-a1 and d-a2 say the same thing (near duplicates); d-b is about something else.
DOCS = [
    ("d-a1", "Leave", "Employees get ten days of parental leave. Apply in the HR portal."),
    ("d-a2", "Leave copy", "Employees get ten days of parental leave. Apply in the HR portal today."),
    ("d-b", "VPN", "The VPN needs the LanLink client. Error E-4012 means the token expired."),
    ("d-zh", "差旅", "一线城市住宿标准为每晚 750 元。二线城市为 500 元。报销需在三十天内提交。"),
]


EMBEDDERS.setdefault("mech-bow", lambda spec: BagOfWords("mech-bow/v1"))


@pytest.fixture
def view(tmp_path):
    docs = [Document(id=i, title=t, text=x) for i, t, x in DOCS]
    corpus = Corpus(path="<tiny>", documents=docs, sha256=hashlib.sha256(repr(DOCS).encode()).hexdigest())
    return Resources(corpus, cache_root=tmp_path / "cache").for_variant({"method": "document",
                                                                          "prepend_title": False})


def hits(*ids: str) -> list[Hit]:
    return [Hit(i, i.split("#")[0], 1.0 - n / 10) for n, i in enumerate(ids)]


# --- dedupe ------------------------------------------------------------------------------------

def test_dedupe_best_rank_and_most_hits_by_hand():
    h = [Hit("a#1", "a", .9), Hit("b#0", "b", .8), Hit("a#0", "a", .7), Hit("c#0", "c", .6), Hit("c#1", "c", .5),
         Hit("c#2", "c", .4)]
    assert dedupe(h, None) == h
    assert [x.id for x in dedupe(h, Dedupe(keep="best_rank"))] == ["a#1", "b#0", "c#0"]
    # c has 3 passages, a 2, b 1; each document keeps its best-ranked passage and its score
    assert dedupe(h, Dedupe(keep="most_hits")) == [Hit("c#0", "c", .6), Hit("a#1", "a", .9), Hit("b#0", "b", .8)]
    tie = [Hit("x#0", "x", 1), Hit("y#0", "y", .9), Hit("y#1", "y", .8), Hit("x#1", "x", .7)]
    assert [x.doc_id for x in dedupe(tie, Dedupe(keep="most_hits"))] == ["x", "y"]  # tie: best rank first


def test_dedupe_on_retrieve_and_graph_local(tmp_path):
    """Every retrieval node keeps one passage per document with dedupe (60-character chunks: several each)."""
    docs = [Document(id=i, title=t, text=x) for i, t, x in DOCS]
    corpus = Corpus(path="<tiny>", documents=docs, sha256="x" * 64)
    res = Resources(corpus, cache_root=tmp_path / "cache").for_variant({"method": "fixed", "size": 40,
                                                                         "overlap": 0, "prepend_title": False})
    for node, params, question in (("retrieve", {"bm25": {"tokenizer": "en"}}, "parental leave HR portal employees"),
                                   ("graph_local", {"link": {"embedding": False}}, "LanLink VPN error E-4012")):
        def run(extra, node=node, params=params, question=question):
            cfg = config_from_dict({"name": "d", "chunking": {"method": "fixed", "size": 40, "overlap": 0,
                                                               "prepend_title": False},
                                    "nodes": {"r": {"type": node, "params": {**params, **extra}}},
                                    "edges": {"start": "r", "r": "end"}})
            return build_graph(cfg, res).run(initial_state("q", question, "en"))
        plain = run({}).state["retrieved"]
        deduped = run({"dedupe": {"by": "document", "keep": "best_rank"}}).state["retrieved"]
        assert len({h.doc_id for h in plain}) < len(plain), node  # the case dedupe is for
        assert deduped == dedupe(plain, Dedupe()), node


# --- mmr ---------------------------------------------------------------------------------------

def test_mmr_order_by_hand():
    rel = np.array([0.9, 0.85, 0.5])
    sim = np.array([[1.0, 0.99, 0.1], [0.99, 1.0, 0.1], [0.1, 0.1, 1.0]])
    # lambda 0.5: 0 first (0.45); then 1 scores .425 - .495 = -.07, 2 scores .25 - .05 = .2: 2, then 1
    assert mmr_order(rel, sim, 0.5, 3) == [0, 2, 1]
    assert mmr_order(rel, sim, 1.0, 3) == [0, 1, 2]   # relevance only
    assert mmr_order(rel, sim, 0.5, 2) == [0, 2]
    assert mmr_order(np.array([0.5, 0.5]), np.eye(2), 0.5, 2) == [0, 1]  # ties: the better-ranked hit


def test_mmr_node_moves_a_near_duplicate_down(view):
    ranking = hits("d-a1", "d-a2", "d-b", "d-zh")
    node = MMR("mmr", MMRParams(embedder="mech-bow", lambda_mult=0.3, relevance="score"), view)
    out = node.run({"question": "parental leave", "retrieved": ranking})
    assert [h.id for h in out["retrieved"]][:2] == ["d-a1", "d-b"]          # the copy of d-a1 is not second
    assert sorted(out["retrieved"], key=lambda h: h.id) == sorted(ranking, key=lambda h: h.id)  # nothing lost
    keep = MMR("mmr", MMRParams(embedder="mech-bow", lambda_mult=1.0, relevance="score"), view)
    assert keep.run({"question": "x", "retrieved": ranking})["retrieved"] == ranking
    top = MMR("mmr", MMRParams(embedder="mech-bow", candidates=3, top_k=2, relevance="score"), view)
    assert [h.id for h in top.run({"question": "x", "retrieved": ranking})["retrieved"]][2:] == ["d-a2", "d-zh"]


def test_mmr_on_reranked_rewrites_the_scores_in_order(view):
    ranking = hits("d-a1", "d-a2", "d-b")
    node = MMR("mmr", MMRParams(field="reranked", embedder="mech-bow", lambda_mult=0.3, relevance="score"), view)
    out = node.run({"question": "parental leave", "reranked": ranking})
    assert set(out) == {"reranked", "rerank_scores"}
    assert out["rerank_scores"] == [h.score for h in out["reranked"]]
    with pytest.raises(ValidationError, match="top_k .* cannot exceed candidates"):
        MMRParams(candidates=5, top_k=6)


# --- reorder -----------------------------------------------------------------------------------

def test_lost_in_the_middle_by_hand():
    h = hits("1", "2", "3", "4", "5", "6")
    assert [x.id for x in lost_in_the_middle(h, 5)] == ["1", "3", "5", "4", "2", "6"]
    assert [x.id for x in lost_in_the_middle(h, 6)] == ["1", "3", "5", "6", "4", "2"]
    assert [x.id for x in lost_in_the_middle(h, 1)] == ["1", "2", "3", "4", "5", "6"]
    out = Reorder("r", ReorderParams(k=3)).run({"evidence": h[:3]})
    assert out == {"evidence": [h[0], h[2], h[1]]}


def test_transforms_need_their_field_upstream():
    for node in ({"type": "reorder", "params": {"field": "reranked"}}, {"type": "mmr", "params": {"field": "evidence"}}):
        with pytest.raises(ConfigError, match="reads state field '(reranked|evidence)', but on the path"):
            config_from_dict({"name": "x", "nodes": {"r": {"type": "retrieve", "params": {"bm25": {}}}, "t": node},
                              "edges": {"start": "r", "r": "t", "t": "end"}})


# --- compress ----------------------------------------------------------------------------------

def _compress(view, **params) -> Compress:
    return Compress("c", CompressParams(embedder="mech-bow", **params), view)


def test_compress_keeps_the_most_relevant_sentences_within_the_budget(view):
    ev = hits("d-a1", "d-b", "d-zh")
    out = _compress(view, budget=80).run({"question": "What does error E-4012 mean on the VPN?", "evidence": ev})
    kept = out["evidence_text"]
    assert kept["d-b"].startswith("The VPN needs") and "E-4012" in kept["d-b"]  # both VPN sentences fit
    assert sum(len(t) for t in kept.values()) <= 80
    c = out["compression"]
    assert c["budget"] == 80 and c["unit"] == "chars" and c["after"] <= 80 < c["before"]
    rows = {r["id"]: r for r in c["passages"]}
    assert rows["d-zh"]["kept"] == 0 and rows["d-zh"]["cut"] == 3 and len(rows["d-zh"]["cut_sentences"]) == 3
    assert [h.id for h in out["evidence"]] == [h.id for h in ev if rows[h.id]["kept"]]  # emptied passages leave
    assert "d-zh" not in kept
    everything = _compress(view, budget=10_000).run({"question": "VPN", "evidence": ev})
    assert everything["evidence"] == ev and everything["compression"]["after"] == everything["compression"]["before"]


def test_compress_in_tokens_and_when_nothing_fits(view):
    from evalkit.index.tokens import token_counter

    ev = hits("d-zh", "d-b")
    out = _compress(view, budget=12, unit="tokens").run({"question": "一线城市住宿标准是多少？", "evidence": ev})
    e5 = token_counter("e5")
    assert 0 < sum(e5.count(t) for t in out["evidence_text"].values()) <= 12
    tiny = _compress(view, budget=5).run({"question": "VPN client", "evidence": ev})
    assert [len(t) for t in tiny["evidence_text"].values()] == [5]  # the best sentence, cut to the budget


def test_compress_and_generate_with_graph_triples(view, fault_server):
    triples = ["LanLink [co_occurs] VPN (d-b)", "HR portal [co_occurs] parental leave (d-a1)", "junk line"]
    comp = _compress(view, budget=60, graph_evidence=True)
    out = comp.run({"question": "Which client does the VPN need?", "evidence": hits("d-zh"),
                    "graph_evidence": triples})
    assert out["graph_evidence"][0] == "LanLink [co_occurs] VPN (d-b)" and "junk line" not in out["graph_evidence"]
    assert out["compression"]["triples_kept"] == len(out["graph_evidence"])

    fault_server.push("text:The VPN needs the LanLink client [d-b]. See also [co_occurs] and [nope-1].")
    gen = Generate("g", GenerateParams(llm={"backend": "openai", "model": "m", "base_url": fault_server.base_url,
                                            "max_retries": 0, "cache": "off"}, graph_evidence=True), view)
    state = {"question": "Which client does the VPN need?", "evidence": hits("d-zh"),
             "evidence_text": {"d-zh": "一线城市住宿标准为每晚 750 元。"}, "graph_evidence": triples}
    res = gen.run(state)
    prompt = fault_server.requests[0].body["messages"][-1]["content"]
    assert "[d-zh] (score 1.000)\n一线城市住宿标准为每晚 750 元。\n" in prompt      # the compressed text is shown
    assert "二线城市" not in prompt                                                  # the cut sentence is not
    assert "Graph facts (each from the document in brackets):\n[d-b] LanLink --co_occurs--> VPN" in prompt
    assert res["used_documents"] == ["d-b"]                       # a triple's source document is a valid citation
    assert res["invalid_citations"] == ["co_occurs", "nope-1"]
    assert [h.id for h in res["answer_evidence"]] == ["d-zh", "d-b", "d-a1"]  # triple sources, for the judges


def test_parse_triples_skips_lines_without_a_source():
    assert parse_triples(["A [r] B (d1)", "A [r] B (?)", "no triple", "名称甲 [co_occurs] 名称乙 (zh-1)"]) == [
        ("A", "r", "B", "d1"), ("名称甲", "co_occurs", "名称乙", "zh-1")]


def test_generate_without_graph_evidence_reads_no_triples(view):
    gen_cfg = {"type": "generate", "params": {"llm": {"backend": "extractive"}, "evidence_from": "retrieved",
                                              "graph_evidence": True}}
    cfg = config_from_dict({"name": "g", "chunking": {"method": "document", "prepend_title": False},
                            "nodes": {"r": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}}},
                                      "g": gen_cfg},
                            "edges": {"start": "r", "r": "g", "g": "end"}})  # no graph node: passages only
    out = build_graph(cfg, view).run(initial_state("q", "What does error E-4012 mean?", "en"))
    assert out.error is None and out.state["used_documents"] == ["d-b"]


def test_compress_params_are_checked():
    with pytest.raises(ValidationError, match="no tokenizer for 'bm25'"):
        CompressParams(unit="tokens", tokenizer="bm25")
    assert json.loads(CompressParams().model_dump_json())["budget"] == 1000
