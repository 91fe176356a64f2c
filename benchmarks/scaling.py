#!/usr/bin/env python
"""Index scaling: BM25 (evalkit vs rank-bm25 vs bm25s) and faiss (flat / IVF / HNSW) at 10k, 100k and 1M passages.

    python benchmarks/scaling.py                                   # 10k / 100k / 1M, 100 queries
    python benchmarks/scaling.py --sizes 10000,100000 --kinds bm25-evalkit,dense-flat --markdown

What it does:

1. Generates the synthetic corpus of ``benchmarks/synthetic.made_up_corpus`` (seed 7):
   chunks of 40-80 made-up words with Zipf-like frequencies, ``--queries`` 6-word queries
   from random chunks. Scratch files go under ``--work-dir`` (default ``/tmp/evalkit-scaling``).
2. Tokenises each size once with evalkit's ``en`` tokenizer (Porter, stop words) into
   evalkit's token cache (timed: "tokenise s"); every BM25 implementation then starts from
   the same tokens, so their build times compare the index, not the tokenizer.
3. Runs each (kind, size) in a **fresh subprocess** (its peak RSS is that index's), 1
   thread, and measures build s, query ms single (one query per call) and batched (every
   query in one call; each the median of ``--repeats`` passes), peak RSS:
   - ``bm25-evalkit``: ``build_or_load_bm25`` (bm25s matrix, float64, Lucene IDF, k1 0.9,
     b 0.4) then ``search`` per query and ``search_many`` for all; a warm load is timed too.
   - ``bm25-rank``: rank-bm25 ``BM25Okapi`` with Lucene IDF (evalkit before bm25s) on the
     same tokens; single queries only (it has no batch call). Skipped above ``--rank-max``.
   - ``bm25-bm25s``: bm25s used directly as its docs show (its defaults: float32, Lucene),
     ``retrieve(k=100)`` one query per call and all queries in one call (numpy backend).
   - ``dense-flat``, ``dense-ivf`` (nlist = 4 sqrt(n), at most 1,024; nprobe = nlist / 16), ``dense-hnsw`` (M 32,
     efConstruction 100, efSearch 128): evalkit's ``build_or_load_dense`` over seeded
     *clustered* unit vectors (384-d; 2,000 Gaussian clusters, so an approximate index sees
     structure, unlike uniform random vectors), ``DenseIndex.search`` single and batched;
     recall@100 of IVF and HNSW against flat's exact top 100 on the same queries.
   evalkit's BM25 results are checked equal to rank-bm25's (where it runs) query by query.
4. Prints one table, ratios first: query-time growth from the previous size, evalkit's
   speed-up over rank-bm25 and bm25s, then the absolute figures.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

DIM = 384
KINDS = ("bm25-evalkit", "bm25-rank", "bm25-bm25s", "dense-flat", "dense-ivf", "dense-hnsw")
# evalkit's BM25 memory by phase, each in a fresh process: tokenise (the corpus in memory, the benchmark's own
# cost), build the matrix from cached tokens (no passage text in memory), load it warm and query (memory-mapped)
# bm25-build-old builds the same matrix the old way (bm25s's index()), in its own process, for old vs new in one run
MEMORY_KINDS = ("bm25-tokens", "bm25-build-old", "bm25-build", "bm25-query")
KEY_TEMPLATE = {"chunking": {"method": "document"}}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10000,100000,1000000", help="Corpus sizes (default: 10000,100000,1000000).")
    p.add_argument("--kinds", default=",".join(KINDS),
                   help=f"What to measure (default: all of {', '.join(KINDS)}; also {', '.join(MEMORY_KINDS)}: "
                        "evalkit's BM25 peak RSS while tokenising, building and querying, each in its own process).")
    p.add_argument("--queries", type=int, default=100, help="Queries per size (default: 100).")
    p.add_argument("--rank-max", type=int, default=100_000, help="Largest size rank-bm25 runs at (default: 100000).")
    p.add_argument("--hnsw-max", type=int, default=100_000,
                   help="Largest size HNSW is built at (default: 100000; a 1M build takes ~half an hour on one core).")
    p.add_argument("--repeats", type=int, default=5,
                   help="Timed passes over the queries per cell; the median pass is reported (default: 5; "
                        "rank-bm25, seconds a query, is timed once).")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--threads", type=int, default=1, help="faiss / BLAS threads (default: 1).")
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-scaling"))
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--json", type=Path, help="Also write the figures to this JSON file.")
    p.add_argument("--child", nargs=2, metavar=("KIND", "SIZE"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def clustered(n: int, seed: int) -> np.ndarray:
    """``n`` unit vectors around 2,000 seeded centres (float32), generated in blocks."""
    centres = np.random.default_rng(12345).standard_normal((2000, DIM), dtype=np.float32)
    rng = np.random.default_rng(seed)
    out = np.empty((n, DIM), dtype=np.float32)
    for i in range(0, n, 100_000):
        m = min(100_000, n - i)
        v = centres[rng.integers(0, 2000, size=m)] + 0.6 * rng.standard_normal((m, DIM), dtype=np.float32)
        out[i:i + m] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


class VectorStub:
    """An embedder stand-in that hands back precomputed vectors (the dense build without a model)."""

    identity, dim = "clustered-unit-vectors@scaling", DIM

    def __init__(self, vecs: np.ndarray):
        self.vecs = vecs

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        return self.vecs


def _timed(fn: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _median_timed(fn: Any, repeats: int) -> tuple[Any, float]:
    """``fn``'s result and the median of ``repeats`` timed calls: a pass over 100 queries at 100k lasts
    ~0.1 s, so one pass moved by a third between runs; the median of five is what a rerun reproduces."""
    times = []
    for _ in range(max(1, repeats)):
        out, t = _timed(fn)
        times.append(t)
    return out, float(np.median(times))


def tokens(n: int, args: argparse.Namespace) -> tuple[list[str], list[str], Any, dict[str, Any], float]:
    """The corpus, queries, tokenizer, key, and the tokenisation seconds (0 when the cache had them)."""
    from synthetic import made_up_corpus

    from evalkit.cachestore import cache_dir_for
    from evalkit.index import bm25
    from evalkit.text.tokenize import Tokenizer

    texts, queries = made_up_corpus(n, args.queries, args.seed)
    tok = Tokenizer("en", True, True)
    key = {**KEY_TEMPLATE, "corpus_sha256": f"synthetic-{n}-{args.seed}"}
    tok_key = {**key, "tokenizer": tok.identity, "n": n, "format": bm25.FORMAT}
    folder = cache_dir_for(args.work_dir / "tokens", "bm25tok", tok_key)
    t = time.perf_counter()
    existed = (folder / "meta.json").exists()
    bm25._tokens(texts, tok, tok_key, args.work_dir / "tokens")
    return texts, queries, tok, key, 0.0 if existed else time.perf_counter() - t


def _matrix_digest(cache: Path) -> str:
    """One sha256 over the saved BM25 matrix files (the ``indexes/bm25-*`` folder's .npy files, by name)."""
    import hashlib

    h = hashlib.sha256()
    files = sorted(cache.glob("indexes/bm25-*/*.npy"))
    if not files:
        raise FileNotFoundError(f"no BM25 matrix files under {cache}/indexes/bm25-*/")
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def memory_child(kind: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    """One phase of evalkit's BM25 in this fresh process (see MEMORY_KINDS); its peak RSS is that phase's."""
    from evalkit.index import bm25
    from evalkit.text.tokenize import Tokenizer

    out: dict[str, Any] = {"kind": kind, "n": n}
    cache = args.work_dir / f"evalkit-mem-{n}"
    queries_file = args.work_dir / f"queries-{n}.json"
    tok = Tokenizer("en", True, True)
    key = {**KEY_TEMPLATE, "corpus_sha256": f"synthetic-{n}-{args.seed}"}
    ids = [f"c{i}" for i in range(n)]
    if kind == "bm25-tokens":
        _, queries, _, _, out["tokenise_s"] = tokens(n, args)
        queries_file.write_text(json.dumps(queries))
    elif kind in ("bm25-build", "bm25-build-old"):
        if kind == "bm25-build-old":
            from evalkit.index import bm25_matrix

            cache = args.work_dir / f"evalkit-mem-old-{n}"
            bm25.csc_scores = bm25_matrix.bm25s_index_scores  # the old build path
        shutil.rmtree(cache, ignore_errors=True)
        shutil.copytree(args.work_dir / "tokens", cache)  # cached tokens: the build reads no passage text
        _, out["build_s"] = _timed(lambda: bm25.build_or_load_bm25([], ids, tok, key, cache))
        out["matrix_sha256"] = _matrix_digest(cache)
        if kind == "bm25-build-old":
            shutil.rmtree(cache, ignore_errors=True)
    else:
        queries = json.loads(queries_file.read_text())
        index, out["warm_load_s"] = _timed(lambda: bm25.build_or_load_bm25([], ids, tok, key, cache))
        out["memory_mapped"] = index.memory_mapped
        index.search(queries[0], 100)  # as bm25-evalkit: the first search pays one-off costs
        single, t = _median_timed(lambda: [index.search(q, 100) for q in queries], args.repeats)
        out["single_ms"] = 1000 * t / len(queries)
        reference = args.work_dir / f"evalkit-{n}.json"  # bm25-evalkit's rankings, when it ran at this size
        if reference.exists():
            out["equal_to_evalkit"] = json.loads(json.dumps(single)) == json.loads(reference.read_text())
        shutil.rmtree(cache, ignore_errors=True)
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def child(kind: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    if kind in MEMORY_KINDS:
        return memory_child(kind, n, args)
    import faiss

    faiss.omp_set_num_threads(args.threads)
    out: dict[str, Any] = {"kind": kind, "n": n}
    if kind.startswith("bm25"):
        texts, queries, tok, key, out["tokenise_s"] = tokens(n, args)
        from evalkit.index import bm25

        tok_key = {**key, "tokenizer": tok.identity, "n": n, "format": bm25.FORMAT}
        vocab, ids_flat, offsets = bm25._tokens(texts, tok, tok_key, args.work_dir / "tokens")
        del texts
        if kind != "bm25-evalkit":  # the other implementations take token strings
            docs = [[vocab[i] for i in ids_flat[s:e].tolist()] for s, e in zip(offsets[:-1], offsets[1:])]
        qtok = [tok(q) for q in queries]
        ids = [f"c{i}" for i in range(n)]
        base = peak_rss_mb()
        if kind == "bm25-evalkit":
            cache = args.work_dir / f"evalkit-{n}"
            shutil.rmtree(cache, ignore_errors=True)
            shutil.copytree(args.work_dir / "tokens", cache)  # the shared tokens: only the matrix is built
            index, out["build_s"] = _timed(lambda: bm25.build_or_load_bm25([], ids, tok, key, cache))
            _, out["warm_load_s"] = _timed(lambda: bm25.build_or_load_bm25([], ids, tok, key, cache))
            index.search(queries[0], 100)
            index.paths.clear()
            single, t = _median_timed(lambda: [index.search(q, 100) for q in queries], args.repeats)
            out["single_ms"] = 1000 * t / len(queries)
            paths = {k: v // max(1, args.repeats) for k, v in index.paths.items()}  # one pass's
            batch, t = _median_timed(lambda: index.search_many(queries, 100), args.repeats)
            out["batch_ms"] = 1000 * t / len(queries)
            out["same_single_batch"] = single == batch
            out["paths"] = paths
            (args.work_dir / f"evalkit-{n}.json").write_text(json.dumps(single))
            shutil.rmtree(cache, ignore_errors=True)
        elif kind == "bm25-rank":
            from rank_bm25 import BM25Okapi

            class Lucene(BM25Okapi):
                def _calc_idf(self, nd: dict[str, int]) -> None:
                    for word, freq in nd.items():
                        self.idf[word] = math.log(1.0 + (self.corpus_size - freq + 0.5) / (freq + 0.5))

            ref, out["build_s"] = _timed(lambda: Lucene(docs, k1=0.9, b=0.4))

            def top(terms: list[str]) -> list[list[Any]]:
                s = np.asarray(ref.get_scores(terms), dtype=np.float64)
                return [[ids[i], float(s[i])] for i in sorted(np.flatnonzero(s > 0), key=lambda i: (-s[i], ids[i]))][:100]

            found, t = _timed(lambda: [top(q) for q in qtok])
            out["single_ms"] = 1000 * t / len(queries)
            theirs = args.work_dir / f"evalkit-{n}.json"
            if theirs.exists():
                out["equal_to_evalkit"] = json.loads(theirs.read_text()) == found
        else:
            import bm25s

            model = bm25s.BM25(k1=0.9, b=0.4)  # its defaults otherwise (method lucene, float32)
            _, out["build_s"] = _timed(lambda: model.index(docs, show_progress=False))
            model.retrieve([qtok[0]], k=100, show_progress=False)
            _, t = _median_timed(lambda: [model.retrieve([q], k=100, show_progress=False) for q in qtok], args.repeats)
            out["single_ms"] = 1000 * t / len(queries)
            _, t = _median_timed(lambda: model.retrieve(qtok, k=100, show_progress=False), args.repeats)
            out["batch_ms"] = 1000 * t / len(queries)
        out["rss_above_start_mb"] = peak_rss_mb() - base
    else:
        from evalkit.index.dense import build_or_load_dense

        vecs = clustered(n, args.seed)
        qv = clustered(args.queries, args.seed + 1)
        ids = [f"c{i}" for i in range(n)]
        key = {**KEY_TEMPLATE, "corpus_sha256": f"clustered-{n}-{args.seed}"}
        cache = args.work_dir / f"{kind}-{n}"
        shutil.rmtree(cache, ignore_errors=True)
        sub = kind.split("-")[1]
        nlist = min(1024, int(4 * math.sqrt(n)))  # k-means cost bounds it at 1M
        extra = {"nlist": nlist, "nprobe": max(8, nlist // 16)} if sub == "ivf" else {}
        base = peak_rss_mb()
        _, out["build_s"] = _timed(lambda: build_or_load_dense([""] * n, ids, VectorStub(vecs), key, cache, sub, **extra))
        del vecs
        index, out["warm_load_s"] = _timed(lambda: build_or_load_dense([""] * n, ids, VectorStub(None), key, cache, sub,
                                                                      **extra))
        single, t = _median_timed(lambda: [index.search(qv[i:i + 1], 100, VectorStub.identity)[0]
                                            for i in range(len(qv))], args.repeats)
        out["single_ms"] = 1000 * t / len(qv)
        batch, t = _median_timed(lambda: index.search(qv, 100, VectorStub.identity), args.repeats)
        out["batch_ms"] = 1000 * t / len(qv)
        out["same_single_batch"] = single == batch
        (args.work_dir / f"{kind}-{n}-top.json").write_text(json.dumps([[p for p, _ in r] for r in single]))
        out["rss_above_start_mb"] = peak_rss_mb() - base
        shutil.rmtree(cache, ignore_errors=True)
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def run_child(kind: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", kind, str(n), "--queries", str(args.queries), "--seed", str(args.seed),
           "--threads", str(args.threads), "--repeats", str(args.repeats), "--work-dir", str(args.work_dir)]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads),
           "OPENBLAS_NUM_THREADS": str(args.threads), "DISABLE_TQDM": "1"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return {"kind": kind, "n": n, "error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _f(x: Any, fmt: str = ".2f") -> str:
    return "-" if x is None else format(x, fmt)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), args)))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    kinds = [k for k in (*KINDS, *MEMORY_KINDS) if k in args.kinds.split(",")]
    args.work_dir.mkdir(parents=True, exist_ok=True)
    res: dict[tuple[str, int], dict[str, Any]] = {}
    for n in sizes:
        for kind in kinds:
            if (kind == "bm25-rank" and n > args.rank_max) or (kind == "dense-hnsw" and n > args.hnsw_max):
                continue
            res[(kind, n)] = r = run_child(kind, n, args)
            print(f"{kind} {n:,}: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                                for k, v in r.items() if k not in ("kind", "n")),
                  file=sys.stderr, flush=True)
    from scale_common import table

    header = ["index", "passages", "query x prev size (single)", "evalkit speed-up (single)", "build s",
              "warm load s", "ms/query single", "ms/query batched", "recall@100 vs flat", "peak RSS MB",
              "RSS above start MB", "notes"]
    rows = []
    for kind in kinds:
        prev = None
        for n in sizes:
            r = res.get((kind, n))
            if r is None or "error" in r:
                if r is not None:
                    rows.append([kind, f"{n:,}", *["-"] * 9, f"failed: {r['error'][:60]}"])
                continue
            growth = f"{r['single_ms'] / prev['single_ms']:.1f}x" if prev and "single_ms" in r and "single_ms" in prev else "-"
            speed = "-"
            ev = res.get(("bm25-evalkit", n))
            if kind in ("bm25-rank", "bm25-bm25s") and ev and "single_ms" in ev:
                speed = f"{r['single_ms'] / ev['single_ms']:.2f}x"
            recall = None
            if kind in ("dense-ivf", "dense-hnsw"):
                flat, mine = (args.work_dir / f"{k}-{n}-top.json" for k in ("dense-flat", kind))
                if flat.exists() and mine.exists():
                    e, g = json.loads(flat.read_text()), json.loads(mine.read_text())
                    recall = float(np.mean([len(set(a) & set(b)) / max(1, len(a)) for a, b in zip(e, g)]))
            notes = []
            if "memory_mapped" in r:
                notes.append("memory-mapped" if r["memory_mapped"] else "NOT memory-mapped")
            if "tokenise_s" in r and r["tokenise_s"]:
                notes.append(f"tokenise {r['tokenise_s']:.0f} s (shared)")
            old = res.get(("bm25-build-old", n))
            if kind == "bm25-build" and old and "matrix_sha256" in old:
                same = old["matrix_sha256"] == r["matrix_sha256"]
                notes.append("matrix files = old build's" if same else "MATRIX DIFFERS from old build")
                if old.get("build_s") and old.get("peak_rss_mb"):
                    notes.append(f"vs old: build {old['build_s'] / r['build_s']:.1f}x faster, "
                                 f"peak RSS {old['peak_rss_mb'] / r['peak_rss_mb']:.1f}x lower")
            if "equal_to_evalkit" in r:
                notes.append("rankings = evalkit's" if r["equal_to_evalkit"] else "RANKINGS DIFFER from evalkit")
            if r.get("same_single_batch") is False:
                notes.append("BATCH DIFFERS from single")
            if "paths" in r:
                notes.append("paths " + "/".join(f"{k}:{v}" for k, v in sorted(r["paths"].items())))
            rows.append([kind, f"{n:,}", growth, speed, _f(r.get("build_s")), _f(r.get("warm_load_s"), ".3f"),
                         _f(r.get("single_ms")), _f(r.get("batch_ms")), _f(recall, ".3f"), _f(r["peak_rss_mb"], ".0f"),
                         _f(r.get("rss_above_start_mb"), ".0f"), "; ".join(notes)])
            prev = r
    print(f"Index scaling (synthetic, seed {args.seed}; {args.queries} queries, top 100; one subprocess per cell; "
          f"{args.threads} thread(s); query times: the median of {args.repeats} passes). "
          "'evalkit speed-up' = that implementation's single-query time / evalkit's.\n")
    print(table(header, rows, args.markdown))
    if args.json:
        args.json.write_text(json.dumps([{**v} for v in res.values()], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
