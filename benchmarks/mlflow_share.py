#!/usr/bin/env python
"""The MLflow share of a warm ``evalkit demo``-style run, before (a git ref) and after (this checkout).

    python benchmarks/mlflow_share.py                      # before = main, all 12 demo configs
    python benchmarks/mlflow_share.py --before e9168e5 --configs bm25 hybrid_rrf

What it does, on the bundled demo eval set (120 queries) and ``graph_configs/*.yaml``:

1. Extracts ``evalkit/``, ``eval_sets/`` and ``graph_configs/`` of ``--before`` (``git archive``)
   into ``--work-dir`` (default ``/tmp/evalkit-mlflow-share``); "after" is this checkout, or
   ``--after REF`` extracted the same way (a fixed snapshot while the checkout is edited). Each
   side runs its own package on its own copy of the eval set and configs (same file names):
   the eval-set manifest format changes between versions.
2. Warms the shared model/index cache (``--work-dir``/cache) with one ``--no-mlflow`` run
   of this checkout (not timed), so both sides run warm: no passage is encoded.
3. For each side, one untimed run with MLflow into its own results folder creates the
   sqlite store (a first run also pays MLflow's schema migrations; a demo re-run does not).
4. Timed, interleaved (before off, after off, before on, after on; ``--repeat`` rounds of
   that, the median of each cell reported): ``evalkit run`` as a
   subprocess, 1 worker, no progress bars, MLflow off (``--no-mlflow``) and on (default
   store beside the output, the warm store of step 3; traces on as by default).
5. Prints, ratios first: MLflow share = (on - off) / off of each side, then the wall
   seconds. Also the CPU seconds of each run (user + system of the process and its children:
   MLflow's worker process is a child), because the machine may be shared, and the "tail": how long
   the run still logged to MLflow after its last query (the line the run prints at the end).

The "after --trace-all" side runs this checkout tracing every query, as "before" does
(its default traces misses and failures plus 10 other queries per variant).

Target (issue 14): MLflow adds at most 25% to the warm run's wall time.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TAILS: dict[Path, float | None] = {}   # "after" runs print how long MLflow took after the last query


def _extract(ref: str, dest: Path) -> Path:
    """``evalkit``, ``eval_sets`` and ``graph_configs`` at git ``ref``, unpacked under ``dest`` (returned)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    archive = dest / "src.tar"
    subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", "-o", str(archive), ref, "evalkit", "eval_sets",
                    "graph_configs"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    archive.unlink()
    return dest


def _run(root: Path, configs: list[str], output: Path, mlflow: bool, cache: Path, log: Path,
         extra: tuple[str, ...] = ()) -> tuple[float, float]:
    """One ``evalkit run`` of ``root``'s package, eval set and ``configs`` (stems): (wall s, CPU s incl. children)."""
    env = {**os.environ, "PYTHONPATH": str(root), "EVALKIT_CACHE": str(cache), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "MLFLOW_DISABLE_TELEMETRY": "true", "OMP_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, "-m", "evalkit.cli", "run", "--eval-set", str(root / "eval_sets" / "demo_kb.jsonl"),
           *[a for c in configs for a in ("--graph-config", str(root / "graph_configs" / f"{c}.yaml"))],
           "--output", str(output), "--no-progress"]
    cmd.extend(extra if mlflow else ("--no-mlflow",))
    output.parent.mkdir(parents=True, exist_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, check=False, env=env, capture_output=True, cwd=str(output.parent))
    wall = time.perf_counter() - t0
    with log.open("ab") as fh:
        fh.write(f"$ PYTHONPATH={root} {' '.join(cmd)}\n".encode() + proc.stdout + proc.stderr)
    if proc.returncode:
        sys.exit(f"evalkit run failed (exit {proc.returncode}): {' '.join(cmd)}\n"
                 f"{proc.stderr.decode(errors='replace')[-3000:]}")
    tail = re.search(rb"([0-9.]+) s after the last query", proc.stderr)
    TAILS[output] = float(tail.group(1)) if tail else None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default="main", help="git ref of the 'before' code [main]")
    ap.add_argument("--after", default=None, help="git ref of the 'after' code [this checkout]")
    ap.add_argument("--configs", nargs="*", help="config stems of graph_configs/ (default: all)")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-mlflow-share"))
    ap.add_argument("--no-trace-all", action="store_true", help="skip the 'after --trace-all' side")
    ap.add_argument("--repeat", type=int, default=1, help="timed rounds (interleaved); medians reported [1]")
    ap.add_argument("--cache", type=Path, default=None,
                    help="evalkit cache to use (default: WORK_DIR/cache; a cold one encodes the corpus first, ~1-15 min)")
    args = ap.parse_args()
    configs = sorted(p.stem for p in (REPO / "graph_configs").glob("*.yaml"))
    if args.configs:
        configs = [c for c in configs if c in set(args.configs)]
    work = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    cache, log = (args.cache or work / "cache").resolve(), work / "runs.log"
    after = _extract(args.after, work / "after-src") if args.after else REPO
    sides = {"before": (_extract(args.before, work / "before-src"), ()), "after": (after, ())}
    if not args.no_trace_all:   # the same code tracing every query, as "before" does
        sides["after --trace-all"] = (after, ("--trace-all",))
    print(f"demo eval set, {len(configs)} config(s) ({' '.join(configs)}), before = {args.before}, "
          f"after = {args.after or REPO}; log: {log}", flush=True)
    _run(after, configs, work / "warm" / "out.json", False, cache, log)                      # 2. warm the cache
    folders = {side: work / side.replace(" --", "-") for side in sides}
    for side, (root, extra) in sides.items():                                               # 3. create the stores
        for d in (folders[side] / "on", folders[side] / "off"):
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
        _run(root, configs, folders[side] / "on" / "demo_kb.json", True, cache, log, extra)
    rounds: dict[tuple[str, bool], list[tuple[float, float]]] = {}
    tails: dict[str, list[float]] = {}
    for i in range(args.repeat):
        for mlflow in (False, True):                                                        # 4. timed, interleaved
            for side, (root, extra) in sides.items():
                out = folders[side] / ("on" if mlflow else "off") / "demo_kb.json"
                wall, cpu = _run(root, configs, out, mlflow, cache, log, extra)
                rounds.setdefault((side, mlflow), []).append((wall, cpu))
                if mlflow and TAILS.get(out) is not None:
                    tails.setdefault(side, []).append(TAILS[out])  # type: ignore[arg-type]
                print(f"  round {i + 1} {side:18} MLflow {'on ' if mlflow else 'off'}: {wall:7.1f} s wall, "
                      f"{cpu:7.1f} s CPU; load {os.getloadavg()[0]:.1f}", flush=True)
    got = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in rounds.items()}
    print(f"\nMLflow share of a warm run (on - off) / off, wall time, then CPU; median of {args.repeat} round(s)")
    print(f"{'side':20}{'share':>9}{'off s':>9}{'on s':>9}{'adds s':>9}   {'CPU share':>9}{'CPU adds':>9}"
          f"{'tail s':>8}")
    for side in sides:
        (off, coff), (on, con) = got[side, False], got[side, True]
        tail = statistics.median(tails[side]) if tails.get(side) else None
        print(f"{side:20}{(on - off) / off:9.0%}{off:9.1f}{on:9.1f}{on - off:9.1f}   {(con - coff) / coff:9.0%}"
              f"{con - coff:9.1f}{'' if tail is None else f'{tail:8.1f}'}")
    print("tail s: MLflow logging still running after the last query (printed by the run; 'before' logged "
          "everything after the last query)")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
