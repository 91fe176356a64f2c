#!/usr/bin/env python
"""BM25 on real data: evalkit's bm25s index against the rank-bm25 implementation it replaced.

    python benchmarks/bm25_parity.py                 # SciFact BM25 + HotpotQA-100 BM25 (+ hybrid with e5)
    python benchmarks/bm25_parity.py --no-hybrid     # BM25 variants only (no e5 encoding)

What it does:

1. Imports SciFact (BEIR test split, ``../shared/datasets/scifact``) and HotpotQA-100
   (``../shared/datasets/hotpotqa_100``) into ``--work-dir`` (outside the repository); a
   missing data set is skipped with a message.
2. Runs each variant through ``run_eval`` twice, MLflow off, BM25 built afresh each time
   (the dense index and embedding cache are shared, so e5 encodes HotpotQA once):
   - ``bm25s``: evalkit as it is (bm25s score matrix, MaxScore top-k, prepare batching);
   - ``rank-bm25``: ``evalkit.index.bm25.build_or_load_bm25`` replaced, inside this script
     only, by the pre-bm25s implementation: rank-bm25's ``BM25Okapi`` with Lucene's IDF,
     every passage scored per query term, queries searched one at a time.
3. Prints each variant's metrics under both, the number of per-query records that differ
   (rankings, scores, metrics, traces without wall-clock fields) and the BM25 query time.

Variants: SciFact ``benchmarks/configs/scifact_bm25.yaml`` (nDCG@10 was 0.6829 with rank-bm25);
HotpotQA: BM25 alone (``en`` tokenizer, one passage per document) and, unless ``--no-hybrid``,
``hybrid_rrf`` as ``benchmarks/graphrag.py`` runs it (e5 + BM25, RRF).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scale_common import DATA_DIR, REPO, _quiet_env, import_set, scifact_missing, table

HOTPOT_DIR = REPO.parent / "shared" / "datasets" / "hotpotqa_100"
METRICS = ("ndcg@10", "recall@100", "recall@20", "hit@5", "mrr@10")
TIMING = ("duration_ms", "elapsed_ms", "started_at")


class ReferenceBM25:
    """The BM25 index evalkit had before bm25s: rank-bm25, every passage scored per query term."""

    def __init__(self, texts: list[str], ids: list[str], tokenizer: Any, key_meta: dict[str, Any],
                 cache_root: Path, k1: float = 0.9, b: float = 0.4, idf: str = "lucene"):
        from rank_bm25 import BM25Okapi

        class Lucene(BM25Okapi):
            def _calc_idf(self, nd: dict[str, int]) -> None:
                for word, freq in nd.items():
                    self.idf[word] = math.log(1.0 + (self.corpus_size - freq + 0.5) / (freq + 0.5))

        self.ids, self.tokenizer = ids, tokenizer
        self.meta = {**key_meta, "tokenizer": tokenizer.identity, "n": len(ids), "k1": k1, "b": b, "idf": idf,
                     "implementation": "rank-bm25 (reference)"}
        self._bm25 = (Lucene if idf == "lucene" else BM25Okapi)([tokenizer(t) for t in texts], k1=k1, b=b)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        terms = self.tokenizer(query)
        if not terms:
            return []
        scores = np.asarray(self._bm25.get_scores(terms), dtype=np.float64)
        hits = sorted(((self.ids[i], float(scores[i])) for i in np.flatnonzero(scores > 0)),
                      key=lambda h: (-h[1], h[0]))
        return hits[:k]

    def search_many(self, queries: list[str], k: int) -> list[list[tuple[str, float]]]:
        return [self.search(q, k) for q in queries]


def comparable(row: Any) -> dict[str, Any]:
    d = row.to_dict()
    d["trace"] = [{k: v for k, v in ev.items() if k not in TIMING} for ev in d["trace"]]
    return d


def run(eval_set: Any, configs: list[Any], out: Path, cache: Path, reference: bool) -> tuple[Any, dict, float]:
    import evalkit.index.bm25 as bm25mod
    from evalkit.index.bm25 import BM25Index
    from evalkit.run.runner import RunOptions, run_eval
    from evalkit.runstore import read_results

    saved = bm25mod.build_or_load_bm25
    seconds = [0.0]
    cls = ReferenceBM25 if reference else BM25Index
    real_search = cls.search

    def timed(self: Any, q: str, k: int) -> Any:
        t = time.perf_counter()
        try:
            return real_search(self, q, k)
        finally:
            seconds[0] += time.perf_counter() - t

    cls.search = timed
    if reference:
        bm25mod.build_or_load_bm25 = ReferenceBM25
    try:
        summary = run_eval(eval_set, configs, RunOptions(output=out, progress=False, mlflow=False, cache_root=cache,
                                                         metrics=METRICS), echo=lambda m: None)
    finally:
        bm25mod.build_or_load_bm25, cls.search = saved, real_search
    rows = {c.name: [comparable(r) for r in read_results(out.with_suffix("") / c.name / "per_query.jsonl")]
            for c in configs}
    return summary, rows, seconds[0]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-bm25-parity"))
    p.add_argument("--no-hybrid", action="store_true", help="Skip HotpotQA hybrid_rrf (needs e5 encoding).")
    p.add_argument("--threads", type=int, default=1, help="Model and faiss threads (default: 1).")
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    _quiet_env(args.threads)
    os.environ.setdefault("EVALKIT_THREADS", str(args.threads))
    import shutil

    from evalkit.evalsets import load_eval_set
    from evalkit.graph import load_graph_config

    sets: list[tuple[str, Any, list[Any]]] = []
    if scifact_missing(DATA_DIR):
        print(f"SciFact skipped: {DATA_DIR} lacks its files (see the scifact SOURCE.md of the shared datasets)")
    else:
        es = import_set(DATA_DIR, "scifact", args.work_dir, "BEIR SciFact test (scratch import, bm25_parity.py)")
        sets.append(("SciFact", es, [load_graph_config(REPO / "benchmarks" / "configs" / "scifact_bm25.yaml")]))
    from evalkit.importers.hotpotqa import FILES as HOTPOT_FILES

    if any(not (HOTPOT_DIR / f).is_file() for f in HOTPOT_FILES):
        print(f"HotpotQA-100 skipped: {HOTPOT_DIR} lacks its files (see hotpotqa_100/SOURCE.md)")
    else:
        from evalkit.graph import config_from_dict
        from evalkit.importers.hotpotqa import import_hotpotqa

        path = import_hotpotqa(HOTPOT_DIR, args.work_dir / "hotpotqa")
        configs = [config_from_dict({"name": "hotpot_bm25", "chunking": {"method": "document", "prepend_title": True},
                                     "nodes": {"retrieve": {"type": "retrieve",
                                                            "params": {"bm25": {"tokenizer": "en"}, "top_k": 100}}},
                                     "edges": {"start": "retrieve", "retrieve": "end"}})]
        if not args.no_hybrid:
            sys.path.insert(0, str(REPO / "benchmarks"))
            from graphrag import hotpot_configs

            configs += [c for c in hotpot_configs() if c.name == "hybrid_rrf"]
        sets.append(("HotpotQA-100", load_eval_set(f"{path}@v1"), configs))

    import faiss

    faiss.omp_set_num_threads(args.threads)
    header = ["data set", "variant", "implementation", *METRICS, "records differing", "BM25 search s"]
    lines = []
    for label, es, configs in sets:
        results = {}
        for impl, reference in (("rank-bm25", True), ("bm25s", False)):
            cache = args.work_dir / "cache"
            for folder in (cache / "indexes").glob("bm25*"):
                shutil.rmtree(folder)  # BM25 built afresh by each implementation; dense index and vectors kept
            print(f"{label}: running {impl} ...", file=sys.stderr, flush=True)
            results[impl] = run(es, configs, args.work_dir / "results" / f"{label}-{impl}.json", cache, reference)
        for c in configs:
            ref_rows, new_rows = results["rank-bm25"][1][c.name], results["bm25s"][1][c.name]
            differing = sum(a != b for a, b in zip(ref_rows, new_rows)) + abs(len(ref_rows) - len(new_rows))
            for impl in ("rank-bm25", "bm25s"):
                m = results[impl][0].variants[c.name].metrics
                lines.append([label, c.name, impl, *[f"{m[x]:.4f}" for x in METRICS],
                              f"{differing} of {len(ref_rows)}" if impl == "bm25s" else "-",
                              f"{results[impl][2]:.2f}"])
    print("BM25 parity: every per-query record of the bm25s implementation against rank-bm25 "
          f"({args.threads} thread(s); records compared without wall-clock fields)\n")
    print(table(header, lines, args.markdown))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
