#!/usr/bin/env python
"""10,000 queries over 100,000 passages, end to end (BM25 + dense + fusion), and where the time goes.

    python benchmarks/e2e_10k.py                       # 100k passages, 10k queries, MiniLM, HNSW
    python benchmarks/e2e_10k.py --passages 20000 --queries 2000 --index flat

What it does:

1. Generates ``benchmarks/synthetic.english_corpus`` (seeded): ``--passages`` passages of
   20-40 real English words and ``--queries`` 6-word queries, each from a random passage
   (its document is the gold document), written as an eval set under ``--work-dir``.
2. Warm-up, not timed (skipped when the cache is warm): MiniLM encodes every passage in
   batches and every query alone (as evalkit does for a model that is not batch-invariant)
   into the embedding cache ``WORK_DIR/cache``. MiniLM runs at ~50-270 passages/s here, so
   this is done once and reused.
3. Timed: ``run_eval`` (MLflow off: ``--no-mlflow``; no progress bar) of one variant:
   ``retrieve`` with MiniLM (``--index``, default hnsw) top 100 and BM25 (``en``) top 100,
   RRF k=60, fused top 100; metrics recall@20, hit@5, mrr@10, ndcg@10, recall@100.
   The first timed run builds the indexes from cached vectors and tokenises the corpus
   ("cold indexes"); ``--repeats`` more runs load them ("warm").
4. Prints wall time and where it goes: index build/load, the per-query loop (graph, fusion,
   metrics; inside it the batch of ``Retrieve.prepare``: query vectors read from the cache,
   faiss batch search, BM25 batch search, run at the first query) and record writing, from
   timers wrapped around evalkit's own functions for this script only.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from scale_common import _fix_threads, _quiet_env, table

METRICS = ("recall@20", "hit@5", "mrr@10", "ndcg@10", "recall@100")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--passages", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--index", choices=("flat", "ivf", "hnsw"), default="hnsw", help="Dense index (default: hnsw).")
    p.add_argument("--repeats", type=int, default=1, help="Warm runs after the first (default: 1).")
    p.add_argument("--threads", type=int, default=1, help="torch / faiss / BM25 threads (default: 1).")
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-e2e"))
    p.add_argument("--markdown", action="store_true")
    return p.parse_args(argv)


@contextmanager
def timers():
    """Seconds spent inside evalkit functions during the block (wrapped in this process only)."""
    from evalkit.index import bm25, dense
    from evalkit.models.embedders import CachedEmbedder
    from evalkit.nodes.retrieve import Retrieve
    from evalkit.run import query, runner, store

    spent: dict[str, float] = defaultdict(float)
    saved = []

    def wrap(owner: Any, name: str, label: str) -> None:
        orig = getattr(owner, name)
        saved.append((owner, name, orig))
        spent[label] += 0.0  # rows print in this order, nested timers under the one they run inside

        def timed(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return orig(*a, **k)
            finally:
                spent[label] += time.perf_counter() - t

        setattr(owner, name, timed)

    wrap(runner, "build_graph", "build/load indexes (graph build)")
    # Retrieve.prepare only registers the questions: the batch (all query vectors, one faiss and one
    # BM25 call for every question) runs at the first work-memo miss, inside the first run_query
    wrap(Retrieve, "prepare", "prepare: register the questions")
    wrap(query, "run_query", "run_query (graph, fusion, metrics; the batched searches inside)")
    wrap(CachedEmbedder, "encode_queries", "  query vectors (cache read)")
    wrap(dense.DenseIndex, "search", "  faiss search")
    wrap(bm25.BM25Index, "search_many", "  BM25 search")
    wrap(store.VariantStore, "append", "per_query.jsonl appends")
    wrap(store.VariantStore, "finish", "records finish (ordered rewrite)")
    try:
        yield spent
    finally:
        for owner, name, orig in reversed(saved):
            setattr(owner, name, orig)


def config(index: str) -> Any:
    from evalkit.graph import config_from_dict

    dense: dict[str, Any] = {"embedder": "minilm", "top_k": 100, "index": index}
    if index == "ivf":
        dense.update(nlist=1024, nprobe=32)
    return config_from_dict({"name": f"hybrid_rrf_{index}", "chunking": {"method": "document"},
                             "nodes": {"retrieve": {"type": "retrieve", "params": {
                                 "dense": dense, "bm25": {"tokenizer": "en", "top_k": 100},
                                 "fusion": {"method": "rrf", "k": 60}, "top_k": 100}}},
                             "edges": {"start": "retrieve", "retrieve": "end"}})


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    _quiet_env(args.threads)
    os.environ.setdefault("EVALKIT_THREADS", str(args.threads))
    _fix_threads(args.threads)
    from synthetic import english_corpus, write_eval_set

    from evalkit.evalsets import load_eval_set
    from evalkit.models.cache import EmbeddingCache
    from evalkit.models.embedders import CachedEmbedder, ModelSpec
    from evalkit.run.runner import RunOptions, run_eval

    t = time.perf_counter()
    chunks, queries, gold = english_corpus(args.passages, args.queries)
    path = write_eval_set(args.work_dir / "set", chunks, queries, gold)
    gen_s = time.perf_counter() - t
    cache = args.work_dir / "cache"
    emb = CachedEmbedder.lazy(ModelSpec(name="minilm"), EmbeddingCache(cache / "embeddings.sqlite"))
    t = time.perf_counter()
    emb.encode_passages(chunks)
    emb.encode_queries(queries)
    warm_s, encoded = time.perf_counter() - t, emb.encoded
    print(f"warm-up: {encoded:,} texts encoded in {warm_s:.0f} s (0 = cache already warm)", file=sys.stderr)
    eval_set = load_eval_set(f"{path}@v1")
    cfg = config(args.index)
    rows, summaries = [], []
    for run in range(1 + args.repeats):
        if run == 0:  # cold indexes: built from the cached vectors and a fresh tokenisation
            import shutil

            for folder in (cache / "indexes").glob("*"):
                shutil.rmtree(folder)
        out = args.work_dir / "results" / f"run{run}.json"
        with timers() as spent:
            t = time.perf_counter()
            summary = run_eval(eval_set, [cfg], RunOptions(output=out, progress=False, mlflow=False, cache_root=cache,
                                                           metrics=METRICS), echo=lambda m: None)
            wall = time.perf_counter() - t
        summaries.append(summary)
        label = "cold indexes" if run == 0 else "warm"
        rows.append((label, wall, dict(spent)))
        print(f"{label}: {wall:.1f} s", file=sys.stderr, flush=True)
    labels = list(dict.fromkeys(k for _, _, s in rows for k in s))
    header = ["", *[f"{label} (s)" for label, _, _ in rows], *[f"{label} share" for label, _, _ in rows]]
    body = [["wall time", *[f"{w:.1f}" for _, w, _ in rows], *["100%" for _ in rows]]]
    for k in labels:
        body.append([k, *[f"{s.get(k, 0.0):.1f}" for _, _, s in rows],
                     *[f"{100 * s.get(k, 0.0) / w:.0f}%" for _, w, s in rows]])
    loop = [w - sum(s.get(k, 0.0) for k in ("build/load indexes (graph build)", "prepare: register the questions",
                                            "records finish (ordered rewrite)")) for _, w, s in rows]
    body.append(["query loop (wall - build - prepare - finish)", *[f"{x:.1f}" for x in loop],
                 *[f"{100 * x / w:.0f}%" for x, (_, w, _) in zip(loop, rows)]])
    v = summaries[-1].variants[cfg.name]
    n = args.queries
    print(f"End to end: {n:,} queries over {args.passages:,} passages, one variant (MiniLM {args.index} top 100 + "
          f"BM25 top 100, RRF), MLflow off, {args.threads} thread(s); corpus generation {gen_s:.0f} s and the "
          "embedding warm-up not counted\n")
    print(table(header, body, args.markdown))
    print(f"\nper query (warm): {1000 * rows[-1][1] / n:.1f} ms; metrics: "
          + ", ".join(f"{m} {v.metrics[m]:.4f}" for m in METRICS))
    same = all(s.variants[cfg.name].metrics == v.metrics for s in summaries)
    print(f"metrics identical in every run: {same}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
