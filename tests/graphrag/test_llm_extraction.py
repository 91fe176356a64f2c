"""The entity graph's ``llm`` extraction mode over real HTTP.

The real ``LLMClient`` talks to the OpenAI-compatible fault server (tests/llm/fault_server.py),
which answers with scripted replies (``text:{json}``, ``500``), so every path is
deterministic: typed directed edges with provenance, aliases, the confidence floor and
grey zone, evidence spans the passage does not contain, garbage replies and HTTP errors
(counted, the build goes on, a transient failure is not cached), the graph cache and its
key, configuration errors, query-time linking without LLM calls. One smoke test runs the
real SmolLM2 through the ``local`` backend.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalkit.index.entity_graph import GraphSpec
from evalkit.index.graph_search import LocalGraphSearch
from evalkit.index.llm_entities import PROMPT_VERSION, LLMExtractor, _confidence
from evalkit.index.resources import Resources
from evalkit.llm import ChatResponse, LLMClient, LLMSpec
from evalkit.nodes.graph_retrieve import GraphSearchParams

from .conftest import DOCUMENT_CHUNKING, make_corpus

DOCS = [
    ("d-chip", "KS-9 chip", "The KS-9 chip is made by Borealis Semiconductor Ltd. Borealis ships it from Oslo."),
    ("d-spec", "ZX-100 spec", "The ZX-100 gateway uses the KS-9 chip."),
]
CHIP = {"entities": [{"name": "KS-9 chip", "type": "component"},
                     {"name": "Borealis Semiconductor Ltd.", "type": "organization"},
                     {"name": "Oslo", "type": "location"}],
        "relations": [{"source": "KS-9 chip", "type": "made_by", "target": "Borealis Semiconductor Ltd.",
                       "evidence": "The KS-9 chip is made by Borealis Semiconductor Ltd.", "confidence": 0.95},
                      {"source": "Borealis", "type": "located in", "target": "Oslo",
                       "evidence": "borealis ships it from oslo", "confidence": 0.9}]}
SPEC = {"entities": [{"name": "ZX-100 gateway", "type": "product"}, {"name": "KS-9 chip", "type": "component"}],
        "relations": [{"source": "ZX-100 gateway", "type": "uses", "target": "KS-9 chip",
                       "evidence": "The ZX-100 gateway uses the KS-9 chip", "confidence": 0.9}]}


@pytest.fixture
def server(scripted_server):
    return scripted_server


def spec_for(srv, **kw) -> LLMSpec:
    # concurrency 1: passages are sent in order, so the scripted replies meet the right passage
    settings = {"backend": "openai", "model": "graph-test", "base_url": srv.base_url, "max_retries": 1,
                "backoff_s": 0.01, "timeout_s": 20.0, "max_tokens": 400, "seed": 3, "concurrency": 1}
    return LLMSpec(**{**settings, **kw})


def text(obj) -> str:
    return "text:" + (obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False))


def build(cache: Path, docs, llm: LLMSpec, **graph):
    spec = GraphSpec(mode="llm", llm=llm, **graph)
    return Resources(make_corpus(docs), cache_root=cache).for_variant(DOCUMENT_CHUNKING).graph_index(spec)


def test_typed_relations_are_directed_edges_with_provenance(server, tmp_path):
    server.push(text(CHIP), text(SPEC))
    g = build(tmp_path, DOCS, spec_for(server), entity_types=["component", "organization", "product"])
    made = g.graph.get_edge_data("ks9chip", "borealissemiconductor", "made_by")
    assert made["relation"] == "made_by" and made["directed"] is True
    assert made["docs"] == ["d-chip"] and made["chunks"] == {"d-chip": 1.0} and made["weight"] == 1.0
    assert made["evidence"] == {"d-chip": ["The KS-9 chip is made by Borealis Semiconductor Ltd."]}
    assert made["confidence"] == 0.95 and made["sentences"] == 1
    assert g.graph.get_edge_data("borealissemiconductor", "ks9chip") is None  # one direction only
    # "located in" -> located_in; "Borealis" and "Borealis Semiconductor Ltd." are two nodes without an alias
    assert g.graph.has_edge("borealis", "oslo", "located_in")
    uses = g.graph.get_edge_data("zx100gateway", "ks9chip", "uses")
    assert uses["docs"] == ["d-spec"] and uses["directed"] is True
    ks9 = g.graph.nodes["ks9chip"]
    assert ks9["label"] == "component" and ks9["docs"] == ["d-chip", "d-spec"] and ks9["name"] == "KS-9 chip"
    assert g.graph.nodes["oslo"]["label"] == "other"  # location is not among the configured entity types
    assert not any(rel == "co_occurs" for _, _, rel in g.graph.edges(keys=True))
    stats = g.meta["stats"]
    assert stats["llm_calls"] == 2 and stats["llm_failures"] == 0 and stats["relations_kept"] == 3
    assert stats["relations_dropped_low_confidence"] == stats["relations_dropped_unstated"] == 0
    assert stats["extraction_s"] >= 0 and "llm_tokens" in stats
    # what the server saw: one JSON-mode request per passage, the configured types in the prompt
    first = server.requests[0].body
    assert first["response_format"] == {"type": "json_object"} and first["model"] == "graph-test"
    system, user = first["messages"][0]["content"], first["messages"][1]["content"]
    assert "Entity types: component, organization, product" in system and "made_by, part_of" in system
    assert "evidence" in system and "confidence" in system and "pronouns" in system
    assert user == "Passage:\nKS-9 chip\nThe KS-9 chip is made by Borealis Semiconductor Ltd. Borealis ships it from Oslo."


def test_one_company_written_three_ways_is_one_node(server, tmp_path):
    docs = [("d-zh", "供应商档案", "岚屿微电子（合肥）有限公司为澜星科技供应主控芯片 KS-1606。"),
            ("d-zh2", "考核结果", "Lanyu Micro 的交期稳定。岚屿微电子 为 Orion Motors 供应电源。")]
    server.push(
        text({"entities": [{"name": "岚屿微电子（合肥）有限公司", "type": "organization"}],
              "relations": [{"source": "岚屿微电子（合肥）有限公司", "type": "supplies", "target": "澜星科技",
                             "evidence": "岚屿微电子（合肥）有限公司为澜星科技供应主控芯片", "confidence": 0.9}]}),
        text({"entities": [{"name": "Lanyu Micro", "type": "organization"}, {"name": "岚屿微电子", "type": "organization"},
                           {"name": "Orion Motors Inc.", "type": "organization"}],
              "relations": [{"source": "岚屿微电子", "type": "supplies", "target": "Orion Motors Inc.",
                             "evidence": "岚屿微电子 为 Orion Motors 供应电源", "confidence": 0.85}]}))
    g = build(tmp_path, docs, spec_for(server), aliases={"岚屿微电子（合肥）有限公司": ["Lanyu Micro"]})
    node = g.graph.nodes["岚屿微电子"]
    assert node["name"] == "岚屿微电子（合肥）有限公司"  # the canonical name of the alias table
    assert {"岚屿微电子（合肥）有限公司", "Lanyu Micro", "岚屿微电子"} <= set(node["surfaces"])
    assert node["docs"] == ["d-zh", "d-zh2"] and node["label"] == "organization"
    assert "lanyumicro" not in g.graph.nodes
    assert g.graph.has_edge("岚屿微电子", "澜星科技", "supplies")
    assert g.graph.has_edge("岚屿微电子", "orionmotors", "supplies")  # legal suffix stripped like fast mode


@pytest.mark.parametrize("grey_weight, expected", [(None, 0.6), (0.25, 0.25)])
def test_confidence_floor_grey_zone_and_unstated_evidence(server, tmp_path, grey_weight, expected):
    reply = {"entities": [{"name": "KS-9 chip"}, {"name": "Borealis Semiconductor"}, {"name": "Oslo"},
                          {"name": "Acme Holdings", "type": "organization"}],
             "relations": [
                 {"source": "KS-9 chip", "type": "made_by", "target": "Borealis Semiconductor",
                  "evidence": "made by Borealis Semiconductor", "confidence": 0.3},  # below the floor
                 {"source": "Borealis Semiconductor", "type": "located_in", "target": "Oslo",
                  "evidence": "Borealis ships it from Oslo", "confidence": "0.6"},  # grey zone
                 {"source": "Acme Holdings", "type": "owns", "target": "Borealis Semiconductor",
                  "evidence": "Borealis is owned by Acme Holdings", "confidence": 0.99},  # not in the passage
                 {"source": "it", "type": "located_in", "target": "Oslo", "evidence": "it from Oslo",
                  "confidence": 0.9},  # a pronoun
                 {"source": "KS-9 chip", "type": "competes_with", "target": "Oslo",
                  "evidence": "KS-9 chip", "confidence": 0.9},  # not a configured relation type
                 {"source": "KS-9 chip", "type": "made_by", "target": "Borealis Semiconductor",
                  "evidence": "The KS-9 chip is made by Borealis", "confidence": None}]}  # no confidence
    server.push(text(reply))
    g = build(tmp_path, DOCS[:1], spec_for(server), min_confidence=0.5, full_confidence=0.8, grey_weight=grey_weight)
    edges = {(u, v, k): d for u, v, k, d in g.graph.edges(keys=True, data=True)}
    assert list(edges) == [("borealissemiconductor", "oslo", "located_in")]
    assert edges[("borealissemiconductor", "oslo", "located_in")]["weight"] == pytest.approx(expected)
    assert edges[("borealissemiconductor", "oslo", "located_in")]["confidence"] == 0.6
    assert "acmeholdings" not in g.graph.nodes  # named only by an unstated relation
    assert "ks9chip" in g.graph.nodes  # the passage names it, even without a kept relation
    stats = g.meta["stats"]
    assert stats["relations_dropped_low_confidence"] == 2 and stats["relations_dropped_unstated"] == 1
    assert stats["relations_dropped_invalid"] == 1 and stats["relations_dropped_type"] == 1
    assert stats["relations_grey"] == 1 and stats["relations_kept"] == 1 and stats["entities_dropped_unstated"] == 1


def test_failed_passages_are_counted_and_the_build_goes_on(server, tmp_path):
    docs = [*DOCS, ("d-box", "Packaging", "The ZX-100 ships in a recycled cardboard box.")]
    server.push("text:Sure! The chip is made by Borealis.", "text:I cannot do JSON.",  # garbage, corrective retry
                "500", "500",                                                         # HTTP 500, one retry
                text({"answer": "a JSON object, but no extraction"}))
    g = build(tmp_path, docs, spec_for(server))
    stats = g.meta["stats"]
    assert stats["llm_failures"] == 3 and stats["llm_failures_transient"] == 1 and stats["llm_calls"] == 4
    assert g.graph.number_of_nodes() == 0 and g.graph.number_of_edges() == 0
    assert g.folder is None and g.meta["path"] is None  # a transient failure: this graph is not cached
    # the next build asks again only for the passage that failed transiently
    server.push(text(SPEC))
    again = build(tmp_path, docs, spec_for(server))
    assert len(server.requests) == 6
    assert again.meta["stats"]["llm_failures"] == 2 and again.meta["stats"]["llm_failures_transient"] == 0
    assert again.meta["stats"]["llm_cache_hits"] == 3
    assert again.graph.has_edge("zx100gateway", "ks9chip", "uses") and again.folder is not None


def test_second_build_comes_from_the_cache_and_the_key_has_the_llm(server, tmp_path, monkeypatch):
    monkeypatch.setenv("EVALKIT_TEST_GRAPH_KEY", "sk-very-secret-123")
    llm = spec_for(server, api_key_env="EVALKIT_TEST_GRAPH_KEY")
    server.push(text(CHIP), text(SPEC))
    first = build(tmp_path, DOCS, llm)
    assert len(server.requests) == 2
    assert server.requests[0].headers["Authorization"] == "Bearer sk-very-secret-123"
    again = build(tmp_path, DOCS, llm.model_copy(update={"timeout_s": 5.0, "concurrency": 2}))
    assert len(server.requests) == 2  # no LLM call: the graph folder was found
    assert again.meta == first.meta and again.folder == first.folder
    m = first.meta
    assert m["extraction"]["mode"] == "llm" and m["extraction"]["min_confidence"] == 0.5
    assert m["extraction"]["llm"] == {"identity": llm.identity(), "temperature": 0.0, "max_tokens": 400, "seed": 3}
    assert f"prompt=v{PROMPT_VERSION}" in m["tokenizer"] and "model=graph-test" in m["tokenizer"]
    on_disk = (first.folder / "meta.json").read_text(encoding="utf-8")
    assert "sk-very-secret" not in on_disk and "EVALKIT_TEST_GRAPH_KEY" not in on_disk
    # another model, or another prompt setting, is another graph
    server.push(text(CHIP), text(SPEC), text(CHIP), text(SPEC))
    other = build(tmp_path, DOCS, spec_for(server, model="graph-test-2"))
    fewer = build(tmp_path, DOCS, llm, relation_types=["made_by", "uses"])
    assert len(server.requests) == 6 and len({first.folder, other.folder, fewer.folder}) == 3
    assert not fewer.graph.has_edge("borealis", "oslo", "located_in")


def test_fast_mode_key_is_unchanged_by_llm_settings():
    fast = GraphSpec()
    assert set(fast.extraction()) == {"mode", "sentence_weight", "chunk_weight", "noun_compounds", "title_as_entity",
                                      "strip_legal_suffixes", "min_chars"}
    assert GraphSpec(min_confidence=0.7, llm={"backend": "local"}).extraction() == fast.extraction()


def test_missing_or_unusable_llm_config_is_a_clear_error():
    with pytest.raises(ValidationError, match="needs an LLM: set 'llm' in the graph spec") as err:
        GraphSpec(mode="llm")
    assert err.value.errors()[0]["loc"] == ("llm",)
    with pytest.raises(ValidationError, match="needs a model backend"):
        GraphSpec(mode="llm", llm={"backend": "extractive"})
    with pytest.raises(ValidationError, match="full_confidence"):
        GraphSpec(mode="llm", llm={"backend": "local"}, min_confidence=0.9, full_confidence=0.8)
    with pytest.raises(ValidationError, match="api_key"):
        GraphSpec(mode="llm", llm={"backend": "openai", "model": "m", "api_key": "sk-1"})  # no keys in configs


def test_missing_api_key_stops_the_build(server, tmp_path, monkeypatch):
    monkeypatch.delenv("EVALKIT_TEST_NO_SUCH_KEY", raising=False)
    with pytest.raises(Exception, match="EVALKIT_TEST_NO_SUCH_KEY"):
        build(tmp_path, DOCS, spec_for(server, api_key_env="EVALKIT_TEST_NO_SUCH_KEY"))
    assert server.requests == []


def test_query_linking_needs_no_llm_and_evidence_reads_the_relation_way(server, tmp_path):
    server.push(text(CHIP), text(SPEC))
    g = build(tmp_path, DOCS, spec_for(server))
    params = GraphSearchParams(graph=GraphSpec(mode="llm", llm=spec_for(server)), depth=1,
                               link={"embedding": False})
    found = LocalGraphSearch(g, params).search(["Where is Borealis Semiconductor?"], max_evidence=10)
    assert [x["node"] for x in found.entities] == ["borealissemiconductor"]
    # reached from Borealis, backwards along "KS-9 chip made_by Borealis": still said the way it reads
    assert found.evidence == ["KS-9 chip [made_by] Borealis Semiconductor Ltd. (d-chip)"]
    found = LocalGraphSearch(g, params).search(["Where does Borealis ship from?"], max_evidence=10)
    assert found.evidence == ["Borealis [located_in] Oslo (d-chip)"]
    assert found.passages[0][0] == "d-chip"
    assert len(server.requests) == 2  # the queries cost no LLM call


class _Stub:
    """A backend answering each passage with one relation between its first two capitalised words."""

    identity = "stub/v1"

    def chat(self, request):
        passage = request.messages[-1].content.split("\n", 1)[1]
        words = [w.strip(".") for w in passage.split() if w[:1].isupper()]
        body = {"entities": [{"name": w} for w in words],
                "relations": [{"source": words[0], "type": "related_to", "target": words[1],
                               "evidence": f"{words[0]} {words[1]}", "confidence": 0.9}]}
        return ChatResponse(json.dumps(body), tokens_in=100, tokens_out=20)


def test_concurrent_extraction_keeps_passage_order_and_counts_tokens(tmp_path):
    spec = LLMSpec(backend="openai", model="stub", concurrency=3)
    x = LLMExtractor(spec, client=LLMClient(spec, tmp_path, purpose="graph_extract", backend=_Stub()))
    texts = [f"Alpha{i} Beta{i} met." for i in range(7)]
    out = x.extract_all(texts)
    assert [(r[0].source, r[0].target) for _, r in out] == [(f"alpha{i}", f"beta{i}") for i in range(7)]
    assert x.stats["llm_calls"] == 7 and x.stats["llm_tokens"] == 7 * 120 and x.stats["llm_tokens_in"] == 700
    assert x.stats["llm_failures"] == 0 and x.mentions("Alpha3 and Beta3")  # query mentions: fast rules


def test_confidence_values():
    assert [_confidence(v) for v in (0.7, "0.7", 70, "85%", "High", "low", None, "sure", True, -1, 250)] == [
        0.7, 0.7, 0.7, 0.85, 0.9, 0.3, None, None, None, None, None]


@pytest.mark.integration
def test_smoke_with_the_real_local_smollm2(tmp_path):
    docs = [("d-chip", "KS-9 chip", "The KS-9 chip is made by Borealis Semiconductor."),
            ("d-zh", "供应商", "岚屿微电子为澜星科技供应芯片。")]
    g = build(tmp_path, docs, LLMSpec(backend="local", max_tokens=32))
    stats = g.meta["stats"]  # a code-path check: SmolLM2-135M is no extractor
    assert stats["llm_calls"] >= 2 and stats["llm_tokens"] > 0 and stats["llm_failures"] <= 2
    assert g.graph.number_of_edges() <= stats["relations_kept"] and g.folder is not None


def test_an_error_message_as_the_reply_is_a_transient_failure_and_the_graph_is_not_cached(server, tmp_path):
    """A gateway answering 200 with its busy message: the passage adds nothing this time, but the graph is
    not cached as if the model had failed for good, so the next run asks again and gets the relations."""
    server.push("text:当前分组上游负载已饱和，请稍后再试", text(SPEC))
    g = build(tmp_path, DOCS, spec_for(server))
    stats = g.meta["stats"]
    assert stats["llm_failures"] == 1 and stats["llm_failures_transient"] == 1 and g.folder is None
    server.push(text(CHIP))
    again = build(tmp_path, DOCS, spec_for(server))
    assert again.meta["stats"]["llm_failures"] == 0 and again.folder is not None
    assert again.graph.has_edge("ks9chip", "borealissemiconductor", "made_by")
