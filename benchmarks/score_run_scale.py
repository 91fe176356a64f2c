#!/usr/bin/env python
"""``evalkit score --run`` against pytrec_eval on a 10,000-query x 100-document TREC run (issue 34).

    python benchmarks/score_run_scale.py                         # 10k x 100, median of 3
    python benchmarks/score_run_scale.py --queries 1000 --repeats 1

What it does:

1. Generates (seeded, :func:`make_files`) a corpus of ``--docs`` one-line documents, an
   eval set of ``--queries`` questions with 1-3 gold documents each (frozen, v1), a
   qrels file of the same gold documents, and a TREC run of ``--depth`` documents per
   query with distinct scores (a gold document lands in a query's run half of the time,
   at a random rank), under ``--work-dir``.
2. Runs, each ``--repeats`` times as a fresh process: ``evalkit score --run RUN --eval-set
   SET --no-mlflow`` (the CLI of the evalkit this interpreter imports), and a pytrec_eval
   script that reads the qrels and the run and computes the same four default metrics
   (recall@20 = ``recall_20``, hit@5 = ``success_5``, ndcg@10 = ``ndcg_cut_10``, mrr@10 =
   ``recip_rank`` where the first relevant document is in the top 10, else 0).
3. Prints per tool the median CPU seconds (user + system of the child, from ``wait4``),
   wall seconds and peak RSS of the whole process, the ratio, and whether the four means
   agree to 4 decimals (and how many per-query values differ by more than 1e-9).

MLflow is off (``--no-mlflow``) in both: pytrec_eval writes nothing; the per-query
records, summary JSON and traces inside the records are written by evalkit and counted.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TARGET_CPU_RATIO, TARGET_RSS_MB = 1.5, 400.0
PYTREC_MEASURES = {"recall_20": "recall@20", "success_5": "hit@5", "ndcg_cut_10": "ndcg@10", "recip_rank": "mrr@10"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--depth", type=int, default=100, help="Documents per query in the run (default: 100).")
    p.add_argument("--docs", type=int, default=50_000, help="Corpus size (default: 50000).")
    p.add_argument("--repeats", type=int, default=3, help="Processes per tool; the median is reported (default: 3).")
    p.add_argument("--seed", type=int, default=34)
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-score-scale"))
    p.add_argument("--compile-each-run", action="store_true",
                   help="Let evalkit's modules be compiled at every start, as with PYTHONDONTWRITEBYTECODE=1 (set on "
                        "some machines; ~0.1 s). Default: compiled once by an untimed run, as on a user's second run.")
    return p.parse_args(argv)


def make_files(folder: Path, n_queries: int, depth: int, n_docs: int, seed: int,
               run_seed: int | None = None) -> dict[str, Path]:
    """Corpus, frozen eval set, qrels and TREC run under ``folder`` (rewritten only when the sizes change);
    ``run_seed``: draw the run from its own seed (another system's run over the same eval set)."""
    from evalkit.evalsets import freeze

    tag = f"{n_queries}x{depth}-{n_docs}-{seed}" + (f"-run{run_seed}" if run_seed is not None else "")
    paths = {k: folder / tag / n for k, n in (("corpus", "corpus.jsonl"), ("set", "set.jsonl"),
                                                ("qrels", "qrels.txt"), ("run", "run.trec"))}
    if all(p.is_file() for p in paths.values()) and (folder / tag / "set.manifest.json").is_file():
        return paths
    (folder / tag).mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    run_rng = rng if run_seed is None else np.random.default_rng(run_seed)
    width = len(str(n_docs))
    doc = [f"d{i:0{width}d}" for i in range(n_docs)]
    paths["corpus"].write_text("".join(json.dumps({"id": d, "title": "", "text": f"passage {d}"}) + "\n"
                                       for d in doc), encoding="utf-8")
    set_lines, qrels_lines, run_lines = [], [], []
    for q in range(n_queries):
        qid = f"q{q:05d}"
        ranked = run_rng.choice(n_docs, size=depth, replace=False)
        gold = list(dict.fromkeys(int(g) for g in rng.choice(n_docs, size=int(rng.integers(1, 4)), replace=False)))
        if run_rng.random() < 0.5 and gold[0] not in ranked:  # a gold document in the run, at a random rank
            ranked[int(run_rng.integers(0, depth))] = gold[0]
        set_lines.append(json.dumps({"id": qid, "question": f"question {q}", "relevant_doc_ids": [doc[g] for g in gold],
                                     "type": "single", "lang": "en"}))
        qrels_lines += [f"{qid} 0 {doc[g]} 1" for g in gold]
        scores = np.sort(run_rng.random(depth))[::-1] * 30
        run_lines += [f"{qid} Q0 {doc[d]} {r + 1} {s:.6f} bench" for r, (d, s) in enumerate(zip(ranked, scores))]
    paths["set"].write_text("\n".join(set_lines) + "\n", encoding="utf-8")
    paths["qrels"].write_text("\n".join(qrels_lines) + "\n", encoding="utf-8")
    paths["run"].write_text("\n".join(run_lines) + "\n", encoding="utf-8")
    freeze(paths["set"], corpus=str(paths["corpus"]))
    return paths


PYTREC_SCRIPT = """
import json, sys, pytrec_eval
qrels, run = {}, {}
for line in open(sys.argv[1]):
    q, _, d, r = line.split()
    qrels.setdefault(q, {})[d] = int(r)
for line in open(sys.argv[2]):
    q, _, d, _, s, _ = line.split()
    run.setdefault(q, {})[d] = float(s)
res = pytrec_eval.RelevanceEvaluator(qrels, {"recall", "success", "ndcg_cut", "recip_rank"}).evaluate(run)
out = {}
for q, m in res.items():
    rr = m["recip_rank"]
    out[q] = {"recall@20": m["recall_20"], "hit@5": m["success_5"], "ndcg@10": m["ndcg_cut_10"],
              "mrr@10": rr if rr >= 0.1 - 1e-12 else 0.0}
json.dump(out, open(sys.argv[3], "w"))
"""


def timed_process(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Run ``cmd``; its CPU seconds (user + system), wall seconds and peak RSS in MB, from ``wait4``."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed:\n{proc.stderr.read().decode()[-2000:]}")
    return {"cpu": usage.ru_utime + usage.ru_stime, "wall": wall, "rss_mb": usage.ru_maxrss / 1024.0}


def evalkit_cmd(paths: dict[str, Path], out: Path) -> list[str]:
    return [sys.executable, "-c", "import sys; from evalkit.cli import main; sys.exit(main())", "score",
            "--run", str(paths["run"]), "--eval-set", f"{paths['set']}@v1", "--name", "bench", "--output", str(out),
            "--no-mlflow"]


def evalkit_per_query(out: Path) -> dict[str, dict[str, float]]:
    path = out.with_suffix("") / "bench" / "per_query.jsonl"
    with path.open(encoding="utf-8") as fh:
        return {r["query_id"]: r["metrics"] for r in map(json.loads, fh)}


def agreement(ours: dict[str, dict[str, float]], theirs: dict[str, dict[str, float]]) -> tuple[dict[str, Any], int]:
    """Per metric (mean ours, mean theirs, equal to 4 decimals), and the count of per-query values off by > 1e-9."""
    table, off = {}, 0
    for m in PYTREC_MEASURES.values():
        a = [ours[q][m] for q in sorted(ours)]
        b = [theirs.get(q, {}).get(m, 0.0) for q in sorted(ours)]
        off += sum(abs(x - y) > 1e-9 for x, y in zip(a, b))
        table[m] = (float(np.mean(a)), float(np.mean(b)), round(float(np.mean(a)), 4) == round(float(np.mean(b)), 4))
    return table, off


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if not args.compile_each_run:  # as a user's second run: evalkit's bytecode compiled once, then read
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(args.work_dir / "pycache")
    t = time.perf_counter()
    paths = make_files(args.work_dir, args.queries, args.depth, args.docs, args.seed)
    print(f"files: {paths['run'].parent} ({args.queries} queries x {args.depth} documents, {args.docs} in the "
          f"corpus; {time.perf_counter() - t:.1f} s to make or find)")
    script = args.work_dir / "pytrec_score.py"
    script.write_text(PYTREC_SCRIPT, encoding="utf-8")
    runs: dict[str, list[dict[str, float]]] = {"evalkit score": [], "pytrec_eval": []}
    out = args.work_dir / "out" / "bench.json"
    theirs_file = args.work_dir / "pytrec.json"
    if not args.compile_each_run:
        timed_process(evalkit_cmd(paths, out), env)  # untimed: compiles evalkit's modules once
    for _ in range(args.repeats):
        runs["evalkit score"].append(timed_process(evalkit_cmd(paths, out), env))
        runs["pytrec_eval"].append(timed_process([sys.executable, str(script), str(paths["qrels"]), str(paths["run"]),
                                                  str(theirs_file)]))
    med = {k: {f: statistics.median(r[f] for r in v) for f in ("cpu", "wall", "rss_mb")} for k, v in runs.items()}
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; median of {args.repeats}; "
          + ("evalkit's modules compiled at every start (--compile-each-run)" if args.compile_each_run else
             "evalkit's bytecode compiled by an untimed first run, as on a user's second run (pip compiles the "
             "other packages' at install)"))
    print(f"{'tool':<15} {'CPU s':>7} {'wall s':>7} {'peak RSS MB':>12}")
    for k, v in med.items():
        print(f"{k:<15} {v['cpu']:>7.2f} {v['wall']:>7.2f} {v['rss_mb']:>12.0f}")
    ratio = med["evalkit score"]["cpu"] / med["pytrec_eval"]["cpu"]
    rss = med["evalkit score"]["rss_mb"]
    print(f"CPU ratio {ratio:.2f}x (target <= {TARGET_CPU_RATIO}x: {'met' if ratio <= TARGET_CPU_RATIO else 'MISSED'});"
          f" peak RSS {rss:.0f} MB (target <= {TARGET_RSS_MB:.0f}: {'met' if rss <= TARGET_RSS_MB else 'MISSED'})")
    table, off = agreement(evalkit_per_query(out), json.loads(theirs_file.read_text(encoding="utf-8")))
    print(f"\n{'metric':<10} {'evalkit':>8} {'pytrec':>8} same to 4 decimals")
    for m, (a, b, same) in table.items():
        print(f"{m:<10} {a:>8.4f} {b:>8.4f} {'yes' if same else 'NO'}")
    print(f"per-query values differing by more than 1e-9: {off}")
    return 0 if off == 0 and all(s for _, _, s in table.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
