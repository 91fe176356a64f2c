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
