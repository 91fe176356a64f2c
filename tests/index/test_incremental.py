"""Incremental indexes: a 1% corpus change redoes only the changed passages, with a full build's exact numbers.

Corpus A (300 generated documents) is indexed; corpus A' deletes one document, edits one
and adds one. A' is then indexed in A's cache (an update) and in an empty cache (a cold
full build); every query's BM25, dense (flat and HNSW) and hybrid ranking and score must
be equal, and every index file byte-identical.
"""
from __future__ import annotations

import hashlib
import json
import random

import numpy as np
import pytest
from fakes import BagOfWords

from evalkit.cachestore import check_entry
from evalkit.graph import build_graph, config_from_dict, initial_state
from evalkit.index.bm25 import build_or_load_bm25
from evalkit.index.corpus import Corpus
from evalkit.index.incremental import (
    family_of,
    match_passages,
    merge_tokens,
    text_digests,
)
from evalkit.index.resources import Resources
from evalkit.models.embedders import EMBEDDERS
from evalkit.records import Document
from evalkit.text.tokenize import Tokenizer


class CountingBow(BagOfWords):
    """BagOfWords that counts the passages it encodes (one count for the whole test process)."""

    passages = 0

    def encode_passages(self, texts):
        CountingBow.passages += len(texts)
        return self._encode(texts)


EMBEDDERS.setdefault("inc-bow", lambda spec: CountingBow("inc-bow/v1"))
CHUNKING = {"method": "document", "prepend_title": True}
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qui", "dor"]


