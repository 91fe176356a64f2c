"""The process's cached embedder (evalkit.models.embedders.cached_embedder): the real e5 model.

What is checked: the cache changes no number (vectors bit for bit as the model gives them, and every finding
of the learned abstention stage on a whole labelled split, with the cache on and off); a rerun in another
process (a fresh embedder on the same cache file) encodes nothing; the extractive backend, the abstention stage
and the offline judge share one embedder per cache folder; a cache folder that cannot be made is warned
about and the texts are encoded without it.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from evalkit.llm import extractive
from evalkit.models import abstention as stage
from evalkit.models.cache import EmbeddingCache
from evalkit.models.embedders import CachedEmbedder, ModelSpec, cached_embedder, shared_embedder

REPO = Path(__file__).resolve().parents[2]
E5 = ModelSpec(name="e5")
TEXTS = ["The hotel allowance is 900 per night in tier-one cities.", "出差住宿标准为一线城市每晚900元。",
         "I'm sorry, I can't look up your account. Please call the service desk.", "没有找到相关规定。"]


def test_cached_vectors_are_the_models_own_and_a_rerun_encodes_nothing(tmp_path):
    plain = shared_embedder(E5).encode_passages(TEXTS)
    first = cached_embedder(E5, tmp_path)
    assert cached_embedder(E5, tmp_path) is first  # one per (model, folder) in a process
    assert np.array_equal(first.encode_passages(TEXTS), plain)
    assert first.encoded == len(TEXTS)
    # another process: a new embedder on the same cache file reads every vector and encodes none
    again = CachedEmbedder.lazy(E5, EmbeddingCache(tmp_path.resolve() / "embeddings.sqlite"))
    assert np.array_equal(again.encode_passages(TEXTS[::-1]), plain[::-1])
    assert again.encoded == 0


def test_the_extractive_backend_the_stage_and_the_judge_share_one_embedder(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path))
    mine = cached_embedder(E5)
    assert extractive._embedder(tmp_path) is mine
    before = mine.encoded
    stage.embed(TEXTS)
    stage.embed(TEXTS)  # the second read is the cache's
    assert mine.encoded - before == len(TEXTS)


def test_the_stages_findings_are_the_same_with_the_cache_on_and_off(tmp_path, monkeypatch):
    rows = [json.loads(x) for x in (REPO / "benchmarks" / "data" / "abstention_test24.jsonl")
            .read_text(encoding="utf-8").splitlines() if x.strip()]
    replies = [r["answer"] for r in rows]

    def findings() -> list[tuple[bool, str, str]]:
        stage.probability.cache_clear()  # nothing memoised from the other run
        return [(f.abstained, f.reason, f.matched) for f in (stage.detect(a, model="e5") for a in replies)]

    monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path / "on"))
    cold = findings()
    warm = findings()  # every vector from the cache file
    monkeypatch.setattr(stage, "embed", lambda texts, embedder=stage.EMBEDDER:
                        shared_embedder(ModelSpec.of(embedder)).encode_passages(list(texts)))
    off = findings()
    assert cold == warm == off
    assert any(reason == "learned" for _, reason, _ in off)  # the stage did read some of them
    stage.probability.cache_clear()


def test_a_cache_folder_that_cannot_be_made_is_warned_about_and_skipped(tmp_path, capsys):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")  # the cache folder would be made inside a regular file (root cannot either)
    emb = cached_embedder(E5, blocked / "cache")
    assert emb.cache is None
    assert np.array_equal(emb.encode_passages(TEXTS[:2]), shared_embedder(E5).encode_passages(TEXTS[:2]))
    err = capsys.readouterr().err
    assert "cannot open the embedding cache" in err and "EVALKIT_CACHE" in err
