"""Metadata filters, tenants and tenant_leak_rate end to end on a tiny multi-tenant corpus.

Two tenants (acme, globex) each have their own travel and leave policy with different
numbers; one document is shared (no tenant). The same questions are asked by both
tenants. An unfiltered retrieval returns the other tenant's policy (a leak); the isolation
filter does not, and work sharing across variants and tenants changes no record.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import BagOfWords

from evalkit.evalsets import freeze, load_eval_set
from evalkit.graph import config_from_dict
from evalkit.models.embedders import EMBEDDERS
from evalkit.nodes.filters import DocumentFilter, FilterError
from evalkit.records import Document
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import read_results

EMBEDDERS.setdefault("tenancy-bow", lambda spec: BagOfWords("tenancy-bow/v1"))

DOCS = [  # id, title, text, metadata
    ("acme-travel", "Travel policy", "Hotel cap per night in tier-1 cities is 750 yuan. Tier-2 cities: 500 yuan.",
     {"tenant": "acme", "dept": "finance", "updated": "2026-01-01"}),
    ("globex-travel", "Travel policy", "Hotel cap per night in tier-1 cities is 900 yuan. Tier-2 cities: 600 yuan.",
     {"tenant": "globex", "dept": "finance", "updated": "2025-07-01"}),
    ("acme-leave", "Parental leave", "Employees get 10 days of parental leave after a child is born.",
     {"tenant": "acme", "dept": "hr", "updated": "2025-03-01"}),
    ("globex-leave", "Parental leave", "Employees get 15 days of parental leave after a child is born.",
     {"tenant": "globex", "dept": "hr", "updated": "2026-02-01"}),
    ("shared-holidays", "Public holidays", "The office is closed on public holidays; parental leave days do not "
     "include them.", {"dept": "hr", "updated": "2025-12-01"}),
    ("acme-vpn", "VPN", "Connect to the VPN before opening the hotel booking portal.",
     {"tenant": "acme", "dept": "it", "updated": "2025-05-01"}),
]
Q = [  # id, question, gold, tenant, attributes
    ("a1", "hotel cap per night in tier-1 cities", ["acme-travel"], "acme", {"dept": "finance"}),
    ("g1", "hotel cap per night in tier-1 cities", ["globex-travel"], "globex", {"dept": "finance"}),
    ("a2", "how many days of parental leave", ["acme-leave"], "acme", {"dept": "hr"}),
    ("g2", "how many days of parental leave", ["globex-leave"], "globex", {"dept": "hr"}),
    ("a3", "VPN before the hotel booking portal", ["acme-vpn"], "acme", {"dept": "it"}),
    ("n1", "public holidays and parental leave", ["shared-holidays"], None, {"dept": "hr"}),
]
ISOLATION = {"any": [{"field": "tenant", "eq": {"from_record": "tenant"}}, {"field": "tenant", "exists": False}]}


def _retrieve(filters=None, dense=False, top_k=10, fusion_k=60):
    params = {"bm25": {"tokenizer": "en", "top_k": top_k}, "top_k": top_k, "fusion": {"k": fusion_k}}
    if dense:
        params["dense"] = {"embedder": "tenancy-bow", "top_k": top_k}
    if filters is not None:
        params["filters"] = filters
    return params


def _variant(name, **kw):
    return config_from_dict({"name": name, "chunking": {"method": "document"},
                             "nodes": {"retrieve": {"type": "retrieve", "params": _retrieve(**kw)}},
                             "edges": {"start": "retrieve", "retrieve": "end"}})


@pytest.fixture
def evalset(tmp_path: Path) -> Path:
    (tmp_path / "corpora").mkdir()
    corpus = tmp_path / "corpora" / "tenants.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x, "metadata": m}) + "\n"
                              for i, t, x, m in DOCS), encoding="utf-8")
    path = tmp_path / "tenants.jsonl"
    lines = []
    for i, q, gold, tenant, attrs in Q:
        rec = {"id": i, "question": q, "relevant_doc_ids": gold, "type": "single", "lang": "en", "attributes": attrs}
        if tenant:
            rec["tenant"] = tenant
        lines.append(json.dumps(rec) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    freeze(path, corpus=str(corpus))
    return path


def _run(evalset, tmp_path, configs, share=True, out="run.json"):
    es = load_eval_set(evalset)
    opts = RunOptions(output=tmp_path / out, mlflow=False, progress=False, share_work=share,
                      cache_root=tmp_path / "cache")
    summary = run_eval(es, configs, opts, echo=lambda s: None)
    folder = (tmp_path / out).with_suffix("")
    return summary, {name: read_results(folder / name / "per_query.jsonl") for name in summary.variants}


def _hand_leaks(results):
    """tenant_leak_rate recomputed from per_query records and the corpus, as its docstring defines it."""
    owner = {i: m.get("tenant") for i, _, _, m in DOCS}
    queries = {i: t for i, _, _, t, _ in Q}
    leaking = [r.query_id for r in results if queries[r.query_id] is not None and any(
        owner[d["doc_id"]] not in (None, queries[r.query_id]) for d in r.reranked)]
    with_tenant = [r for r in results if queries[r.query_id] is not None]
    return len(leaking) / len(with_tenant), sorted(leaking)


def test_unfiltered_retrieval_leaks_and_the_isolation_filter_does_not(evalset, tmp_path):
    summary, per = _run(evalset, tmp_path, [_variant("open", dense=True), _variant("isolated", dense=True,
                                                                                       filters=ISOLATION)])
    open_, iso = summary.variants["open"].metrics, summary.variants["isolated"].metrics
    rate, leaking = _hand_leaks(per["open"])
    assert rate == 1.0 and leaking == ["a1", "a2", "a3", "g1", "g2"]  # every tenant query sees the other tenant
    assert open_["tenant_leak_rate"] == pytest.approx(rate) and open_["n_tenant_queries"] == 5
    assert iso["tenant_leak_rate"] == 0.0 == _hand_leaks(per["isolated"])[0]
    by_id = {r.query_id: r for r in per["open"]}
    assert "globex-travel" in by_id["a1"].tenant_leaks and by_id["a1"].metrics["tenant_leak"] == 1.0
    assert by_id["n1"].tenant is None and "tenant_leak" not in by_id["n1"].metrics  # no tenant: not counted
    iso_by_id = {r.query_id: r for r in per["isolated"]}
    assert {d["doc_id"] for d in iso_by_id["g2"].reranked} == {"globex-leave", "globex-travel", "shared-holidays"}
    # a record without a tenant sees only shared documents (fail closed)
    assert [d["doc_id"] for d in iso_by_id["n1"].reranked] == ["shared-holidays"]
    # isolation costs no recall here: each tenant's own document is still found, and ranks first
    assert iso["hit@5"] == 1.0 and all(r.reranked[0]["doc_id"] == r.gold_doc_ids[0] for r in per["isolated"])


def test_sharing_on_and_off_give_identical_records_across_tenants(evalset, tmp_path):
    """a1 and g1 ask the same question: the shared search must be keyed by the resolved filter."""
    configs = [_variant("open", dense=True), _variant("isolated", dense=True, filters=ISOLATION),
               _variant("isolated_k3", dense=True, filters=ISOLATION, top_k=3),
               _variant("isolated_rrf20", dense=True, filters=ISOLATION, fusion_k=20),  # shares the searches
               _variant("dept", filters={"field": "dept", "eq": {"from_record": "dept"}})]
    on_summary, on = _run(evalset, tmp_path, configs, share=True, out="on.json")
    _, off = _run(evalset, tmp_path, configs, share=False, out="off.json")
    assert on_summary.sharing["part_hits"] > 0  # something really was shared
    for name in on:
        for a, b in zip(on[name], off[name]):
            assert (a.query_id, a.retrieved, a.reranked, a.metrics, a.tenant_leaks) == \
                   (b.query_id, b.retrieved, b.reranked, b.metrics, b.tenant_leaks), (name, a.query_id)
    a1, g1 = (next(r for r in on["isolated"] if r.query_id == q) for q in ("a1", "g1"))
    assert a1.reranked[0]["doc_id"] == "acme-travel" and g1.reranked[0]["doc_id"] == "globex-travel"


def test_top_k_is_filled_with_matching_passages(evalset, tmp_path):
    """A post-filter of the unfiltered top 2 would keep fewer: the filter works inside the search."""
    dept_hr = {"field": "dept", "eq": "hr"}
    _, per = _run(evalset, tmp_path, [_variant("top2", dense=True, top_k=2),
                                      _variant("hr_top2", dense=True, top_k=2, filters=dept_hr)])
    a3_open = next(r for r in per["top2"] if r.query_id == "a3")
    a3_hr = next(r for r in per["hr_top2"] if r.query_id == "a3")
    owner_dept = {i: m["dept"] for i, _, _, m in DOCS}
    assert sum(owner_dept[d["doc_id"]] == "hr" for d in a3_open.retrieved) < 2  # post-filtering would starve
    assert len(a3_hr.retrieved) == 2 and all(owner_dept[d["doc_id"]] == "hr" for d in a3_hr.retrieved)


def test_a_filter_on_a_missing_record_attribute_fails_that_query_loudly(evalset, tmp_path):
    summary, per = _run(evalset, tmp_path, [_variant("grade", filters={"field": "dept",
                                                                        "eq": {"from_record": "grade"}})])
    assert summary.variants["grade"].n_failed == len(Q)
    assert "from_record 'grade' is neither a field of this eval record nor one of its attributes (dept)" in \
        per["grade"][0].error["message"]


def test_time_range_and_version_filters_with_constants():
    docs = [Document(id=i, title=t, text=x, metadata=m) for i, t, x, m in DOCS]
    recent = DocumentFilter([{"field": "updated", "ge": "2025-12-01"}, {"field": "updated", "lt": "2026-02-01"}],
                            docs)
    assert recent.allowed({}) == {"acme-travel", "shared-holidays"}
    as_of = DocumentFilter({"field": "updated", "le": {"from_record": "as_of"}}, docs)
    assert as_of.allowed({"as_of": "2025-04-01"}) == {"acme-leave"}
    assert as_of.allowed({"as_of": None}) == frozenset()  # an unknown date allows nothing (null compares false)
    not_it = DocumentFilter({"not": {"field": "dept", "in": ["it", "finance"]}}, docs)
    assert not_it.allowed({}) == {"acme-leave", "globex-leave", "shared-holidays"}
    by_id = DocumentFilter({"field": "doc_id", "in": ["acme-vpn"]}, docs)
    assert by_id.allowed({}) == {"acme-vpn"}


def test_bad_filters_are_refused_before_any_query():
    docs = [Document(id=i, title=t, text=x, metadata=m) for i, t, x, m in DOCS]
    with pytest.raises(FilterError, match="no corpus document has the field 'dpet'; did you mean 'dept'"):
        DocumentFilter({"field": "dpet", "eq": "hr"}, docs)
    untenanted = [Document(id=d.id, title=d.title, text=d.text, metadata={}) for d in docs]
    assert DocumentFilter(ISOLATION, untenanted).allowed({"tenant": "acme"}) == {d.id for d in docs}  # all shared
    with pytest.raises(FilterError, match="'updated' of document 'acme-travel' is '2026-01-01'"):
        DocumentFilter({"field": "updated", "gt": 2025}, docs)  # a number against date strings
    from evalkit.errors import ConfigError

    with pytest.raises(ConfigError, match=r"nodes.retrieve.params.filters.any\[0\].eq: unexpected mapping"):
        config_from_dict({"name": "x", "nodes": {"retrieve": {"type": "retrieve", "params": {
            "bm25": {}, "filters": {"any": [{"field": "tenant", "eq": {"from_recrod": "tenant"}}]}}}},
            "edges": {"start": "retrieve", "retrieve": "end"}})


def test_a_filter_field_no_document_has_names_the_config_file_line_and_field(evalset, tmp_path):
    """Before: "node 'retrieve': filters: no corpus document has the field 'deparment'" named
    neither the config file nor its line. A Chinese metadata value, as users' corpora have."""
    from evalkit.errors import ConfigError
    from evalkit.graph.config import load_graph_config

    path = tmp_path / "typo.yaml"
    path.write_text("name: typo\nchunking: {method: document}\nnodes:\n  retrieve:\n    type: retrieve\n"
                    "    params:\n      bm25: {tokenizer: en}\n      filters: {field: deparment, eq: 财务部}\n"
                    "edges: {start: retrieve, retrieve: end}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        _run(evalset, tmp_path, [load_graph_config(path)])
    assert str(info.value).startswith(f"{path}:8: nodes.retrieve.params.filters: no corpus document has the field "
                                      "'deparment'; did you mean 'dept'?"), str(info.value)
    assert info.value.line == 8 and info.value.where == "nodes.retrieve.params.filters"


def test_the_filter_inputs_are_part_of_what_the_node_reads():
    from evalkit.nodes.retrieve import Retrieve, RetrieveParams

    plain = Retrieve.contract(RetrieveParams(bm25={}))
    iso = Retrieve.contract(RetrieveParams(bm25={}, filters=ISOLATION))
    dept = Retrieve.contract(RetrieveParams(bm25={}, filters={"field": "dept", "eq": {"from_record": "dept"}}))
    assert plain.reads == {"queries", "question"}
    assert iso.reads == {"queries", "question", "tenant"} and dept.reads == {"queries", "question", "attributes"}
    (part, deps), = Retrieve.shared_parts(RetrieveParams(bm25={}, filters=ISOLATION))
    assert part["filters"] == ISOLATION and "tenant" in deps


VPN_DOCS = [("acme-vpn", "VPN", "The VPN client LanLink must be updated to version 4.2. Contact the IT desk.",
             {"tenant": "acme"}),
            ("globex-vpn", "VPN", "LanLink VPN 客户端须升级到 4.1 版本。LanLink works with the Orvex token.",
             {"tenant": "globex"}),
            ("shared-it", "IT desk", "The IT desk is open from 9:00 to 18:00.", {})]
VPN_OWNER = {i: m.get("tenant") for i, _, _, m in VPN_DOCS}
VPN_TENANT = {"a": "acme", "g": "globex"}


def _vpn_evalset(tmp_path: Path) -> Path:
    """Two tenants asking the same question; the graph links their documents through 'LanLink'."""
    (tmp_path / "corpora").mkdir()
    corpus = tmp_path / "corpora" / "vpn.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x, "metadata": m}, ensure_ascii=False) + "\n"
                              for i, t, x, m in VPN_DOCS), encoding="utf-8")
    path = tmp_path / "vpn.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": q, "question": "Which LanLink version is required?", "relevant_doc_ids": [f"{t}-vpn"],
         "type": "single", "lang": "en", "tenant": t} for q, t in VPN_TENANT.items()]), encoding="utf-8")
    freeze(path, corpus=str(corpus))
    return path