def _words(rng: random.Random, n: int) -> str:
    return " ".join("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3))) for _ in range(n))


def generated_docs(n: int = 300, seed: int = 7) -> list[Document]:
    rng = random.Random(seed)
    return [Document(id=f"d{i:03d}", title=_words(rng, 2), text=_words(rng, rng.randint(5, 40))) for i in range(n)]


def changed(docs: list[Document]) -> list[Document]:
    """1% of 300: document d010 deleted, d020 edited, d-new added (at the end)."""
    out = [d for d in docs if d.id != "d010"]
    out = [Document(id=d.id, title=d.title, text=d.text + " zequi lodor") if d.id == "d020" else d for d in out]
    return out + [Document(id="d-new", title="kalo", text="mine rusa tiv zequi kalo kalo dorpa")]


def corpus(docs: list[Document]) -> Corpus:
    digest = hashlib.sha256(json.dumps([[d.id, d.title, d.text] for d in docs]).encode()).hexdigest()
    return Corpus(path="<generated>", documents=docs, sha256=digest)


CHANNELS = {
    "bm25": {"bm25": {"tokenizer": "en", "top_k": 20}},
    "dense": {"dense": {"embedder": "inc-bow", "top_k": 20}},
    "hnsw": {"dense": {"embedder": "inc-bow", "top_k": 20, "index": "hnsw", "hnsw_m": 8, "ef_construction": 40,
                       "ef_search": 40}},
    "hybrid": {"bm25": {"tokenizer": "en", "top_k": 20}, "dense": {"embedder": "inc-bow", "top_k": 20},
               "fusion": {"method": "rrf", "k": 60}},
}
QUERIES = ["kalo mine", "zequi lodor", "rusa tiv dorpa", "quika sa", "voze nepa ti", "ka lo mi ne ru"]


def rankings(cache, docs: list[Document]) -> dict[str, list[list[tuple[str, float]]]]:
    """Every channel's (passage id, score) list for every query, over ``docs`` indexed in ``cache``."""
    view = Resources(corpus(docs), cache_root=cache).for_variant(CHUNKING)
    out = {}
    for name, params in CHANNELS.items():
        cfg = config_from_dict({"name": name, "chunking": CHUNKING,
                                "nodes": {"r": {"type": "retrieve", "params": {**params, "top_k": 20}}},
                                "edges": {"start": "r", "r": "end"}})
        graph = build_graph(cfg, view)
        out[name] = [[(h.id, h.score) for h in graph.run(initial_state(f"q{i}", q, "en")).state["retrieved"]]
                     for i, q in enumerate(QUERIES)]
    return out


def entries(cache) -> dict[str, dict[str, str]]:
    """``{entry folder name: {file: xxh3}}`` of every index entry in ``cache``."""
    return {m.parent.name: {f: r["xxh3"] for f, r in json.loads(m.read_text())["files"].items()}
            for m in (cache / "indexes").glob("*/meta.json")}


def test_update_equals_cold_full_build_and_redoes_only_the_change(tmp_path):
    docs = generated_docs()
    warm, cold = tmp_path / "warm", tmp_path / "cold"
    before_a = rankings(warm, docs)
    assert any(before_a["bm25"]) and any(before_a["dense"])  # the queries do find passages
    encoded_a = CountingBow.passages
    updated = rankings(warm, changed(docs))
    encoded_update = CountingBow.passages - encoded_a
    full = rankings(cold, changed(docs))
    assert updated == full  # every channel, query, passage id and score
    assert updated != before_a  # the change shows in the rankings
    assert encoded_update == 2  # the edited and the added document; 298 vectors came from the cache
    # every file of every A' entry is byte-identical to the cold build's
    new = entries(cold)
    assert {k: v for k, v in entries(warm).items() if k in new} == new
    tok = [json.loads(m.read_text()) for m in (warm / "indexes").glob("bm25tok-*/meta.json")]
    reuse = sorted((m["incremental"]["reused"], m["incremental"]["computed"]) for m in tok)
    assert reuse == [(0, 300), (298, 2)]  # A from nothing; A' tokenised 2 of its 300 passages
    dense = [json.loads(m.read_text()) for m in (warm / "indexes").glob("dense-*/meta.json")]
    assert sorted(m["passages_encoded"] for m in dense) == [0, 0, 2, 300]  # flat and hnsw, for A then A'


def first_use_tokens(texts, tokenize):
    """The from-nothing tokenisation (evalkit's pre-incremental code), as the reference."""
    ids: dict[str, int] = {}
    flat, offsets = [], [0]
    for text in texts:
        flat.extend(ids.setdefault(t, len(ids)) for t in tokenize(text))
        offsets.append(len(flat))
    return list(ids), flat, offsets


@pytest.mark.parametrize("seed", range(6))
def test_merged_tokens_equal_a_from_nothing_tokenisation(seed):
    """Random edit scripts (delete, edit, insert, reorder, duplicate texts): merged tokens == tokenising all."""
    rng = random.Random(seed)
    old = [_words(rng, rng.randint(0, 12)) for _ in range(60)]
    new = list(old)
    for _ in range(rng.randint(1, 20)):
        op, i = rng.choice(["del", "edit", "add", "swap"]), rng.randrange(len(new))
        if op == "del":
            new.pop(i)
        elif op == "edit":
            new[i] = _words(rng, rng.randint(0, 8)) + " brandnew"
        elif op == "add":
            new.insert(i, rng.choice(old) if rng.random() < .3 else _words(rng, 6))
        else:
            j = rng.randrange(len(new))
            new[i], new[j] = new[j], new[i]
    split = str.split
    base, _ = merge_tokens(old, split)
    merged, computed = merge_tokens(new, split, base, match_passages(text_digests(new), text_digests(old)))
    vocab, flat, offsets = first_use_tokens(new, split)
    assert merged.vocab == vocab and merged.token_ids.tolist() == flat and merged.offsets.tolist() == offsets
    assert computed == sum(t not in set(old) for t in new)


TEXTS = ["apple banana apple", "banana cherry", "cherry date elderberry fig", "grape"]
IDS = ["d1", "d2", "d3", "d4"]
KEY = {"corpus_sha256": "A", "chunking": {"method": "document"}}
NEW_TEXTS = TEXTS[:3] + ["grape kiwi"]
NEW_KEY = {**KEY, "corpus_sha256": "A2"}


class FailingTokenizer(Tokenizer):
    """The whitespace tokenizer (same identity) that crashes on one text: a build interrupted midway."""

    def __init__(self, fail_on: str):
        super().__init__("whitespace")
        self.fail_on = fail_on

    def __call__(self, text):
        if text == self.fail_on:
            raise KeyboardInterrupt("interrupted")
        return super().__call__(text)


def test_interrupted_update_leaves_the_old_entry_usable(tmp_path):
    old = build_or_load_bm25(TEXTS, IDS, Tokenizer("whitespace"), KEY, tmp_path)
    expected = old.search("grape apple", 10)
    with pytest.raises(KeyboardInterrupt):
        build_or_load_bm25(NEW_TEXTS, IDS, FailingTokenizer("grape kiwi"), NEW_KEY, tmp_path)
    folders = sorted(p.name.split("-")[0] for p in (tmp_path / "indexes").iterdir())
    assert folders == ["bm25", "bm25tok"]  # nothing half-built published, staging removed
    assert all(check_entry(p).ok for p in (tmp_path / "indexes").iterdir())
    again = build_or_load_bm25(TEXTS, IDS, FailingTokenizer("apple banana apple"), KEY, tmp_path)
    assert again.search("grape apple", 10) == expected  # loaded as it was: nothing tokenised
    updated = build_or_load_bm25(NEW_TEXTS, IDS, Tokenizer("whitespace"), NEW_KEY, tmp_path)
    cold = build_or_load_bm25(NEW_TEXTS, IDS, Tokenizer("whitespace"), NEW_KEY, tmp_path / "cold")
    assert updated.meta["incremental"]["computed"] == 1
    for q in ("grape", "kiwi", "banana cherry", "apple"):
        assert updated.search(q, 10) == cold.search(q, 10)


def test_a_damaged_base_is_not_used(tmp_path):
    build_or_load_bm25(TEXTS, IDS, Tokenizer("whitespace"), KEY, tmp_path)
    (tok,) = (tmp_path / "indexes").glob("bm25tok-*")
    data = bytearray((tok / "token_ids.npy").read_bytes())
    data[-1] ^= 0xFF  # one token id changed, same size: only the checksum can tell
    (tok / "token_ids.npy").write_bytes(bytes(data))
    updated = build_or_load_bm25(NEW_TEXTS, IDS, Tokenizer("whitespace"), NEW_KEY, tmp_path)
    cold = build_or_load_bm25(NEW_TEXTS, IDS, Tokenizer("whitespace"), NEW_KEY, tmp_path / "cold")
    assert updated.meta["incremental"] == {"base": None, "reused": 0, "computed": 4}
    assert [updated.search(q, 10) for q in ("apple", "grape")] == [cold.search(q, 10) for q in ("apple", "grape")]


def test_a_base_removed_after_its_check_is_not_used(tmp_path, monkeypatch):
    """Another process clears the cache between the base's check and its reading: everything is tokenised."""
    import evalkit.index.bm25_tokens as bm25_tokens

    build_or_load_bm25(TEXTS, IDS, Tokenizer("whitespace"), KEY, tmp_path)
    (base,) = (tmp_path / "indexes").glob("bm25tok-*")
    read = bm25_tokens.read_tokens

    def gone(folder):
        if folder == base:
            raise FileNotFoundError(folder / "vocab.json")
        return read(folder)

    monkeypatch.setattr(bm25_tokens, "read_tokens", gone)
    updated = build_or_load_bm25(NEW_TEXTS, IDS, Tokenizer("whitespace"), NEW_KEY, tmp_path)
    assert updated.meta["incremental"] == {"base": None, "reused": 0, "computed": 4}
    cold = build_or_load_bm25(NEW_TEXTS, IDS, Tokenizer("whitespace"), NEW_KEY, tmp_path / "cold")
    assert updated.search("grape kiwi", 10) == cold.search("grape kiwi", 10) != []


def test_family_leaves_out_only_the_corpus():
    tok = {**KEY, "tokenizer": "whitespace", "n": 4}
    assert family_of(tok) == family_of({**tok, "corpus_sha256": "B", "n": 9})
    assert family_of(tok) != family_of({**tok, "tokenizer": "en"})
    assert family_of(tok) != family_of({**tok, "chunking": {"method": "fixed"}})


def test_match_passages_by_text():
    old, new = text_digests(["a", "b", "a"]), text_digests(["b", "c", "a", ""])
    assert match_passages(new, old).tolist() == [1, -1, 0, -1]  # a duplicate text maps to its first copy
    assert text_digests([]).shape == (0, 16) and np.array_equal(text_digests(["x"]), text_digests(["x"]))


# --- benchmarks/incremental_index.py on a tiny SciFact-shaped folder ----------------------------
def _bench():
    import importlib.util
    import sys
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "benchmarks"
    sys.path.insert(0, str(folder))  # for its scale_common import
    try:
        spec = importlib.util.spec_from_file_location("incremental_index", folder / "incremental_index.py")
        bench = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bench)
    finally:
        sys.path.remove(str(folder))
    return bench


