#!/usr/bin/env python
"""The secret-masking pass over a variant's per_query.jsonl before MLflow gets it: the literal-by-literal
reference against the pass that looks only at marked literals, on the same file, in one process.

    python benchmarks/mask_jsonl.py results/demo_kb/rag_rrf_extractive/per_query.jsonl
    python benchmarks/mask_jsonl.py FILE --secret sk-live-0123456789abcdef --rounds 5

What it does: reads FILE (a per_query.jsonl an ``evalkit run`` wrote; at the deploy-gate benchmark's size
one is ~160-230 MB), optionally sets ``--secret`` as the value of a secret environment variable and
plants it in every 100th line (so that the masked text differs from the input), then times, interleaved
over ``--rounds`` rounds:

- **every literal**: ``evalkit.track.secrets._every_literal`` - every distinct string literal decoded and
  masked (what ``mask_jsonl`` did until 2026-12-05);
- **marked literals**: ``evalkit.track.secrets._marked_literals`` - only the literals holding a trigger,
  an escape, a look-alike character or a secret value (what ``mask_jsonl`` does now).

Prints the median CPU seconds of each, their ratio, how many bytes the masking changed, and checks that
both give the same text (exit 1 if not, or if the marked pass fell back).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalkit.redact import secret_env_values  # noqa: E402
from evalkit.track import secrets as sec  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=Path, help="a per_query.jsonl written by evalkit run")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds of each pass (median printed)")
    ap.add_argument("--secret", default=None, help="a secret value to set in the environment and plant in the text")
    args = ap.parse_args()
    text = args.file.read_text(encoding="utf-8")
    if args.secret:
        os.environ["EVALKIT_BENCH_API_KEY"] = args.secret
        lines = text.splitlines(keepends=True)
        text = "".join(line.replace('"', f'"{args.secret} ', 1) if i % 100 == 0 else line
                       for i, line in enumerate(lines))
    env = secret_env_values()
    cpu: dict[str, list[float]] = {"every literal": [], "marked literals": []}
    outs: dict[str, str | None] = {}
    for _ in range(args.rounds):
        for name, fn in (("every literal", sec._every_literal), ("marked literals", sec._marked_literals)):
            t = time.process_time()
            outs[name] = fn(text, env)
            cpu[name].append(time.process_time() - t)
    ref, new = outs["every literal"], outs["marked literals"]
    med = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"file: {args.file} ({len(text.encode('utf-8')) / 1e6:.1f} MB, {text.count(chr(10))} lines)")
    print(f"every literal / marked literals: {med['every literal'] / med['marked literals']:.2f}x")
    for name, v in med.items():
        print(f"  {name:16s} {v:7.2f} s CPU (median of {args.rounds})")
    print(f"masking changed the text: {ref != text}; same text from both: {ref == new}"
          + ("; the marked pass fell back" if new is None else ""))
    return 0 if new is not None and ref == new else 1


if __name__ == "__main__":
    raise SystemExit(main())