def _own_only(r) -> bool:
    return all(VPN_OWNER[h["doc_id"]] in (None, VPN_TENANT[r.query_id]) for h in r.reranked)


def test_graph_retrieval_after_an_isolated_retrieve_does_not_bring_another_tenants_documents(tmp_path):
    """Before: a tenant-filtered ``retrieve`` followed by ``graph_local`` (fuse_with) put the other
    tenant's VPN notice back in the ranking and its graph triple in the generator's evidence (and so in
    the answer). ``filters:`` on the graph node keeps both to the tenant's own and shared documents,
    with work sharing on and off alike."""
    path = _vpn_evalset(tmp_path)

    def variant(name, graph_filter):
        graph = {"graph": {"mode": "fast"}, "depth": 1, "link": {"embedding": False}, "top_k": 10,
                 "max_evidence": 10, "fuse_with": "retrieved", **({"filters": ISOLATION} if graph_filter else {})}
        return config_from_dict({"name": name, "chunking": {"method": "document"}, "nodes": {
            "retrieve": {"type": "retrieve", "params": _retrieve(filters=ISOLATION)},
            "graph": {"type": "graph_local", "params": graph}},
            "edges": {"start": "retrieve", "retrieve": "graph", "graph": "end"}})

    records = {}
    for share in (True, False):
        summary, per = _run(path, tmp_path, [variant("graph_open", False), variant("graph_isolated", True)],
                            share=share, out=f"vpn_{share}.json")
        for r in per["graph_isolated"]:
            assert _own_only(r), r.reranked
            graph_step = next(t for t in r.trace if t["node"] == "graph")
            cited = [line.rsplit("(", 1)[1].rstrip(")") for line in graph_step["wrote"]["graph_evidence"]]
            assert cited and all(VPN_OWNER[d] in (None, VPN_TENANT[r.query_id]) for d in cited), graph_step
        assert summary.variants["graph_open"].metrics["tenant_leak_rate"] == 1.0  # the unfiltered graph leaks
        assert summary.variants["graph_isolated"].metrics["tenant_leak_rate"] == 0.0
        records[share] = [(r.query_id, r.reranked) for r in per["graph_isolated"]]
    assert records[True] == records[False]


