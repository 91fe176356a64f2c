#!/usr/bin/env python
"""Harness overhead: ``run_eval`` vs a minimal hand-written loop doing the same model and index calls.

    python benchmarks/overhead.py                       # 300 queries, cold and warm query vectors, 2 repeats
    python benchmarks/overhead.py --modes cold --repeats 3 --markdown

What it does:

1. Looks for SciFact in ``../shared/datasets/scifact/`` (beside the repository). Absent:
   prints why and exits 0. Imports it with ``import_beir`` into ``--work-dir`` (default
   ``/tmp/evalkit-overhead``), never inside the repository (CC BY-NC 2.0).
2. One variant, ``benchmarks/configs/scifact_hybrid_rrf.yaml``: MiniLM dense (faiss
   flat, top 100) + BM25 (Anserini-like, top 100), RRF k=60, top 100; 300 queries.
   The corpus side is warm on both sides: the faiss index and the BM25 tokens come from
   the master cache (``--master-cache``, default ``/tmp/evalkit-scifact/cache``, filled
   by ``benchmarks/scifact.py``).
3. **evalkit**: ``run_eval`` (MLflow off, no progress bar, 1 worker) on a scratch copy of
   the master cache. Timed from the call to its return: it loads the corpus, MiniLM and
   both indexes, runs the graph per query (state copies, trace, memo keys), scores every
   query (5 metrics), and writes ``per_query.jsonl`` and the summary.
4. **hand loop**: the same work written directly, in the same process: load MiniLM
   with sentence-transformers, read the same ``index.faiss`` / ``ids.json``, load the
   same bm25s score matrix (memory-mapped) that evalkit built, then per query: encode
   it, faiss top 110, BM25 scores of every passage (``bm25s.BM25.get_scores``) and top
   100 of the positive ones, RRF k=60 (one query at a time, as evalkit does),
   nDCG@10 and recall@100 at the end. It checks that its top-100 documents equal
   evalkit's for every query.
5. Modes (``--modes``): ``cold``: no query vector is cached, so both sides encode all 300
   queries with MiniLM (evalkit's cache copy has its query vectors deleted); ``warm``:
   evalkit finds the query vectors in its embedding cache (sqlite) and the hand loop
   takes them from a dict in memory filled before the clock starts (so evalkit's sqlite
   look-ups count as overhead). Each (mode, side) runs ``--repeats`` times, interleaved.
6. Prints the wall times (total and the query phase without model / index loading),
   and overhead = (evalkit - loop) / evalkit, from the medians.

Target (issue 7): overhead < 15% of wall time.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_common import (
    DATA_DIR,
    MASTER_CACHE,
    REPO,
    Work,
    _fix_threads,
    _inside_repo,
    _quiet_env,
    copy_cache,
    import_set,
    scifact_missing,
    skip_message,
    table,
)

METRICS = ("recall@20", "hit@5", "mrr@10", "ndcg@10", "recall@100")
CONFIG = REPO / "benchmarks" / "configs" / "scifact_hybrid_rrf.yaml"
TOP_K, RRF_K = 100, 60


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path, default=DATA_DIR, help=f"SciFact files (default: {DATA_DIR}).")
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-overhead"),
                   help="Scratch folder outside the repository (default: /tmp/evalkit-overhead).")
    p.add_argument("--master-cache", type=Path, default=MASTER_CACHE,
                   help=f"Cache with the SciFact corpus indexes (default: {MASTER_CACHE}).")
    p.add_argument("--modes", default="cold,warm", help="Query-vector modes: cold, warm or both (default).")
    p.add_argument("--repeats", type=int, default=2, help="Runs per (mode, side), interleaved (default: 2).")
    p.add_argument("--queries", type=int, default=0, help="Use only the first N queries (default: all 300).")
    p.add_argument("--threads", type=int, default=1, help="torch and faiss threads (default: 1).")
    p.add_argument("--markdown", action="store_true", help="Print tables as Markdown.")
    p.add_argument("--json", type=Path, help="Also write the figures to this JSON file.")
    return p.parse_args(argv)


def index_folders(summary_index: dict[str, Any]) -> tuple[str, str]:
    """Names of the dense and BM25 index folders an evalkit run used (same names in any cache copy)."""
    return Path(summary_index["dense"]["path"]).name, Path(summary_index["bm25"]["path"]).name


def hand_loop(eval_set: Any, cache: Path, folders: tuple[str, str],
              query_vecs: dict[str, np.ndarray] | None) -> dict[str, Any]:
    """The minimal loop (see the module docstring); ``query_vecs`` None = encode every query."""
    import bm25s
    import faiss
    from sentence_transformers import SentenceTransformer

    from evalkit.models.embedders import _minilm_path
    from evalkit.text.tokenize import Tokenizer

    t0 = time.perf_counter()
    dense_dir, bm25_dir = (cache / "indexes" / name for name in folders)
    model = None
    if query_vecs is None:
        model = SentenceTransformer(str(_minilm_path()), device="cpu", local_files_only=True)
    index = faiss.read_index(str(dense_dir / "index.faiss"))
    dense_ids = json.loads((dense_dir / "ids.json").read_text())
    bm25_meta = json.loads((bm25_dir / "meta.json").read_text())
    bm25 = bm25s.BM25.load(bm25_dir, mmap=True)
    bm25_ids = dense_ids if len(dense_ids) == bm25_meta["n"] else None
    tokenizer = Tokenizer("en", True, True)
    if bm25_ids is None:
        raise SystemExit(f"BM25 index {bm25_dir} ({bm25_meta.get('n')}) and dense index differ in size")
    # chunking "document": one passage per abstract, passage id "<doc>" or "<doc>#0"
    doc_of = {pid: pid.split("#", 1)[0] for pid in dense_ids}
    setup = time.perf_counter() - t0
    t1 = time.perf_counter()
    rankings: dict[str, list[str]] = {}
    for rec in eval_set.records:
        if model is not None:
            vec = model.encode([rec.question], normalize_embeddings=True, convert_to_numpy=True,
                               show_progress_bar=False).astype(np.float32)
        else:
            vec = query_vecs[rec.id][None, :]
        scores, idx = index.search(vec, TOP_K + 10)
        dense = sorted(((dense_ids[i], float(s)) for s, i in zip(scores[0], idx[0]) if i >= 0),
                       key=lambda h: (-h[1], h[0]))[:TOP_K]
        terms = [bm25.vocab_dict[t] for t in tokenizer(rec.question) if t in bm25.vocab_dict]
        bscores = bm25.get_scores_from_ids(terms) if terms else np.zeros(len(bm25_ids))
        pos = np.flatnonzero(bscores > 0)
        lexical = sorted(((bm25_ids[i], float(bscores[i])) for i in pos), key=lambda h: (-h[1], h[0]))[:TOP_K]
        fused: dict[str, list[float]] = {}
        for ranking in (dense, lexical):
            for rank, (pid, _) in enumerate(ranking, start=1):
                fused.setdefault(pid, []).append(1.0 / (RRF_K + rank))
        order = sorted(((pid, math.fsum(v)) for pid, v in fused.items()), key=lambda h: (-h[1], h[0]))[:TOP_K]
        docs = list(dict.fromkeys(doc_of[pid] for pid, _ in order))
        rankings[rec.id] = docs
    ndcg, recall = [], []
    for rec in eval_set.records:
        gold = set(rec.relevant_doc_ids)
        docs = rankings[rec.id]
        dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(docs[:10]) if d in gold)
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), 10)))
        ndcg.append(dcg / ideal if ideal else 0.0)
        recall.append(len(gold & set(docs[:100])) / len(gold) if gold else 0.0)
    queries = time.perf_counter() - t1
    return {"wall_s": setup + queries, "setup_s": setup, "query_s": queries, "rankings": rankings,
            "ndcg@10": statistics.fmean(ndcg), "recall@100": statistics.fmean(recall)}


def evalkit_run(eval_set: Any, config: Any, cache: Path, output: Path) -> dict[str, Any]:
    from evalkit.run.runner import RunOptions, run_eval

    options = RunOptions(output=output, metrics=METRICS, mlflow=False, progress=False, cache_root=cache)
    with Work.counting() as w:
        t0 = time.perf_counter()
        summary = run_eval(eval_set, [config], options, echo=lambda m: print(m, file=sys.stderr))
        wall = time.perf_counter() - t0
    v = next(iter(summary.variants.values()))
    rows = [json.loads(line) for line in
            (output.with_suffix("") / config.name / "per_query.jsonl").read_text(encoding="utf-8").splitlines()]
    return {"wall_s": wall, "setup_s": v.timing.get("build_s", 0.0),
            "query_s": v.seconds - v.timing.get("build_s", 0.0), "counters": dict(w.c),
            "rankings": {r["query_id"]: [d["doc_id"] for d in r["retrieved"]] for r in rows},
            "ndcg@10": v.metrics["ndcg@10"], "recall@100": v.metrics["recall@100"], "index": v.index}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = scifact_missing(args.data_dir)
    if missing:
        print(skip_message("overhead benchmark", args.data_dir, missing))
        return 0
    if _inside_repo(args.work_dir):
        print(f"error: --work-dir {args.work_dir} is inside the repository; pick a folder outside", file=sys.stderr)
        return 2
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not set(modes) <= {"cold", "warm"}:
        print("error: --modes takes cold and/or warm", file=sys.stderr)
        return 2
    _quiet_env(args.threads)
    _fix_threads(args.threads)
    from evalkit.graph import load_graph_config
    from evalkit.models.embedders import ModelSpec, load_embedder

    eval_set = import_set(args.data_dir, "scifact", args.work_dir,
                          "BEIR SciFact test split (CC BY-NC 2.0; scratch import by benchmarks/overhead.py)")
    if args.queries:
        eval_set.records = eval_set.records[:args.queries]
    config = load_graph_config(CONFIG)
    # warm-up outside the timings: imports, weights in the page cache, master cache complete,
    # and the query vectors the warm hand loop reads from memory
    model = load_embedder(ModelSpec(name="minilm"))
    qvecs = {r.id: model.encode_queries([r.question])[0] for r in eval_set.records}
    warm = evalkit_run(eval_set, config, args.master_cache, args.work_dir / "results" / "warmup.json")
    folders = index_folders(warm["index"])
    del model

    runs: list[dict[str, Any]] = []
    for rep in range(args.repeats):
        for mode in modes:
            sides = ("loop", "evalkit") if rep % 2 == 0 else ("evalkit", "loop")
            for side in sides:
                drop = ("query",) if mode == "cold" else ()
                cache = copy_cache(args.master_cache, args.work_dir / "cache-run", drop_roles=drop)
                if side == "loop":
                    r = hand_loop(eval_set, cache, folders, None if mode == "cold" else qvecs)
                else:
                    r = evalkit_run(eval_set, config, cache, args.work_dir / "results" / f"{mode}_{rep}.json")
                r.update(mode=mode, side=side, repeat=rep)
                runs.append(r)
                print(f"{mode} {side} rep {rep}: {r['wall_s']:.1f} s", file=sys.stderr)

    header = ["query vectors", "side", "runs", "wall s (median)", "setup s", "query phase s", "ms/query",
              "queries encoded", "nDCG@10", "R@100"]
    rows, overhead = [], {}
    n_q = len(eval_set.records)
    for mode in modes:
        med: dict[str, dict[str, float]] = {}
        for side in ("loop", "evalkit"):
            rs = [r for r in runs if r["mode"] == mode and r["side"] == side]
            med[side] = {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "setup_s", "query_s")}
            enc = rs[0].get("counters", {}).get("encoded_query", n_q if mode == "cold" else 0)
            rows.append([mode, side, ", ".join(f"{r['wall_s']:.1f}" for r in rs), f"{med[side]['wall_s']:.1f}",
                         f"{med[side]['setup_s']:.1f}", f"{med[side]['query_s']:.1f}",
                         f"{1000 * med[side]['query_s'] / n_q:.1f}", str(enc), f"{rs[0]['ndcg@10']:.4f}",
                         f"{rs[0]['recall@100']:.4f}"])
        overhead[mode] = {k: (med["evalkit"][k] - med["loop"][k]) / med["evalkit"][k] for k in ("wall_s", "query_s")}
    ref = next(r for r in runs if r["side"] == "evalkit")["rankings"]
    same = all(r["rankings"] == ref for r in runs)
    print(f"Harness overhead: SciFact test ({n_q} queries), scifact_hybrid_rrf (MiniLM + BM25, RRF k=60), "
          f"corpus indexes warm; MLflow off; {args.threads} torch/faiss thread(s), 1 query worker; sides "
          "interleaved in one process\n")
    print(table(header, rows, args.markdown))
    print(f"\nevery run's top-100 document ranking identical to evalkit's, every query: {'yes' if same else 'NO'}")
    for mode in modes:
        o = overhead[mode]
        print(f"{mode} query vectors: overhead {100 * o['wall_s']:.1f}% of evalkit's wall time "
              f"({100 * o['query_s']:.1f}% of the query phase); target < 15%: "
              f"{'met' if o['wall_s'] < 0.15 else 'MISSED'}")
    if args.json:
        args.json.write_text(json.dumps([{k: v for k, v in r.items() if k not in ("rankings", "index")} for r in runs],
                                        indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
