"""retrieve's title channel (evalkit.nodes.title_channel): a question naming a document's title finds it even
when the passages use other words; the channel is its own ranking in channel_hits, fused like dense and BM25,
filtered like them, and absent (same searches, same records) when not configured."""
from __future__ import annotations

import hashlib

import pytest
from pydantic import ValidationError

from evalkit.graph import build_graph, config_from_dict, initial_state
from evalkit.index.corpus import Corpus
from evalkit.index.resources import Resources
from evalkit.nodes.retrieve import Retrieve, RetrieveParams
from evalkit.records import Document

DOCS = [  # id, title, text, dept
    ("hr-1", "Remote work policy", "Employees may work two days a week from home.", "hr"),
    ("hr-2", "Parental leave", "Ten days after the birth of a child; apply in the portal.", "hr"),
    ("it-1", "VPN client", "Install LanLink before travelling; remote access needs it.", "it"),
    ("it-2", "", "Untitled notes: remote work policy questions go to HR.", "it"),
]
CHUNKING = {"method": "document", "prepend_title": False}


@pytest.fixture
def view(tmp_path):
    docs = [Document(id=i, title=t, text=x, metadata={"dept": d}) for i, t, x, d in DOCS]
    corpus = Corpus(path="<tiny>", documents=docs, sha256=hashlib.sha256(repr(DOCS).encode()).hexdigest())
    return Resources(corpus, cache_root=tmp_path / "cache").for_variant(CHUNKING)


def run(view, params, question, dept="hr"):
    cfg = config_from_dict({"name": "t", "chunking": CHUNKING, "nodes": {"retrieve": {"type": "retrieve",
                                                                                     "params": params}},
                            "edges": {"start": "retrieve", "retrieve": "end"}})
    out = build_graph(cfg, view).run(initial_state("q", question, "en", attributes={"dept": dept}))
    assert out.error is None, out.error
    return out.state


def test_the_title_channel_ranks_documents_by_their_title_alone(view):
    state = run(view, {"title": {"tokenizer": "en"}}, "what is the remote work policy?")
    titles = state["channel_hits"]["title"]
    # hr-1's title is "Remote work policy"; it-1 and it-2 say "remote" only in their text (it-2 has no title)
    assert [h.doc_id for h in titles] == ["hr-1"] and [h.doc_id for h in state["retrieved"]] == ["hr-1"]
    assert titles[0].id == view.passages().units[0].id and titles[0].score > 0


def test_it_is_fused_with_bm25_as_a_channel_of_its_own(view):
    both = run(view, {"bm25": {"tokenizer": "en"}, "title": {"tokenizer": "en", "weight": 1.0},
                      "fusion": {"method": "rrf", "k": 60}}, "remote work policy")
    assert set(both["channel_hits"]) == {"bm25", "title"}
    bm25_only = run(view, {"bm25": {"tokenizer": "en"}}, "remote work policy")
    # BM25 over the texts puts it-2 ("remote work policy questions") first; the title channel lifts hr-1 to the top
    assert bm25_only["retrieved"][0].doc_id == "it-2" and both["retrieved"][0].doc_id == "hr-1"
    assert "title" not in bm25_only["channel_hits"]


def test_a_filter_restricts_the_title_channel_too(view):
    state = run(view, {"title": {"tokenizer": "en"}, "filters": {"field": "dept", "eq": "it"}}, "VPN client policy")
    assert [h.doc_id for h in state["retrieved"]] == ["it-1"]
    state = run(view, {"title": {"tokenizer": "en"}, "filters": {"field": "dept", "eq": "it"}}, "remote work policy")
    assert state["retrieved"] == []  # hr-1's title matches, but it is not an it document


def test_title_only_config_is_valid_and_no_channel_is_refused():
    assert RetrieveParams(title={}).title.top_k == 20
    with pytest.raises(ValidationError, match="'dense', 'bm25' and/or 'title'"):
        RetrieveParams()


def test_the_title_search_is_a_shared_part_only_when_configured():
    plain = Retrieve.shared_parts(RetrieveParams(bm25={}))
    titled = Retrieve.shared_parts(RetrieveParams(bm25={}, title={}))
    assert [p["search"] for p, _ in plain] == ["bm25"]
    assert [p["search"] for p, _ in titled] == ["bm25", "title"] and titled[0] == plain[0]