def test_the_agent_scheduler_applies_filters_to_every_tool(tmp_path):
    """Before: ``agent_scheduler`` took no ``filters``, so a scheduler variant could not be isolated: its
    BM25 and graph tools returned the other tenant's VPN notice. With ``filters`` neither does, and the
    filtered BM25 tool ranks exactly as a filtered ``retrieve`` node (sharing on and off)."""
    path = _vpn_evalset(tmp_path)

    def scheduler(name, filters):
        params = {"dense": None, "bm25": {"tokenizer": "en", "top_k": 10},
                  "graph": {"graph": {"mode": "fast"}, "depth": 1, "link": {"embedding": False}, "top_k": 10},
                  "rules": [{"label": "entity_relation", "patterns": ["LanLink"]}], "top_k": 10, "dedupe": None,
                  "weights": {"entity_relation": {"graph": 1.0, "bm25": 1.0}, "open_semantic": {"bm25": 1.0}},
                  **({"filters": filters} if filters else {})}
        return config_from_dict({"name": name, "chunking": {"method": "document"},
                                 "nodes": {"scheduler": {"type": "agent_scheduler", "params": params}},
                                 "edges": {"start": "scheduler", "scheduler": "end"}})

    records = {}
    for share in (True, False):
        summary, per = _run(path, tmp_path, [scheduler("sched_open", None), scheduler("sched_isolated", ISOLATION),
                                             _variant("retrieve_isolated", filters=ISOLATION)],
                            share=share, out=f"sched_{share}.json")
        assert summary.variants["sched_open"].metrics["tenant_leak_rate"] == 1.0
        assert summary.variants["sched_isolated"].metrics["tenant_leak_rate"] == 0.0
        retrieve_ranking = {r.query_id: r.reranked for r in per["retrieve_isolated"]}
        for r in per["sched_isolated"]:
            assert _own_only(r), r.reranked
            tools = next(t for t in r.trace if t["node"] == "scheduler")["wrote"]["tool_hits"]
            docs = {tool: [h[1] for h in hits] for tool, hits in tools.items()}  # traced as [passage, doc, score]
            assert set(docs) == {"bm25", "graph"} and docs["graph"], docs
            for tool, ids in docs.items():
                assert all(VPN_OWNER[d] in (None, VPN_TENANT[r.query_id]) for d in ids), (tool, ids)
            assert docs["bm25"] == [h["doc_id"] for h in retrieve_ranking[r.query_id]]
        records[share] = [(r.query_id, r.reranked) for r in per["sched_isolated"]]
    assert records[True] == records[False]
