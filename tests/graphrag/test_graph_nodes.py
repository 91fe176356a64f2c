"""graph_local (linking, BFS depth, distance weighting, fusion) and graph_global on the tiny corpus."""
from __future__ import annotations

import pytest

from evalkit.graph import build_graph, config_from_dict, initial_state
from evalkit.index.graph_search import LocalGraphSearch
from evalkit.models.embedders import ModelSpec
from evalkit.nodes.graph_retrieve import GraphLocalParams
from evalkit.records import Hit

LANYU = {"岚屿微电子（合肥）有限公司": ["Lanyu Micro"]}
# needs d-spec (ZX-100 uses KS-9) and the bridge d-chip (KS-9 is made by Borealis)
BRIDGE_Q = "Which company makes the chip used in the ZX-100?"


def _search(view, **params) -> LocalGraphSearch:
    p = GraphLocalParams(**{"link": {"embedding": False}, **params})
    return LocalGraphSearch(view.graph_index(p.graph), p, None)


def _docs(result) -> list[str]:
    return [doc for _, doc, _ in result.passages]


def test_depth_controls_how_far_the_search_reaches(view):
    assert set(_docs(_search(view, depth=0).search([BRIDGE_Q]))) == {"d-spec", "d-box"}
    one = _docs(_search(view, depth=1).search([BRIDGE_Q]))
    assert "d-chip" in one and "d-vendor" not in one  # the bridge is one hop away (via KS-9)
    two = _docs(_search(view, depth=2).search([BRIDGE_Q]))
    assert {"d-spec", "d-chip", "d-vendor"} <= set(two) and "d-noise" not in two


def test_closer_entities_weigh_more(view):
    found = _search(view, depth=2, decay=0.5).search([BRIDGE_Q])
    assert found.reached["zx100"] == pytest.approx(1.0)
    assert found.reached["ks9"] == pytest.approx(0.5)
    assert found.reached["borealissemiconductor"] == pytest.approx(0.25)
    docs = _docs(found)
    assert set(docs[:2]) == {"d-spec", "d-box"}  # the passages holding the question's entity come first
    assert docs.index("d-chip") < docs.index("d-vendor")  # then the bridge (1 hop), then 2 hops
    flat = _search(view, depth=2, decay=1.0).search([BRIDGE_Q]).reached
    assert flat["borealissemiconductor"] == pytest.approx(1.0)


def test_relation_weights_scale_every_hop(view):
    found = _search(view, depth=2, relation_weights={"co_occurs": 0.5}).search([BRIDGE_Q])
    assert found.reached["ks9"] == pytest.approx(0.5 * 0.5)
    assert found.reached["borealissemiconductor"] == pytest.approx(0.25 * 0.25)


def test_scores_from_several_query_entities_add_up(view):
    both = _search(view, depth=1).search(["ZX-100 and Borealis Semiconductor"]).reached
    assert both["ks9"] == pytest.approx(0.5 + 0.5)  # a bridge reached from both sides


def test_hubs_are_scored_but_not_expanded_through(view):
    found = _search(view, depth=2, hub_share=0.2, hub_min_passages=1).search([BRIDGE_Q])  # ks9: 2 of 7 passages
    assert "ks9" in found.reached and "borealissemiconductor" not in found.reached


def test_exact_and_alias_links(view):
    s = _search(view, graph={"aliases": LANYU})
    links = {x["node"]: x["how"] for x in s.link(["Lanyu Micro 的主控芯片 KS-1606"])}
    assert links == {"岚屿微电子": "alias", "主控芯片": "exact", "ks1606": "exact"}


def test_embedding_link_for_a_spelling_the_graph_does_not_have(view):
    p = GraphLocalParams(link={"embedding": True, "threshold": 0.85})
    s = LocalGraphSearch(view.graph_index(p.graph), p, view.embedder(ModelSpec(name="e5")))
    links = s.link(["Who are Borealis Semiconductors?"])
    assert [(x["node"], x["how"]) for x in links] == [("borealissemiconductor", "embedding")]
    assert 0.85 <= links[0]["score"] <= 1.0


def _run(view, nodes: dict, edges: dict) -> dict:
    cfg = config_from_dict({"name": "t", "chunking": {"method": "document"}, "nodes": nodes, "edges": edges})
    outcome = build_graph(cfg, view).run(initial_state("q1", BRIDGE_Q, "en"))
    assert outcome.error is None, outcome.error
    return outcome.state


def test_graph_local_node_writes_ranking_entities_and_evidence(view):
    state = _run(view, {"g": {"type": "graph_local", "params": {"link": {"embedding": False}, "max_evidence": 3}}},
                 {"start": "g", "g": "end"})
    assert [h.doc_id for h in state["retrieved"]][2] == "d-chip"
    assert all(isinstance(h, Hit) for h in state["retrieved"])
    assert state["channel_hits"] == {"graph": state["retrieved"]}
    assert state["graph_entities"] == [{"mention": "ZX-100", "node": "zx100", "name": "ZX-100", "how": "exact",
                                        "score": 1.0}]
    assert len(state["graph_evidence"]) == 3
    assert state["graph_evidence"][0] == "ZX-100 [co_occurs] KS-9 (d-spec)"


def test_graph_local_fuses_with_the_hybrid_ranking(view):
    nodes = {"retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}}},
             "g": {"type": "graph_local", "params": {"link": {"embedding": False}, "fuse_with": "retrieved"}}}
    state = _run(view, nodes, {"start": "retrieve", "retrieve": "g", "g": "end"})
    assert set(state["channel_hits"]) == {"bm25", "graph"}
    fused = {h.doc_id for h in state["retrieved"]}
    channels = state["channel_hits"]
    assert fused == {h.doc_id for h in channels["bm25"]} | {h.doc_id for h in channels["graph"]}
    assert "d-chip" in fused


def test_fuse_with_a_field_nobody_wrote_fails_at_load_with_the_fix():
    from evalkit.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        config_from_dict({"name": "t", "nodes": {"g": {"type": "graph_local", "params": {
            "link": {"embedding": False}, "fuse_with": "retrieved"}}}, "edges": {"start": "g", "g": "end"}})
    assert err.value.where == "nodes.g"
    assert "reads state field 'retrieved'" in str(err.value) and "path start -> g" in str(err.value)
    assert "no node in this graph writes it" in str(err.value)


def test_graph_global_matches_communities_and_ranks_their_passages(view):
    params = {"communities": {"algorithm": "louvain", "min_size": 2}, "top_communities": 2}
    state = _run(view, {"g": {"type": "graph_global", "params": params}}, {"start": "g", "g": "end"})
    assert 1 <= len(state["graph_communities"]) <= 2
    c = state["graph_communities"][0]
    assert set(c) == {"id", "score", "size", "top_entities", "summary"} and c["size"] >= 2
    scores = [h.score for h in state["retrieved"]]
    assert state["retrieved"] and scores == sorted(scores, reverse=True)
    again = _run(view, {"g": {"type": "graph_global", "params": params}}, {"start": "g", "g": "end"})
    assert again["retrieved"] == state["retrieved"] and again["graph_communities"] == state["graph_communities"]
