#!/usr/bin/env python
"""The learned abstention stage read cold and again in a new process (the embedding cache), side by side.

    python benchmarks/abstention_speed.py              # splits 21-28's replies (960), a fresh temporary cache
    python benchmarks/abstention_speed.py --splits 25,26

What it is for: the stage reads every reply the rules call an answer, one e5 encoding each. Since
``evalkit.models.embedders.cached_embedder`` those vectors go to the content-addressed cache
(``$EVALKIT_CACHE``), so ``evalkit score`` run again on the same answers encodes nothing. Each pass runs in
its own process (as two runs of ``evalkit score`` would) on the same cache folder, e5 on one thread
(``EVALKIT_THREADS=1``); the
script prints each pass's time, the texts it sent to the model, and whether every finding is the same.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


def one_pass(splits: list[str]) -> dict:
    """Read every reply of ``splits`` with the stage in this process; the findings, the time and the texts encoded."""
    from evalkit.models import abstention as stage
    from evalkit.models.embedders import ModelSpec, cached_embedder

    replies = [json.loads(x)["answer"] for s in splits
               for x in (DATA / f"abstention_test{s}.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    t0 = time.perf_counter()
    found = [[f.abstained, f.reason, f.matched] for f in (stage.detect(r, model=stage.DEFAULT) for r in replies)]
    seconds = time.perf_counter() - t0
    return {"replies": len(replies), "seconds": seconds, "findings": found,
            "encoded": cached_embedder(ModelSpec.of(stage.EMBEDDER)).encoded}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--splits", default="21,22,23,24,25,26,27,28", help="abstention_test<N>.jsonl splits to read")
    ap.add_argument("--pass", dest="one", action="store_true", help=argparse.SUPPRESS)  # a child process's pass
    args = ap.parse_args(argv)
    splits = args.splits.split(",")
    if args.one:
        print(json.dumps(one_pass(splits)))
        return 0
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "EVALKIT_CACHE": cache, "EVALKIT_THREADS": "1"}
        runs = [json.loads(subprocess.run([sys.executable, __file__, "--pass", "--splits", args.splits], env=env,
                                          check=True, capture_output=True, text=True).stdout) for _ in ("cold", "warm")]
    cold, warm = runs
    print(f"{cold['replies']} replies of splits {args.splits}; the stage on (the default), one thread")
    print(f"{'pass':<6}{'seconds':>9}{'encoded':>9}{'replies/s':>11}")
    for name, r in zip(("cold", "warm"), runs):
        print(f"{name:<6}{r['seconds']:>9.2f}{r['encoded']:>9}{r['replies'] / r['seconds']:>11.0f}")
    print(f"warm / cold time: {warm['seconds'] / cold['seconds']:.3f}; findings identical: "
          f"{cold['findings'] == warm['findings']}")
    return 0 if cold["findings"] == warm["findings"] else 1


if __name__ == "__main__":
    sys.exit(main())
