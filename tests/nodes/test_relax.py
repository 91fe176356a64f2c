"""retrieve's relax rule: a strict filter leaves too few passages, the looser second search fills the ranking,
and retrieval_relaxed (in the trace) says so."""
from __future__ import annotations

import hashlib

import pytest
from pydantic import ValidationError

from evalkit.graph import build_graph, config_from_dict, initial_state
from evalkit.index.corpus import Corpus
from evalkit.index.resources import Resources
from evalkit.nodes.relax import Relax, changes, relaxed_settings
from evalkit.nodes.retrieve import Retrieve, RetrieveParams
from evalkit.records import Document

DOCS = [  # id, text, dept
    ("hr-leave", "Parental leave is ten days. Apply for leave in the HR portal.", "hr"),
    ("fin-leave", "Leave for travel days is booked as leave in the finance tool.", "finance"),
    ("it-leave", "Before leave, hand over your VPN token to the IT desk.", "it"),
    ("it-vpn", "The VPN needs the LanLink client.", "it"),
]
STRICT = {"field": "dept", "eq": {"from_record": "dept"}}


@pytest.fixture
def view(tmp_path):
    docs = [Document(id=i, title="", text=t, metadata={"dept": d}) for i, t, d in DOCS]
    corpus = Corpus(path="<tiny>", documents=docs, sha256=hashlib.sha256(repr(DOCS).encode()).hexdigest())
    return Resources(corpus, cache_root=tmp_path / "cache").for_variant({"method": "document",
                                                                          "prepend_title": False})


def _run(view, params, dept="hr", question="leave"):
    cfg = config_from_dict({"name": "r", "chunking": {"method": "document", "prepend_title": False},
                            "nodes": {"retrieve": {"type": "retrieve", "params": params}},
                            "edges": {"start": "retrieve", "retrieve": "end"}})
    out = build_graph(cfg, view).run(initial_state("q", question, "en", attributes={"dept": dept}))
    assert out.error is None, out.error
    return out.state, out.trace


def test_a_strict_filter_with_too_few_hits_fires_the_rule_and_the_trace_says_what_changed(view):
    params = {"bm25": {"tokenizer": "en", "top_k": 2}, "top_k": 2, "filters": STRICT,
              "relax": {"min_hits": 2, "top_k": 3, "filters": "drop"}}
    state, trace = _run(view, params)
    # strict: only hr-leave is an hr document mentioning leave (1 < min_hits 2); looser: the 3 documents saying "leave"
    assert sorted(h.doc_id for h in state["retrieved"]) == ["fin-leave", "hr-leave", "it-leave"]
    record = state["retrieval_relaxed"]
    assert record == {"fired": True, "min_hits": 2, "hits_before": 1, "hits_after": 3,
                      "changed": {"top_k": {"from": 2, "to": 3}, "filters": {"from": STRICT, "to": None}}}
    wrote = trace[0].wrote
    assert wrote["retrieval_relaxed"]["fired"] is True


def test_enough_hits_keep_the_strict_ranking_and_record_that_the_rule_did_not_fire(view):
    params = {"bm25": {"tokenizer": "en", "top_k": 5}, "top_k": 5, "filters": STRICT,
              "relax": {"min_hits": 1, "filters": "drop"}}
    state, _ = _run(view, params)
    assert [h.doc_id for h in state["retrieved"]] == ["hr-leave"]
    assert state["retrieval_relaxed"] == {"fired": False, "min_hits": 1, "hits_before": 1, "hits_after": None,
                                          "changed": {}}


def test_a_looser_filter_replaces_the_strict_one_and_its_record_fields_are_read(view):
    looser = {"field": "dept", "in": ["hr", "it"]}
    params = {"bm25": {"tokenizer": "en"}, "filters": STRICT, "relax": {"min_hits": 2, "filters": looser}}
    state, _ = _run(view, params)
    assert sorted(h.doc_id for h in state["retrieved"]) == ["hr-leave", "it-leave"]  # finance stays out
    assert state["retrieval_relaxed"]["changed"] == {"filters": {"from": STRICT, "to": looser}}
    contract = Retrieve.contract(RetrieveParams(bm25={}, relax={"min_hits": 2, "filters": looser}))
    assert "retrieval_relaxed" in contract.writes
    assert "retrieval_relaxed" not in Retrieve.contract(RetrieveParams(bm25={})).writes


def test_the_looser_settings_never_lower_a_channel_and_keep_its_kind_settings():
    params = RetrieveParams(dense={"embedder": "e5", "index": "hnsw", "top_k": 10, "ef_search": 16},
                            bm25={"top_k": 200}, top_k=10, filters=STRICT)
    rule = Relax(min_hits=3, top_k=50, filters="keep")
    looser = RetrieveParams(**relaxed_settings(params, rule))
    assert (looser.top_k, looser.dense.top_k, looser.bm25.top_k) == (50, 50, 200)
    assert looser.dense.ef_search == 50 and looser.filters == STRICT and looser.relax is None
    assert changes(params, rule) == {"top_k": {"from": 10, "to": 50}}


def test_a_rule_that_changes_nothing_or_a_bad_filter_is_refused():
    with pytest.raises(ValidationError, match="relax changes nothing"):
        Relax(min_hits=2, filters="keep")
    with pytest.raises(ValidationError):
        Relax(min_hits=0)
    with pytest.raises(ValidationError):
        Relax(min_hits=2, filters={"field": "dept", "eq": {"from_recrod": "dept"}})


def test_a_looser_filter_on_a_field_no_document_has_fails_when_the_graph_is_built(view):
    from evalkit.errors import ConfigError

    params = {"bm25": {"tokenizer": "en"}, "filters": STRICT,
              "relax": {"min_hits": 2, "filters": {"field": "deparment", "eq": "hr"}}}
    with pytest.raises(ConfigError, match="deparment"):
        _run(view, params)
