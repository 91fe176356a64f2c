"""BM25: rankings and scores checked by hand (Lucene IDF, k1=0.9, b=0.4), okapi IDF, cache.

Parity with rank-bm25 on larger corpora (every query, ties, pruning) is in test_bm25_parity.py.
"""
from __future__ import annotations

import json
import math

import pytest

from evalkit.index.bm25 import build_or_load_bm25
from evalkit.text.tokenize import Tokenizer

# Whitespace tokens make the hand computation easy. N=4, total length 10 -> avgdl 2.5.
IDS = ["d1", "d2", "d3", "d4"]
TEXTS = [
    "apple banana apple",            # d1: len 3, apple x2, banana x1
    "banana cherry",                 # d2: len 2
    "cherry date elderberry fig",    # d3: len 4
    "grape",                         # d4: len 1, shares nothing with the queries below
]
KEY = {"corpus_sha256": "test", "chunking": {"method": "document"}}
K1, B, N, AVGDL = 0.9, 0.4, 4, 2.5


def lucene_idf(n_docs_with_term: int) -> float:
    return math.log(1 + (N - n_docs_with_term + 0.5) / (n_docs_with_term + 0.5))


def term_score(idf: float, tf: int, dl: int) -> float:
    return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / AVGDL))


@pytest.fixture
def index(tmp_path):
    return build_or_load_bm25(TEXTS, IDS, Tokenizer("whitespace"), KEY, tmp_path)


def test_score_matches_hand_computation(index):
    # apple: in 1 of 4 docs -> idf = ln(1 + 3.5/1.5) = 1.2040; d1: tf 2, dl 3
    # 1.2040 * 2 * 1.9 / (2 + 0.9 * (0.6 + 0.4 * 3/2.5)) = 1.2040 * 3.8 / 2.972 = 1.5394
    expected = term_score(lucene_idf(1), tf=2, dl=3)
    assert expected == pytest.approx(1.5394, abs=1e-4)
    assert index.search("apple", 10) == [("d1", pytest.approx(expected, rel=1e-12))]
    assert index.meta["k1"] == 0.9 and index.meta["b"] == 0.4 and index.meta["idf"] == "lucene"


def test_ranking_by_hand(index):
    # banana and cherry are each in 2 docs (same idf). d2 has both; d1 and d3 have one each,
    # and d1 (len 3) beats d3 (len 4) by length normalisation. d4 scores 0: not returned.
    hits = index.search("banana cherry", 10)
    assert [h[0] for h in hits] == ["d2", "d1", "d3"]
    idf = lucene_idf(2)
    assert hits[0][1] == pytest.approx(2 * term_score(idf, 1, 2))
    assert hits[1][1] == pytest.approx(term_score(idf, 1, 3))
    assert hits[2][1] == pytest.approx(term_score(idf, 1, 4))
    assert index.search("banana cherry", 2) == hits[:2]


def test_zero_score_docs_are_not_returned(index):
    assert index.search("kiwi", 10) == []
    assert index.search("", 10) == []
    assert all(score > 0 for _, score in index.search("apple grape", 10))
    assert {pid for pid, _ in index.search("apple grape", 10)} == {"d1", "d4"}


def test_lucene_idf_stays_positive_for_common_terms(tmp_path):
    # 'x' is in 3 of 4 docs: okapi's ln((N-n+0.5)/(n+0.5)) would be negative, Lucene's is not
    # every doc has length 2 (dl == avgdl), so a term score is idf * tf * 1.9 / (tf + 0.9)
    index = build_or_load_bm25(["x a", "x b", "x c", "d e"], ["1", "2", "3", "4"], Tokenizer("whitespace"), KEY,
                               tmp_path)
    hits = index.search("x", 10)
    assert [h[0] for h in hits] == ["1", "2", "3"]
    assert hits[0][1] == pytest.approx(math.log(1 + 1.5 / 3.5) * 1.9 / (1 + 0.9))


def test_okapi_idf_option(tmp_path):
    index = build_or_load_bm25(TEXTS, IDS, Tokenizer("whitespace"), KEY, tmp_path, idf="okapi")
    # okapi idf: ln((N - n + 0.5) / (n + 0.5)) = ln(3.5/1.5) for apple
    [(pid, score)] = index.search("apple", 10)
    assert pid == "d1"
    assert score == pytest.approx(term_score(math.log(3.5 / 1.5), tf=2, dl=3))
    assert index.meta["idf"] == "okapi"
    with pytest.raises(ValueError, match="unknown idf 'bm25'; valid: lucene, okapi"):
        build_or_load_bm25(TEXTS, IDS, Tokenizer("whitespace"), KEY, tmp_path, idf="bm25")


def test_okapi_floors_negative_idf(tmp_path):
    # 'x' in 3 of 4 docs: okapi idf ln(1.5/3.5) < 0 is floored at 0.25 * mean idf over all terms
    texts, ids = ["x a", "x b", "x c", "d e"], ["1", "2", "3", "4"]  # all of length 2 == avgdl
    index = build_or_load_bm25(texts, ids, Tokenizer("whitespace"), KEY, tmp_path, idf="okapi")
    idfs = [math.log(1.5 / 3.5)] + [math.log(3.5 / 1.5)] * 5  # x, then a, b, c, d, e
    floor = 0.25 * sum(idfs) / len(idfs)
    assert index.search("x", 1) == [("1", pytest.approx(floor * 1.9 / (1 + 0.9)))]


