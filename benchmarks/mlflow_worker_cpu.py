#!/usr/bin/env python
"""CPU seconds of each step of MLflow logging, replayed on a finished run (what the worker spends).

    python benchmarks/mlflow_worker_cpu.py results/demo_kb.json --configs graph_configs

Reads a finished ``evalkit run`` (its summary JSON, the ``per_query.jsonl`` beside it and
each variant's graph config, found as ``<--configs>/<variant>.yaml``) and logs it, in this
process, exactly as the background worker does (``InvocationLogger``: open, each variant,
close) into a fresh sqlite store under ``--work-dir``, ``--rounds`` times (the first also
creates the store's schema: reported, not counted). Prints the CPU seconds
(``time.process_time``) of: importing mlflow and opening the store, warming the modules the
worker imports while it waits (``evalkit.track.background.warm_up``), each variant, and
closing. CPU, unlike wall time, barely depends on what else the machine runs.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path


def _round(summary_path: Path, configs: Path, store: Path) -> dict[str, float]:
    t = time.process_time()
    from evalkit.analysis.runs import summary_from_dict
    from evalkit.graph.config import load_graph_config
    from evalkit.runstore import read_results, results_folder
    from evalkit.track.background import warm_up
    from evalkit.track.mlflow_log import InvocationLogger
    from evalkit.track.payloads import VariantLog

    summary = summary_from_dict(json.loads(summary_path.read_text(encoding="utf-8")), str(summary_path))
    folder = results_folder(summary_path)
    cpu: dict[str, float] = {}
    log = InvocationLogger(summary, store, trace_policy="misses")
    log.open(list(summary.variants))
    cpu["import mlflow + open store + parent run"] = time.process_time() - t
    t = time.process_time()
    warm_up()
    cpu["warm-up imports (matplotlib, mlflow.data, tracing)"] = time.process_time() - t
    for name, v in summary.variants.items():
        config = load_graph_config(configs / f"{name}.yaml")
        per_query = folder / name / "per_query.jsonl"
        t, traced = time.process_time(), log.traced
        log.submit(VariantLog(name=name, params=config.flat_params(), config_yaml=config.to_yaml(), summary=v,
                              results=read_results(per_query), per_query_path=per_query))
        cpu[f"variant {name} ({log.traced - traced} traces)"] = time.process_time() - t
    t = time.process_time()
    log.close(summary.variants)
    cpu["close (parent metrics, tables)"] = time.process_time() - t
    return cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("summary", type=Path, help="a finished run's summary JSON (evalkit run --output)")
    ap.add_argument("--configs", type=Path, default=Path("graph_configs"), help="folder of <variant>.yaml")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-mlflow-worker-cpu"))
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds, each a fresh process [3]")
    ap.add_argument("--one", type=Path, help=argparse.SUPPRESS)   # internal: one round into this store
    args = ap.parse_args()
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    if args.one:
        print(json.dumps(_round(args.summary.resolve(), args.configs.resolve(), args.one)))
        return 0
    import subprocess

    store = args.work_dir.resolve()
    shutil.rmtree(store, ignore_errors=True)
    store.mkdir(parents=True)
    rounds = []
    for i in range(args.rounds + 1):          # round 0 creates the schema: not counted
        out = subprocess.run([sys.executable, __file__, str(args.summary), "--configs", str(args.configs),
                              "--one", str(store)], capture_output=True, text=True, check=True)
        if i:
            rounds.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"MLflow logging replayed on {args.summary}: CPU seconds, median of {args.rounds} fresh process(es)")
    total = 0.0
    for step in rounds[0]:
        med = statistics.median(r[step] for r in rounds)
        total += med
        print(f"  {med:6.2f}  {step}")
    print(f"  {total:6.2f}  total (load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
