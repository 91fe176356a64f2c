#!/usr/bin/env python
"""Cold vs warm cache: the same evalkit run twice, first with an empty cache, then with its own cache.

    python benchmarks/cold_warm.py                        # 100 queries, 500 abstracts, 4 variants
    python benchmarks/cold_warm.py --cli --markdown       # also a warm `evalkit run` in a new process

What it does:

1. Looks for SciFact in ``../shared/datasets/scifact/`` (beside the repository). Absent:
   prints why and exits 0.
2. Writes a SciFact **subset** as BEIR files into ``--work-dir`` (default
   ``/tmp/evalkit-cold-warm``, never inside the repository; SciFact is CC BY-NC 2.0):
   the first ``--queries`` test queries (default 100) and ``--docs`` abstracts (default
   500): every gold document of those queries, topped up with other abstracts in corpus
   order. Encoding all 5,183 abstracts cold takes ~17 min here, hence the subset.
   Imports it with ``import_beir``.
3. Loads the four ``benchmarks/configs/scifact_*.yaml`` variants (BM25, MiniLM, RRF
   hybrid, weighted hybrid) and, before anything is timed, imports torch and
   sentence-transformers and loads MiniLM once (so the cold run does not also pay for
   Python imports the warm run would not).
4. Deletes ``WORK_DIR/cache`` and calls ``run_eval`` (MLflow off): the **cold** run
   encodes every abstract and query with MiniLM, tokenises the corpus for BM25 and
   builds and saves both indexes. Then calls ``run_eval`` again, same inputs, same
   cache folder: the **warm** run. With ``--cli`` it then also runs ``evalkit run``
   (``--no-mlflow``) warm in a fresh process on the same cache (``EVALKIT_CACHE``), which
   adds Python start-up and imports (torch, sentence-transformers) to the warm side.
5. Prints wall time, model work (calls, texts encoded), BM25 tokenisations, and checks
   that every summary metric of every variant is identical (exact float equality) and
   that every per-query ranking is identical (``per_query.jsonl``).

Target (issue 7): warm >= 20x faster than cold. Thread counts: ``--threads`` (default 1).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_common import (
    DATA_DIR,
    REPO,
    Work,
    _fix_threads,
    _inside_repo,
    _quiet_env,
    import_set,
    scifact_missing,
    scifact_subset,
    skip_message,
    summary_numbers,
    table,
)

VARIANTS = ("scifact_bm25", "scifact_minilm", "scifact_hybrid_rrf", "scifact_hybrid_weighted")
METRICS = ("recall@20", "hit@5", "mrr@10", "ndcg@10", "recall@100")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path, default=DATA_DIR, help=f"SciFact files (default: {DATA_DIR}).")
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-cold-warm"),
                   help="Scratch folder outside the repository (default: /tmp/evalkit-cold-warm).")
    p.add_argument("--queries", type=int, default=100, help="Test queries in the subset (default: 100).")
    p.add_argument("--docs", type=int, default=500, help="Abstracts in the subset (default: 500).")
    p.add_argument("--threads", type=int, default=1, help="torch and faiss threads (default: 1).")
    p.add_argument("--cli", action="store_true", help="Also time a warm `evalkit run` in a fresh process.")
    p.add_argument("--markdown", action="store_true", help="Print tables as Markdown.")
    p.add_argument("--json", type=Path, help="Also write the figures to this JSON file.")
    return p.parse_args(argv)


def rankings(output: Path) -> dict[str, dict[str, Any]]:
    """Every variant's per-query rankings, from the run's ``per_query.jsonl`` files."""
    out: dict[str, dict[str, Any]] = {}
    for f in sorted(output.with_suffix("").glob("*/per_query.jsonl")):
        rows = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line]
        out[f.parent.name] = {r["query_id"]: (r.get("retrieved"), r.get("reranked")) for r in rows}
    return out


def in_process(eval_set: Any, configs: list[Any], cache: Path, output: Path) -> dict[str, Any]:
    from evalkit.index.bm25 import Tokenizer
    from evalkit.run.runner import RunOptions, run_eval

    options = RunOptions(output=output, metrics=METRICS, mlflow=False, progress=False, cache_root=cache)
    calls = {"n": 0}
    orig = Tokenizer.__call__

    def counted(self: Any, text: str) -> Any:
        calls["n"] += 1
        return orig(self, text)

    Tokenizer.__call__ = counted
    try:
        with Work.counting() as w:
            t0 = time.perf_counter()
            summary = run_eval(eval_set, configs, options, echo=lambda m: print(m, file=sys.stderr))
            wall = time.perf_counter() - t0
    finally:
        Tokenizer.__call__ = orig
    return {"wall_s": wall, "counters": dict(w.c), "tokenize_calls": calls["n"],
            "build_s": {n: v.timing.get("build_s", 0.0) for n, v in summary.variants.items()},
            "variant_s": {n: v.seconds for n, v in summary.variants.items()},
            "numbers": summary_numbers(summary), "rankings": rankings(output),
            "failed": sum(v.n_failed for v in summary.variants.values())}


def cli_run(set_ref: str, configs: list[Path], cache: Path, output: Path, threads: int) -> float:
    env = {**os.environ, "EVALKIT_CACHE": str(cache), "OMP_NUM_THREADS": str(threads),
           "MKL_NUM_THREADS": str(threads)}
    cmd = [str(Path(sys.executable).with_name("evalkit")), "run", "--eval-set", set_ref, "--output", str(output),
           "--no-mlflow", "--no-progress"]
    for c in configs:
        cmd += ["--graph-config", str(c)]
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = scifact_missing(args.data_dir)
    if missing:
        print(skip_message("cold/warm benchmark", args.data_dir, missing))
        return 0
    if _inside_repo(args.work_dir):
        print(f"error: --work-dir {args.work_dir} is inside the repository; pick a folder outside", file=sys.stderr)
        return 2
    _quiet_env(args.threads)
    _fix_threads(args.threads)
    files = scifact_subset(args.data_dir, args.work_dir / "subset", args.queries, args.docs)
    eval_set = import_set(files, "scifact_subset", args.work_dir,
                          f"SciFact subset ({args.queries} queries, {args.docs} abstracts; CC BY-NC 2.0; scratch "
                          "import by benchmarks/cold_warm.py)")
    from evalkit.graph import load_graph_config

    names = list(VARIANTS)
    configs = [load_graph_config(REPO / "benchmarks" / "configs" / f"{n}.yaml") for n in names]
    from evalkit.models.embedders import ModelSpec, load_embedder

    load_embedder(ModelSpec(name="minilm"))  # imports + weights in the page cache, outside the timings
    cache = args.work_dir / "cache"
    if cache.exists():
        shutil.rmtree(cache)
    n_docs = len(eval_set.corpus) if eval_set.corpus else args.docs
    print(f"subset: {len(eval_set.records)} queries, {n_docs} abstracts, eval set sha256 {eval_set.sha256[:12]}",
          file=sys.stderr)
    cold = in_process(eval_set, configs, cache, args.work_dir / "results" / "cold.json")
    warm = in_process(eval_set, configs, cache, args.work_dir / "results" / "warm.json")
    runs = {"cold (in process)": cold, "warm (in process)": warm}

    header = ["run", "wall s", "speed-up", "MiniLM calls", "passages encoded", "queries encoded",
              "BM25 tokenisations", "build s (bm25 / minilm / rrf / weighted)"]
    rows = []
    for name, r in runs.items():
        c = r["counters"]
        rows.append([name, f"{r['wall_s']:.1f}", f"{cold['wall_s'] / r['wall_s']:.1f}x",
                     str(c.get("model_calls_query", 0) + c.get("model_calls_passage", 0)),
                     str(c.get("encoded_passage", 0)), str(c.get("encoded_query", 0)), str(r["tokenize_calls"]),
                     " / ".join(f"{r['build_s'][n]:.1f}" for n in names)])
    cli: dict[str, float] = {}
    if args.cli:  # warm only: a cold CLI run would encode the subset a second time
        paths = [REPO / "benchmarks" / "configs" / f"{n}.yaml" for n in names]
        cli["warm"] = cli_run(f"{eval_set.path}@v1", paths, cache, args.work_dir / "results" / "cli_warm.json",
                              args.threads)
        rows.append(["warm (`evalkit run`, new process)", f"{cli['warm']:.1f}", f"{cold['wall_s'] / cli['warm']:.1f}x",
                     "-", "-", "-", "-", "-"])
    same_numbers = cold["numbers"] == warm["numbers"]
    same_rankings = cold["rankings"] == warm["rankings"] and bool(cold["rankings"])
    ratio = cold["wall_s"] / warm["wall_s"]
    print(f"Cold vs warm cache: SciFact subset ({len(eval_set.records)} queries, {n_docs} abstracts), variants "
          f"{', '.join(names)}; MLflow off; {args.threads} torch/faiss thread(s), 1 query worker\n")
    print(table(header, rows, args.markdown))
    print("\nsummary metrics identical (exact float equality, every variant and metric): "
          f"{'yes' if same_numbers else 'NO'}; per-query rankings identical: {'yes' if same_rankings else 'NO'}")
    for n in names:
        print(f"  {n}: " + ", ".join(f"{m} {warm['numbers'][n].get(m, float('nan')):.6f}" for m in METRICS))
    print(f"warm is {ratio:.1f}x faster than cold in process; target >= 20x: {'met' if ratio >= 20 else 'MISSED'}")
    if cli:
        print(f"`evalkit run` warm in a new process (Python start-up and imports included) vs the in-process cold "
              f"run: {cold['wall_s'] / cli['warm']:.1f}x")
    if args.json:
        keep = {k: {kk: vv for kk, vv in v.items() if kk != "rankings"} for k, v in runs.items()}
        args.json.write_text(json.dumps({"runs": keep, "cli": cli, "same_numbers": same_numbers,
                                         "same_rankings": same_rankings}, indent=1) + "\n")
    return 0 if same_numbers else 1


if __name__ == "__main__":
    sys.exit(main())