def test_ties_broken_by_id(tmp_path):
    # three identical passages stored out of id order
    index = build_or_load_bm25(["same words", "same words", "same words", "other"], ["z", "a", "m", "b"],
                               Tokenizer("whitespace"), KEY, tmp_path)
    assert [h[0] for h in index.search("same", 10)] == ["a", "m", "z"]
    assert [h[0] for h in index.search("same", 2)] == ["a", "m"]  # the cut keeps the smallest ids
    assert [h[0] for h in index.search("same", 1)] == ["a"]


class CountingTokenizer(Tokenizer):
    """Same identity as the real tokenizer; counts calls and can refuse to tokenise passages."""

    def __init__(self, refuse: set[str] = frozenset()):
        super().__init__("whitespace")
        self.calls, self.refuse = 0, refuse

    def __call__(self, text):
        if text in self.refuse:
            raise AssertionError(f"passage re-tokenised: {text!r}")
        self.calls += 1
        return super().__call__(text)


def _folders(root, kind):
    return sorted(p for p in (root / "indexes").iterdir() if p.name.startswith(f"{kind}-"))


def test_cache_reuses_tokens_and_matrix_from_disk(tmp_path):
    first = build_or_load_bm25(TEXTS, IDS, CountingTokenizer(), KEY, tmp_path)
    [tok_folder] = _folders(tmp_path, "bm25tok")
    vocab = json.loads((tok_folder / "vocab.json").read_text())
    assert vocab == ["apple", "banana", "cherry", "date", "elderberry", "fig", "grape"]  # ids by first use
    meta = json.loads((_folders(tmp_path, "bm25")[0] / "meta.json").read_text())
    assert meta["tokenizer"] == Tokenizer("whitespace").identity
    assert meta["corpus_sha256"] == "test" and meta["n"] == 4 and meta["k1"] == 0.9 and meta["idf"] == "lucene"

    # second build: every passage text is refused, so tokens and matrix come from disk, memory-mapped
    tok = CountingTokenizer(refuse=set(TEXTS))
    second = build_or_load_bm25(TEXTS, IDS, tok, KEY, tmp_path)
    assert tok.calls == 0 and second.memory_mapped
    assert second.meta["created"] == first.meta["created"]
    assert second.search("cherry banana", 10) == first.search("cherry banana", 10)  # not a passage text

    # other k1/b/idf: a new matrix folder, built from the cached tokens (no passage re-tokenised)
    tok = CountingTokenizer(refuse=set(TEXTS))
    other = build_or_load_bm25(TEXTS, IDS, tok, KEY, tmp_path, k1=1.2, b=0.75, idf="okapi")
    assert len(_folders(tmp_path, "bm25")) == 2 and len(_folders(tmp_path, "bm25tok")) == 1
    assert other.meta["k1"] == 1.2 and other.meta["idf"] == "okapi"


def test_cache_key_covers_tokenizer_and_corpus(tmp_path):
    build_or_load_bm25(TEXTS, IDS, Tokenizer("whitespace"), KEY, tmp_path)
    # another corpus hash with the same tokenizer: a new folder, whose tokens come from the first
    # entry (the same texts: evalkit.index.incremental), so nothing is tokenised again
    tok = CountingTokenizer()
    other = build_or_load_bm25(TEXTS, IDS, tok, {**KEY, "corpus_sha256": "other"}, tmp_path)
    assert tok.calls == 0 and other.meta["incremental"]["reused"] == len(TEXTS)
    # another tokenizer identity: a third folder
    build_or_load_bm25(TEXTS, IDS, Tokenizer("en"), KEY, tmp_path)
    assert len(_folders(tmp_path, "bm25")) == 3 and len(_folders(tmp_path, "bm25tok")) == 3


def test_interrupted_build_is_rebuilt(tmp_path):
    build_or_load_bm25(TEXTS, IDS, Tokenizer("whitespace"), KEY, tmp_path)
    for folder in (*_folders(tmp_path, "bm25"), *_folders(tmp_path, "bm25tok")):
        (folder / "meta.json").unlink()  # crash before meta
    tok = CountingTokenizer()
    again = build_or_load_bm25(TEXTS, IDS, tok, KEY, tmp_path)
    assert tok.calls == len(TEXTS)
    assert again.search("apple", 10)[0][0] == "d1"


def test_corpus_without_terms_gives_empty_results(tmp_path):
    index = build_or_load_bm25(["", "  "], ["a", "b"], Tokenizer("whitespace"), KEY, tmp_path)
    assert index.search("anything", 10) == []
    again = build_or_load_bm25(["", "  "], ["a", "b"], Tokenizer("whitespace"), KEY, tmp_path)
    assert again.search("anything", 10) == [] and again.meta["empty"] is True


def test_words_of_other_alphabets_are_found(tmp_path):
    texts = ["Москва — столица России.", "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.", "Zürich liegt am Zürichsee.",
             "Besançon est en France."]
    ids = ["ru", "el", "de", "fr"]
    new = build_or_load_bm25(texts, ids, Tokenizer("auto"), {"corpus": "x"}, tmp_path)
    assert [new.search(q, 1)[0][0] for q in ("МОСКВА", "Αθήνα", "ZÜRICH", "Besançon")] == ids
    old = build_or_load_bm25(texts, ids, Tokenizer("auto", letters="ascii"), {"corpus": "x"}, tmp_path)
    assert old.search("москва", 1) == [] and old.search("Αθήνα", 1) == []  # v3 dropped these words
    strip = build_or_load_bm25(texts, ids, Tokenizer("auto", accents="strip"), {"corpus": "x"}, tmp_path)
    assert strip.search("Besancon", 1)[0][0] == "fr" and new.search("Besancon", 1) == []
