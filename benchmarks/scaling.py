#!/usr/bin/env python
"""Index scaling: BM25 and dense (faiss) build time, query time and peak memory at 1k, 5k and 20k chunks.

    python benchmarks/scaling.py                        # 1k / 5k / 20k chunks, 100 queries, MiniLM rate on 300
    python benchmarks/scaling.py --sizes 1000,5000 --encode 0 --markdown

What it does:

1. Generates a synthetic corpus, deterministically (``--seed``, default 7): a vocabulary
   of 30,000 made-up words drawn with Zipf-like frequencies (s = 1.1), chunks of 40-80
   words, and ``--queries`` (default 100) queries of 6 words taken from random chunks
   (so every query has matches). No data set is needed, nothing is written to the
   repository; scratch caches go under ``--work-dir`` (default ``/tmp/evalkit-scaling``).
2. For every size and index kind, runs a **fresh subprocess** (so its peak RSS belongs to
   that one index) that uses evalkit's own code:
   - ``bm25``: ``evalkit.index.bm25.build_or_load_bm25`` (``en`` tokenizer with Porter
     stemming and stop words, Lucene IDF, k1 0.9, b 0.4) on an empty cache: tokenises
     every chunk, writes the tokens, builds the ``rank_bm25`` scorer. Then ``search``
     (top 100) for every query, one at a time.
   - ``dense``: ``evalkit.index.dense.build_or_load_dense`` (faiss ``IndexFlatIP``, 384-d)
     with a stub embedder that returns **random unit vectors** (seeded, float32),
     so the build time is faiss + evalkit, not the model. Then ``DenseIndex.search``
     (top 100) one query vector at a time, as the retrieve node does.
   Each child reports build seconds, ms/query (mean and p95), peak RSS (``ru_maxrss``)
   and the peak RSS above the child's baseline after its imports, then repeats the build
   under ``tracemalloc`` for the peak of Python-tracked allocations (numpy included,
   faiss's C++ buffers not).
3. With ``--encode N`` (default 300) a last child encodes the first N synthetic chunks
   with the real MiniLM (all-MiniLM-L6-v2, ``--threads`` torch threads, default 1) and
   reports chunks/s; the encoding time of the larger sizes is that rate extrapolated,
   not measured.
4. Prints one table with every size side by side and the growth ratios between sizes.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

DIM = 384
VOCAB = 30_000


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,5000,20000", help="Corpus sizes in chunks (default: 1000,5000,20000).")
    p.add_argument("--kinds", default="bm25,dense", help="Index kinds to measure (default: bm25,dense).")
    p.add_argument("--queries", type=int, default=100, help="Queries per size (default: 100).")
    p.add_argument("--encode", type=int, default=300,
                   help="Chunks to encode with the real MiniLM for the encoding rate (0 skips; default: 300).")
    p.add_argument("--seed", type=int, default=7, help="Seed of the synthetic corpus and vectors (default: 7).")
    p.add_argument("--threads", type=int, default=1, help="torch and faiss threads (default: 1).")
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-scaling"),
                   help="Scratch folder for the index caches (default: /tmp/evalkit-scaling).")
    p.add_argument("--markdown", action="store_true", help="Print tables as Markdown.")
    p.add_argument("--json", type=Path, help="Also write the figures to this JSON file.")
    p.add_argument("--child", nargs=2, metavar=("KIND", "SIZE"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def corpus(n: int, n_queries: int, seed: int) -> tuple[list[str], list[str]]:
    """``n`` synthetic chunks and ``n_queries`` queries; the same ``seed`` gives the same texts."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    sizes = rng.integers(3, 10, size=VOCAB)
    flat = "".join(letters[rng.integers(0, 26, size=int(sizes.sum()))])
    ends = np.cumsum(sizes)
    words = [flat[e - k:e] for e, k in zip(ends, sizes)]
    weights = 1.0 / np.arange(1, VOCAB + 1) ** 1.1
    weights /= weights.sum()
    lengths = rng.integers(40, 81, size=n)
    draws = rng.choice(VOCAB, size=int(lengths.sum()), p=weights)
    chunks, at = [], 0
    for k in lengths:
        chunks.append(" ".join(words[i] for i in draws[at:at + k]))
        at += k
    qrng = np.random.default_rng(seed + 1)
    queries = []
    for c in qrng.integers(0, n, size=n_queries):
        toks = chunks[c].split()
        queries.append(" ".join(toks[i] for i in sorted(qrng.choice(len(toks), size=6, replace=False))))
    return chunks, queries


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def current_rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class StubEmbedder:
    """Returns seeded random unit vectors: the dense build without the model."""

    identity = "stub-random-unit@scaling"
    dim = DIM

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        v = self.rng.standard_normal((len(texts), DIM), dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    encode_queries = encode_passages


def child(kind: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    """Build one index (or encode) in this process and report times and memory."""
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import faiss

    faiss.omp_set_num_threads(args.threads)
    from evalkit.index.bm25 import build_or_load_bm25
    from evalkit.index.dense import build_or_load_dense
    from evalkit.index.tokenize import Tokenizer

    texts, queries = corpus(n, args.queries, args.seed)
    ids = [f"c{i}" for i in range(n)]
    key = {"corpus_sha256": f"synthetic-{n}-{args.seed}", "chunking": {"method": "document"}}
    cache = args.work_dir / f"{kind}-{n}"
    base = current_rss_mb()
    out: dict[str, Any] = {"kind": kind, "n": n, "baseline_rss_mb": base}

    def build() -> Any:
        if cache.exists():
            shutil.rmtree(cache)
        if kind == "bm25":
            return build_or_load_bm25(texts, ids, Tokenizer("en", True, True), key, cache, 0.9, 0.4, "lucene")
        return build_or_load_dense(texts, ids, StubEmbedder(args.seed), key, cache, "flat")

    if kind == "encode":
        import torch

        from evalkit.models.embedders import ModelSpec, load_embedder

        torch.set_num_threads(args.threads)
        model = load_embedder(ModelSpec(name="minilm"))
        model.encode_passages(texts[:8])  # first-call warm-up
        t0 = time.perf_counter()
        model.encode_passages(texts)
        out["encode_s"] = time.perf_counter() - t0
        out["peak_rss_mb"] = rss_mb()
        return out
    t0 = time.perf_counter()
    index = build()
    out["build_s"] = time.perf_counter() - t0
    times = []
    if kind == "bm25":
        for q in queries:
            t = time.perf_counter()
            index.search(q, 100)
            times.append(time.perf_counter() - t)
    else:
        qv = StubEmbedder(args.seed + 2).encode_queries(queries)
        for i in range(len(queries)):
            t = time.perf_counter()
            index.search(qv[i:i + 1], 100, StubEmbedder.identity)
            times.append(time.perf_counter() - t)
    out["query_ms"] = 1000 * statistics.fmean(times)
    out["query_p95_ms"] = 1000 * sorted(times)[int(0.95 * (len(times) - 1))]
    out["peak_rss_mb"] = rss_mb()
    del index
    tracemalloc.start()
    build()
    out["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    shutil.rmtree(cache, ignore_errors=True)
    return out


def run_child(kind: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", kind, str(n), "--queries", str(args.queries), "--seed",
           str(args.seed), "--threads", str(args.threads), "--work-dir", str(args.work_dir)]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), args)))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    args.work_dir.mkdir(parents=True, exist_ok=True)
    results: dict[tuple[str, int], dict[str, Any]] = {}
    t_gen = time.perf_counter()
    corpus(max(sizes), args.queries, args.seed)
    gen_s = time.perf_counter() - t_gen
    kinds = [k for k in ("bm25", "dense") if k in args.kinds.split(",")]
    for n in sizes:  # sizes interleaved over kinds, so load drift hits both kinds alike
        for kind in kinds:
            results[(kind, n)] = run_child(kind, n, args)
            print(f"{kind} {n}: build {results[(kind, n)]['build_s']:.2f} s", file=sys.stderr)
    enc = run_child("encode", args.encode, args) if args.encode else None

    header = ["index", "chunks", "build s", "x prev size", "ms/query (p95)", "x prev size", "peak RSS MB",
              "RSS above baseline MB", "tracemalloc peak MB"]
    rows = []
    for kind in kinds:
        prev = None
        for n in sizes:
            r = results[(kind, n)]
            growth_b = f"{r['build_s'] / prev['build_s']:.1f}x" if prev else "-"
            growth_q = f"{r['query_ms'] / prev['query_ms']:.1f}x" if prev else "-"
            rows.append([kind if kind == "bm25" else "dense (faiss flat, random vectors)", f"{n:,}",
                         f"{r['build_s']:.2f}", growth_b, f"{r['query_ms']:.2f} ({r['query_p95_ms']:.2f})", growth_q,
                         f"{r['peak_rss_mb']:.0f}", f"{r['peak_rss_mb'] - r['baseline_rss_mb']:.0f}",
                         f"{r['tracemalloc_peak_mb']:.1f}"])
            prev = r
    from scale_common import table

    print(f"Index scaling on a synthetic corpus (seed {args.seed}; chunks of 40-80 Zipf-distributed made-up "
          f"words; {args.queries} queries of 6 words, one at a time, top 100); one subprocess per cell; "
          f"{args.threads} faiss/torch thread(s); corpus generation ({max(sizes):,} chunks) {gen_s:.1f} s, "
          "not counted\n")
    print(table(header, rows, args.markdown))
    if enc:
        rate = args.encode / enc["encode_s"]
        print(f"\nMiniLM encoding (real model via evalkit's load_embedder, no cache, batch size 32, "
              f"{args.encode:,} synthetic chunks): {enc['encode_s']:.1f} s = "
              f"{rate:.1f} chunks/s, peak RSS {enc['peak_rss_mb']:.0f} MB; extrapolated: "
              + ", ".join(f"{n:,} chunks ~{n / rate:.0f} s" for n in sizes))
    if args.json:
        args.json.write_text(json.dumps({"results": [v for v in results.values()], "encode": enc}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
