#!/usr/bin/env python
"""``compare``, ``gate`` and ``report`` on a 10,000-query x 8-variant run (issue 34: <= 60 s together).

    python benchmarks/analysis_scale.py                       # 10k queries, 8 variants
    python benchmarks/analysis_scale.py --queries 2000 --variants 4

The results are made cheaply and for real: ``score_run_scale.make_files`` writes a seeded
eval set and TREC runs (one per variant, each drawn from its own seed, the eval set the same), and ``evalkit score --run``
scores each into one results folder, as a user's own systems' runs would be. Then each
command runs once in this process, timed (wall and CPU), with its default resamples
(10,000); the report writes HTML and Markdown, MLflow off. Peak RSS is printed for the whole
process (scoring included) and, where Linux lets a process reset its peak (``/proc/self/clear_refs``),
for each command and for the three together (reset after scoring).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

from score_run_scale import make_files

TARGET_S = 60.0
TARGET_RSS_MB = 4096.0  # the deploy gate's peak RSS for compare + gate + report (issue 34)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--variants", type=int, default=8)
    p.add_argument("--depth", type=int, default=100)
    p.add_argument("--docs", type=int, default=50_000)
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-analysis-scale"))
    p.add_argument("--check-records", action="store_true",
                   help="After timing, parse every per-query record both ways (evalkit's reader and json.loads "
                        "line by line) and count those equal by repr (not counted in the times).")
    return p.parse_args(argv)


def same_records(folder: Path, names: list[str]) -> tuple[int, int]:
    """(records equal, records): ``read_rows`` against ``json.loads`` of each line cut at "\\n", by ``repr``."""
    from evalkit.runstore import read_rows

    same = total = 0
    for name in names:
        path = folder / name / "per_query.jsonl"
        old = [(n, repr(json.loads(line))) for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1)
               if line.strip()]
        new = [(n, repr(row)) for n, row in read_rows(path)]
        total += len(old)
        same += sum(a == b for a, b in zip(old, new)) if len(old) == len(new) else 0
    return same, total


def peak_mb() -> float:
    """This process's peak RSS in MB, since it started or since the last :func:`reset_peak`."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak() -> bool:
    """Start the peak RSS afresh from the current RSS (Linux 4.0+); False where that is not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def timed(args: list[str]) -> tuple[float, float, int, float]:
    """``evalkit ARGS`` in this process: (wall s, CPU s, exit code, peak RSS MB while it ran).

    The peak is the process's since its last reset (the one before this command when resetting works)."""
    from evalkit.cli import cli

    reset_peak()
    w, c = time.perf_counter(), time.process_time()
    try:
        code = cli.main(args, standalone_mode=False) or 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return time.perf_counter() - w, time.process_time() - c, int(code), peak_mb()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    # every run drawn from its own seed, the eval set from seed 34 alone: the same set under every run
    base = make_files(args.work_dir / "set", args.queries, args.depth, args.docs, 34, run_seed=100)
    out = args.work_dir / "results" / "scale.json"
    names = [f"v{i}" for i in range(args.variants)]
    t = time.perf_counter()
    variants = {}
    for i, name in enumerate(names):
        run = make_files(args.work_dir / "set", args.queries, args.depth, args.docs, 34, run_seed=100 + i)["run"]
        code = timed(["score", "--run", str(run), "--eval-set", f"{base['set']}@v1", "--name", name,
                      "--output", str(out), "--no-mlflow"])[2]
        if code:
            raise SystemExit(f"evalkit score failed for {name} (exit {code})")
        variants.update(json.loads(out.read_text(encoding="utf-8"))["variants"])
    # each `evalkit score` writes a summary of its own variant; the 8 records folders sit side by side under
    # results/scale/, so the summary of all 8 is the last one with every variant (as `evalkit run` writes it)
    summary = json.loads(out.read_text(encoding="utf-8"))
    out.write_text(json.dumps({**summary, "variants": variants}, indent=2), encoding="utf-8")
    print(f"{args.variants} variants x {args.queries:,} queries scored into {out} in {time.perf_counter() - t:.0f} s "
          "(not counted)", file=sys.stderr)
    work = args.work_dir
    scoring_peak = peak_mb()
    resettable = reset_peak()
    load_before = os.getloadavg()
    rows = {
        "compare": timed(["compare", str(out), "--json", str(work / "compare.json")]),
        "gate": timed(["gate", "--baseline", str(out), "--candidate", str(out), "--baseline-variant", names[0],
                       "--candidate-variant", names[1], "--metric", "hit@5", "--max-drop", "0.02", "--metric",
                       "ndcg@10", "--max-drop", "0.02"]),
        "report": timed(["report", str(out), "--html", str(work / "report.html"), "--markdown",
                         str(work / "report.md"), "--no-mlflow"]),
    }
    print(f"\n{args.queries:,} queries x {args.variants} variants; load average before "
          + " ".join(f"{x:.2f}" for x in load_before) + ", after " + " ".join(f"{x:.2f}" for x in os.getloadavg())
          + f"; peak RSS of the process {max(scoring_peak, *(r[3] for r in rows.values())):,.0f} MB "
          f"(scoring {scoring_peak:,.0f} MB)")
    print(f"{'command':<10} {'wall s':>7} {'CPU s':>7} exit {'peak MB':>8}")
    for name, (w, c, code, peak) in rows.items():
        print(f"{name:<10} {w:>7.1f} {c:>7.1f} {code:>4} {peak:>8,.0f}")
    total = sum(r[0] for r in rows.values())
    print(f"together {total:.1f} s wall (target <= {TARGET_S:.0f}: {'met' if total <= TARGET_S else 'MISSED'})")
    if resettable:
        peak = max(r[3] for r in rows.values())
        print(f"together peak RSS {peak:,.0f} MB (target <= {TARGET_RSS_MB:,.0f}: "
              f"{'met' if peak <= TARGET_RSS_MB else 'MISSED'})")
    else:
        print("peak RSS per command not measured: this system does not let a process reset its peak "
              "(each includes what ran before it)")
    if args.check_records:
        same, n = same_records(out.with_suffix(""), names)
        print(f"per-query records read as json.loads reads them: {same:,} of {n:,}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