def test_benchmark_change_is_one_percent_in_thirds():
    bench = _bench()
    docs = generated_docs(300)
    new, counts = bench.change(docs, 0.03, seed=1)  # 3% of 300 = 9: 3 deleted, 3 edited, 3 added
    assert counts == {"deleted": 3, "edited": 3, "added": 3}
    old_ids, new_ids = {d.id for d in docs}, {d.id for d in new}
    assert len(old_ids - new_ids) == 3 and sorted(new_ids - old_ids) == ["new-0", "new-1", "new-2"]
    old_text = {d.id: d.text for d in docs}
    assert sum(old_text.get(d.id) not in (None, d.text) for d in new) == 3
    assert bench.change(docs, 0.03, seed=1)[0] == new  # deterministic


def test_benchmark_runs_and_checks_identity(tmp_path, monkeypatch):
    import gzip

    bench = _bench()
    monkeypatch.setattr(bench, "_fix_threads", lambda threads: None)  # no torch import for a fake model
    EMBEDDERS.setdefault("bench-bow", lambda spec: BagOfWords("bench-bow/v1"))
    data = tmp_path / "scifact"
    data.mkdir()
    docs = generated_docs(120)
    (data / bench.FILES["corpus"]).write_text("".join(json.dumps({"_id": d.id, "title": d.title, "text": d.text})
                                                      + "\n" for d in docs))
    with gzip.open(data / bench.FILES["queries"], "wt") as fh:
        fh.write("".join(f"q{i}\t{q}\n" for i, q in enumerate(QUERIES)))
    (data / bench.FILES["qrels"]).write_text("q0 0 d001 1\n")
    out = tmp_path / "figures.json"
    code = bench.main(["--data-dir", str(data), "--work-dir", str(tmp_path / "work"), "--dense-docs", "60",
                       "--embedder", "bench-bow", "--change", "0.05", "--json", str(out)])
    figures = json.loads(out.read_text())
    assert code == 0
    bm25, dense = figures["bm25"], figures["dense (bench-bow, flat) + hybrid"]
    assert (bm25["docs"], bm25["deleted"], bm25["edited"], bm25["added"]) == (120, 2, 2, 2)
    assert bm25["incremental"] == {"base": bm25["incremental"]["base"], "reused": 116, "computed": 4}
    assert bm25["rankings_identical"] is True and bm25["entries_identical"] == "2/2"
    assert bm25["speedup"] == round(bm25["cold_full_build_changed_s"] / max(bm25["update_s"], 0.001), 1)
    assert dense["passages_encoded"] == 2 and dense["rankings_identical"] is True  # 1 edited + 1 added of 60


def test_benchmark_without_the_data_says_why(tmp_path, capsys):
    assert _bench().main(["--data-dir", str(tmp_path / "absent")]) == 0
    assert "incremental_index skipped" in capsys.readouterr().out
