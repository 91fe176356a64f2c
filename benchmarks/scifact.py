#!/usr/bin/env python
"""SciFact (BEIR test split): evalkit's retrieval against published numbers.

    python benchmarks/scifact.py                      # every variant, MLflow on
    python benchmarks/scifact.py --variant bm25 --no-mlflow

What it does:

1. Looks for the data in ``../shared/datasets/scifact/`` (beside the repository; see
   its ``SOURCE.md``). Absent: prints why and exits 0.
2. Imports it with ``evalkit.importers.import_beir`` into ``--work-dir`` (default
   ``/tmp/evalkit-scifact``), never inside the repository: SciFact is CC BY-NC 2.0
   and is not redistributed with evalkit. The scratch eval set is re-imported on every
   run (a second or so); its content hash is the same each time.
3. Runs ``benchmarks/configs/scifact_*.yaml`` through ``evalkit.run.runner.run_eval``,
   the same nodes, indexes and metrics as ``evalkit run``, with recall@20, hit@5,
   mrr@10, ndcg@10 and recall@100.
4. Prints each variant's numbers, its wall time, and the published yardsticks beside
   the measured values: Anserini BM25 flat nDCG@10 0.6789 / R@100 0.9253 and MTEB
   all-MiniLM-L6-v2 nDCG@10 0.6451.

Thread counts are fixed (torch and faiss: ``--threads``, default 2). The first run
encodes the 5,183 abstracts with MiniLM (minutes on 2 cores); the vectors are cached
by content in the evalkit cache (``--cache-dir``, default ``$EVALKIT_CACHE`` or
``WORK_DIR/cache``), so later runs take seconds.

Exit code: 0, or 1 with ``--strict`` when a measured number misses its yardstick by
more than the tolerance (BM25 nDCG@10: 0.03; MiniLM nDCG@10: 0.01).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scale_common import (
    DATA_DIR,
    FILES,
    REPO,
    _fix_threads,
    _inside_repo,
    _quiet_env,
    table,
)

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
VARIANTS = {"bm25": "scifact_bm25", "minilm": "scifact_minilm", "hybrid_rrf": "scifact_hybrid_rrf",
            "hybrid_weighted": "scifact_hybrid_weighted", "rerank_guard": "scifact_hybrid_rrf_rerank_guard"}
METRICS = ("recall@20", "hit@5", "mrr@10", "ndcg@10", "recall@100")
COLUMNS = ("ndcg@10", "recall@100", "recall@20", "hit@5", "mrr@10")


@dataclass(frozen=True)
class Yardstick:
    """A published number for one variant's metric; ``tolerance`` None = shown, not checked."""

    variant: str
    metric: str
    value: float
    source: str
    tolerance: float | None


YARDSTICKS = (
    Yardstick("scifact_bm25", "ndcg@10", 0.6789, "Anserini BM25 flat (beir-v1.0.0-scifact.flat.yaml)", 0.03),
    Yardstick("scifact_bm25", "recall@100", 0.9253, "Anserini BM25 flat (beir-v1.0.0-scifact.flat.yaml)", None),
    Yardstick("scifact_minilm", "ndcg@10", 0.6451, "MTEB all-MiniLM-L6-v2 (SciFact)", 0.01),
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path, default=DATA_DIR,
                   help=f"Folder holding the SciFact files (default: {DATA_DIR}).")
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-scifact"),
                   help="Scratch folder for the imported eval set, results and MLflow store "
                        "(must be outside the repository; default: /tmp/evalkit-scifact).")
    p.add_argument("--cache-dir", type=Path, default=None,
                   help="evalkit index/embedding cache (default: $EVALKIT_CACHE, else WORK_DIR/cache).")
    p.add_argument("--variant", action="append", choices=sorted(VARIANTS),
                   help="Run only this variant (repeatable). Default: all of them.")
    p.add_argument("--threads", type=int, default=2, help="torch and faiss thread count (default: 2).")
    p.add_argument("--workers", type=int, default=1, help="Queries run in parallel threads (default: 1).")
    p.add_argument("--no-mlflow", action="store_true", help="Skip MLflow logging (result files are still written).")
    p.add_argument("--tracking-uri", default=None, help="MLflow tracking URI (default: sqlite store in WORK_DIR).")
    p.add_argument("--no-progress", action="store_true", help="Hide the progress bars.")
    p.add_argument("--markdown", action="store_true", help="Print the tables as Markdown (for reports/).")
    p.add_argument("--strict", action="store_true", help="Exit 1 when a checked yardstick is missed.")
    return p.parse_args(argv)


def load_configs(names: list[str]) -> list[Any]:
    from evalkit.graph import load_graph_config

    return [load_graph_config(CONFIG_DIR / f"{name}.yaml") for name in names]


def import_scifact(data_dir: Path, work_dir: Path) -> tuple[Path, Any]:
    """Import the SciFact files into ``work_dir/eval_sets`` (replacing an earlier import)."""
    from evalkit.importers import BeirFiles, import_beir

    files = BeirFiles(**{kind: data_dir / name for kind, name in FILES.items()})
    result = import_beir(files, "scifact", work_dir / "eval_sets", lang="en", force=True,
                         description="BEIR SciFact test split (CC BY-NC 2.0; scratch import by benchmarks/scifact.py)")
    return result.eval_set_path, result


