"""The entity graph index: nodes, edges, provenance, aliases, statistics, cache, communities."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import networkx as nx
import pytest
from pydantic import ValidationError

import evalkit.index.entity_graph as eg
from evalkit.index.communities import CommunitySpec, detect_communities
from evalkit.index.entity_graph import GraphSpec
from evalkit.index.resources import Resources

from .conftest import DOCUMENT_CHUNKING, make_corpus

LANYU = {"岚屿微电子（合肥）有限公司": ["Lanyu Micro"]}


def test_graph_is_a_multidigraph_with_provenance_on_nodes_and_edges(view):
    g = view.graph_index(GraphSpec())
    assert isinstance(g.graph, nx.MultiDiGraph)
    ks9 = g.graph.nodes["ks9"]
    assert ks9["name"] == "KS-9" and ks9["docs"] == ["d-chip", "d-spec"]
    assert ks9["chunks"] == {"d-chip": 2, "d-spec": 1}  # title + text of d-chip both mention it
    edge = g.graph.get_edge_data("borealissemiconductor", "ks9", "co_occurs")
    assert edge["docs"] == ["d-chip"] and edge["chunks"] == {"d-chip": edge["weight"]}
    assert edge["relation"] == "co_occurs" and edge["directed"] is False
    for u, v, data in g.graph.edges(data=True):
        assert u < v and data["docs"] and data["chunks"]  # co_occurs stored once, smaller id first
    assert g.passage_doc["d-spec"] == "d-spec"


def test_sentence_cooccurrence_weighs_more_than_chunk_cooccurrence(view):
    g = view.graph_index(GraphSpec(sentence_weight=1.0, chunk_weight=0.2))
    same_sentence = g.graph.get_edge_data("ks9", "zx100", "co_occurs")["weight"]
    chunk_only = g.graph.get_edge_data("岚屿微电子", "王蕾", "co_occurs")["weight"]  # d-zh, different sentences
    assert same_sentence >= 1.0
    assert chunk_only == pytest.approx(0.2)
    oslo = g.graph.get_edge_data("borealissemiconductor", "oslo", "co_occurs")["weight"]
    assert oslo == pytest.approx(1.0)


def test_three_spellings_of_one_company_are_one_node(view):
    # 岚屿微电子（合肥）有限公司 (legal name), 岚屿微电子 (short), Lanyu Micro (English alias)
    g = view.graph_index(GraphSpec(aliases=LANYU))
    node = g.graph.nodes["岚屿微电子"]
    assert node["name"] == "岚屿微电子（合肥）有限公司"  # the canonical name from the alias table
    assert {"岚屿微电子（合肥）有限公司", "岚屿微电子", "Lanyu Micro"} <= set(node["surfaces"])
    assert node["docs"] == ["d-zh", "d-zh2"]
    assert "lanyumicro" not in g.graph.nodes


def test_meta_has_cache_key_parts_and_quality_statistics(view):
    g = view.graph_index(GraphSpec(aliases=LANYU))
    m = g.meta
    assert m["index_type"] == "entity_graph" and m["n"] == 7
    assert m["chunking"] == DOCUMENT_CHUNKING and m["corpus_sha256"]
    assert m["extraction"]["mode"] == "fast" and "aliases" not in m["extraction"]
    assert len(m["aliases_sha256"]) == 64 and m["tokenizer"].startswith("fast/v")
    stats = m["stats"]
    for key in ("nodes", "edges", "isolated_share", "mean_degree", "largest_component_share", "extraction_s",
                "llm_calls", "llm_tokens"):
        assert key in stats
    assert stats["nodes"] == g.graph.number_of_nodes() and stats["edges"] == g.graph.number_of_edges()
    assert stats["llm_calls"] == 0 and stats["llm_tokens"] == 0
    assert 0 < stats["largest_component_share"] <= 1 and 0 <= stats["isolated_share"] < 1
    assert m in view.used  # noted like dense/bm25, so the runner records it


def test_cache_is_reused_and_keyed_by_aliases_and_params(corpus, tmp_path, monkeypatch):
    first = Resources(corpus, cache_root=tmp_path).for_variant(DOCUMENT_CHUNKING).graph_index(GraphSpec(aliases=LANYU))

    def boom(*a, **k):
        raise AssertionError("rebuilt although cached")

    monkeypatch.setattr(eg, "build_entity_graph", boom)
    again = Resources(corpus, cache_root=tmp_path).for_variant(DOCUMENT_CHUNKING).graph_index(GraphSpec(aliases=LANYU))
    assert again.meta == first.meta and again.meta["path"] == first.meta["path"]
    assert nx.utils.graphs_equal(again.graph, first.graph)
    for other in (GraphSpec(), GraphSpec(aliases=LANYU, chunk_weight=0.1)):
        with pytest.raises(AssertionError, match="rebuilt"):
            Resources(corpus, cache_root=tmp_path).for_variant(DOCUMENT_CHUNKING).graph_index(other)


def test_build_is_deterministic(tmp_path):
    a = Resources(make_corpus(), cache_root=tmp_path / "a").for_variant(DOCUMENT_CHUNKING).graph_index(GraphSpec())
    b = Resources(make_corpus(), cache_root=tmp_path / "b").for_variant(DOCUMENT_CHUNKING).graph_index(GraphSpec())
    assert list(a.graph.nodes(data=True)) == list(b.graph.nodes(data=True))
    assert list(a.graph.edges(keys=True, data=True)) == list(b.graph.edges(keys=True, data=True))


def test_parent_child_chunking_builds_over_parents(corpus, tmp_path):
    chunking = {"method": "parent_child", "parent_size": 60, "child_size": 30, "child_overlap": 5,
                "prepend_title": True}
    g = Resources(corpus, cache_root=tmp_path).for_variant(chunking).graph_index(GraphSpec())
    pids = {p for _, d in g.graph.nodes(data=True) for p in d["chunks"]}
    assert pids and all("#p" in p and "." not in p.split("#p")[1] for p in pids)


def test_title_as_entity_links_the_title_to_every_entity(view):
    g = view.graph_index(GraphSpec(title_as_entity=True))
    vendor = g.graph.nodes["vendorprofile"]
    assert vendor["label"] == "title" and vendor["docs"] == ["d-vendor"]
    assert g.graph.get_edge_data("oslo", "vendorprofile", "co_occurs")["weight"] >= 1.0


def test_spec_refuses_llm_mode_without_llm_unknown_modes_and_bad_aliases():
    with pytest.raises(ValidationError, match="'llm' needs an LLM"):
        GraphSpec(mode="llm")
    with pytest.raises(ValidationError, match="did you mean 'fast'"):
        GraphSpec(mode="fsat")
    with pytest.raises(ValidationError, match="listed under both"):
        GraphSpec(aliases={"A Corp": ["X1"], "B Corp": ["x-1"]})
    with pytest.raises(ValidationError):
        GraphSpec(chunk_weight=-1)


def test_communities_are_seeded_deterministic_and_cached(view, tmp_path):
    g = view.graph_index(GraphSpec(aliases=LANYU))
    spec = CommunitySpec(algorithm="louvain", min_size=1)
    first = detect_communities(g, spec, seed=7)
    cached = json.loads(Path(first.meta["path"]).read_text(encoding="utf-8"))
    assert cached["meta"]["algorithm"] == "louvain" and cached["meta"]["seed"] == 7
    g.folder = None  # no cache: compute again from scratch
    second = detect_communities(g, spec, seed=7)
    def partition(cs):
        return sorted(sorted(c.centrality) for c in cs.items)
    assert partition(first) == partition(second)
    members = {n for c in first.items for n in c.centrality}
    assert members == set(g.graph.nodes)
    for c in first.items:
        assert max(c.passages.values()) == pytest.approx(1.0)
        assert c.summary.split("\n")[0].startswith(g.name(c.top_entities[0]))


def test_explicit_leiden_without_the_package_says_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "leidenalg", None)  # not installed (tests/graphrag/test_leiden.py: the rest)
    with pytest.raises(ValidationError, match=r"evalkit-ragraph\[leiden\].*use algorithm: louvain"):
        CommunitySpec(algorithm="leiden")
