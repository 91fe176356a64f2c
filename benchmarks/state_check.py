#!/usr/bin/env python
"""What EVALKIT_CHECK_STATE=1 costs, and proof that it changes no record: the demo run with the check off and on.

    python benchmarks/state_check.py                          # every bundled config, 2 repeats
    python benchmarks/state_check.py --config bm25 --config agentic_reflect --repeats 3

What it does:

1. Loads the bundled demo eval set (``eval_sets/demo_kb.jsonl``, 120 questions) and the bundled
   graph configs (``graph_configs/*.yaml``, or the ``--config`` stems), as ``evalkit demo`` does.
2. One warm-up run (check off) so that indexes and embeddings are cached (in ``--work-dir``,
   default ``/tmp/evalkit-state-check``; never inside the repository). Then ``--repeats`` pairs of
   runs, check off then on, each ``run_eval`` with MLflow off, one worker, in this process.
3. Times each run from the call to its return, and, in the runs with the check on, the time spent
   inside the check itself (``evalkit.graph.graph._check_types``, wrapped with a timer) and how many
   writes it checked.
4. Compares every variant's ``per_query.jsonl`` of the last off run with the last on run, record by
   record, without the wall-clock fields (the comparison ``tests/graph/test_sharing.py`` makes, plus
   the reflection loop's ``loop_ms``).
   Any difference fails the script (exit 1).

Prints the median wall times, the overhead ((on - off) / off), the check's own time as a share of
the on run, and whether the records are identical.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


class CheckTimer:
    """Wraps the engine's type check: total seconds inside it and the number of writes it checked."""

    def __init__(self) -> None:
        import evalkit.graph.graph as engine

        self.engine, self.inner = engine, engine._check_types
        self.seconds, self.calls = 0.0, 0

    def __call__(self, who: str, wrote: Any) -> None:
        t0 = time.perf_counter()
        try:
            self.inner(who, wrote)
        finally:
            self.seconds += time.perf_counter() - t0
            self.calls += 1

    def __enter__(self) -> CheckTimer:
        self.engine._check_types = self
        return self

    def __exit__(self, *exc: Any) -> None:
        self.engine._check_types = self.inner


def one_run(eval_set: Any, configs: list[Any], out: Path, check: bool) -> tuple[float, float, int]:
    """(wall seconds, seconds inside the check, writes checked) of one ``run_eval``."""
    from evalkit.run.runner import RunOptions, run_eval

    os.environ["EVALKIT_CHECK_STATE"] = "1" if check else "0"  # read when each variant's graph is built
    with CheckTimer() as timer:
        t0 = time.perf_counter()
        run_eval(eval_set, configs, RunOptions(output=out, mlflow=False, progress=False, workers=1),
                 echo=lambda _: None)
        wall = time.perf_counter() - t0
    return wall, timer.seconds, timer.calls


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", action="append", default=[], help="a bundled config stem (repeatable); default all")
    ap.add_argument("--repeats", type=int, default=2, help="off/on pairs after the warm-up run")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-state-check"))
    args = ap.parse_args(argv)

    args.work_dir.mkdir(parents=True, exist_ok=True)
    os.environ["EVALKIT_CACHE"] = str(args.work_dir / "cache")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from evalkit.evalsets import load_eval_set
    from evalkit.graph import load_variants
    from evalkit.runstore import comparable_records as records  # the sharing tests' comparison

    eval_set = load_eval_set(str(REPO / "eval_sets" / "demo_kb.jsonl"))
    paths = sorted((REPO / "graph_configs").glob("*.yaml"))
    if args.config:
        paths = [p for p in paths if p.stem in set(args.config)]
    configs = [c for p in paths for c in load_variants(p)]
    n_queries = len(eval_set.records)
    print(f"{len(configs)} variants x {n_queries} questions; warm-up run...", file=sys.stderr, flush=True)
    one_run(eval_set, configs, args.work_dir / "warmup.json", check=False)

    off: list[float] = []
    on: list[float] = []
    inside: list[float] = []
    checked = 0
    for i in range(args.repeats):
        off.append(one_run(eval_set, configs, args.work_dir / f"off{i}.json", check=False)[0])
        wall, secs, checked = one_run(eval_set, configs, args.work_dir / f"on{i}.json", check=True)
        on.append(wall)
        inside.append(secs)
        print(f"pair {i + 1}: off {off[-1]:.2f} s, on {wall:.2f} s (check {secs:.3f} s, {checked} writes)",
              file=sys.stderr, flush=True)

    last = args.repeats - 1
    differ = [c.name for c in configs
              if records(args.work_dir / f"off{last}.json", c.name) != records(args.work_dir / f"on{last}.json", c.name)]
    n_records = sum(len(records(args.work_dir / f"on{last}.json", c.name)) for c in configs)
    m_off, m_on, m_in = statistics.median(off), statistics.median(on), statistics.median(inside)
    print(f"| variants x questions | off (median s) | on (median s) | overhead | inside the check | writes checked "
          f"| records identical |\n|---|---|---|---|---|---|---|\n"
          f"| {len(configs)} x {n_queries} | {m_off:.2f} | {m_on:.2f} | {(m_on - m_off) / m_off:+.1%} "
          f"| {m_in:.3f} s ({m_in / m_on:.1%} of the on run) | {checked} "
          f"| {'yes' if not differ else 'NO: ' + ', '.join(differ)} ({n_records} records) |")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