def _fmt(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "-"
    return f"{x:+.4f}" if signed else f"{x:.4f}"


def report(summary: Any, wall: dict[str, float], markdown: bool) -> tuple[str, bool]:
    """The measured table, the yardstick table and whether every checked yardstick holds."""
    header = ["variant", *COLUMNS, "wall s", "build s", "ms/query"]
    rows = []
    for name, v in summary.variants.items():
        rows.append([name, *[_fmt(v.metrics.get(c)) for c in COLUMNS], f"{v.seconds:.1f}",
                     f"{v.timing.get('build_s', 0.0):.1f}", f"{v.timing.get('latency_ms_mean', 0.0):.1f}"])
    ok = True
    yrows = []
    for y in YARDSTICKS:
        v = summary.variants.get(y.variant)
        if v is None:
            continue
        got = v.metrics.get(y.metric)
        diff = None if got is None else got - y.value
        if y.tolerance is None or diff is None:
            verdict = "(shown, not checked)"
        else:
            within = abs(diff) <= y.tolerance
            ok &= within
            verdict = f"{'yes' if within else 'NO'} (abs(diff) <= {y.tolerance})"
        yrows.append([y.variant, y.metric, _fmt(got), f"{y.value:.4f}", _fmt(diff, signed=True), verdict, y.source])
    yheader = ["variant", "metric", "measured", "published", "diff", "within tolerance", "published by"]
    times = ", ".join(f"{k} {s:.1f} s" for k, s in wall.items())
    text = "\n\n".join([
        f"SciFact test: {summary.eval_set.n_queries} queries, eval set sha256 {summary.eval_set.sha256[:12]}",
        table(header, rows, markdown),
        "recall@k: the retrieval ranking; hit/mrr/ndcg: the final ranking (the same list, except after the rerank variant's re-score). "
        "wall s: the variant's build + queries; build s: index build or load (the first dense build encodes "
        "the corpus).",
        table(yheader, yrows, markdown) if yrows else "(no variant with a published yardstick was run)",
        f"wall time: {times}",
    ])
    return text, ok


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    echo = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    missing = [n for n in FILES.values() if not (args.data_dir / n).is_file()]
    if missing:
        print(f"SciFact benchmark skipped: {args.data_dir} lacks {', '.join(missing)} (see the scifact SOURCE.md "
              "of the shared datasets; the data is not shipped with evalkit)")
        return 0
    if _inside_repo(args.work_dir):
        print(f"error: --work-dir {args.work_dir} is inside the repository {REPO}; SciFact is CC BY-NC and must "
              "not be copied into it: pick a folder outside (default /tmp/evalkit-scifact)", file=sys.stderr)
        return 2
    _quiet_env(args.threads)
    cache = args.cache_dir or Path(os.environ.get("EVALKIT_CACHE") or args.work_dir / "cache")

    from evalkit.evalsets import load_eval_set
    from evalkit.run.runner import RunOptions, run_eval

    wall: dict[str, float] = {}
    t0 = time.perf_counter()
    set_path, imported = import_scifact(args.data_dir, args.work_dir)
    for line in imported.lines():
        echo(line)
    wall["import"] = time.perf_counter() - t0

    t = time.perf_counter()
    _fix_threads(args.threads)
    eval_set = load_eval_set(f"{set_path}@v1")
    names = [VARIANTS[v] for v in (args.variant or list(VARIANTS))]
    configs = load_configs(names)
    wall["load"] = time.perf_counter() - t

    t = time.perf_counter()
    output = args.work_dir / "results" / "scifact.json"
    options = RunOptions(output=output, workers=args.workers, metrics=METRICS, mlflow=not args.no_mlflow,
                         tracking_uri=args.tracking_uri, experiment="evalkit-scifact", progress=not args.no_progress,
                         cache_root=cache, tags={"benchmark": "scifact"})
    summary = run_eval(eval_set, configs, options, echo=echo)
    wall["run"] = time.perf_counter() - t
    variant_s = sum(v.seconds for v in summary.variants.values())
    if not args.no_mlflow:
        wall["mlflow (run - variants)"] = wall["run"] - variant_s
    wall["total"] = time.perf_counter() - t0

    text, ok = report(summary, wall, args.markdown)
    print(text)
    print(f"\nsummary: {output}\nper-query records: {output.with_suffix('')}/<variant>/per_query.jsonl\ncache: {cache}")
    if summary.mlflow:
        print(f"MLflow: {summary.mlflow.get('tracking_uri')}")
    (args.work_dir / "results" / "scifact_wall.json").write_text(json.dumps(wall, indent=2) + "\n")
    failed = sum(v.n_failed for v in summary.variants.values())
    if failed:
        print(f"note: {failed} query run(s) failed; see per_query.jsonl", file=sys.stderr)
    if not ok:
        print("a checked yardstick was missed (see the table above)", file=sys.stderr)
        return 1 if args.strict else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
