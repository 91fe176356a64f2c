#!/usr/bin/env python
"""Offline judge throughput: answers/s and claims/s on the bundled judge cases.

    python benchmarks/judge_speed.py                 # 3 timed passes over the 216 cases
    python benchmarks/judge_speed.py --judge offline --passes 5 --markdown

What it does:

1. Reads ``benchmarks/data/judge_cases.jsonl`` (216 cases: half English, half Chinese;
   each an answer and the evidence it is judged against; no external data).
2. Builds the judge with ``evalkit.judges.make_judge`` (default ``offline``: the
   rule-and-lexicon judge, no LLM) and judges two cases (one per language) untimed, so
   lexicon, jieba dictionary and stemmer loading are not in the figures.
3. Judges every case ``--passes`` times, in file order, one at a time (as the runner
   does), timing each ``judge.judge(question, answer, evidence)`` call. The offline
   judge memoises sentence analysis by text (``functools.lru_cache`` in
   ``evalkit.judges.offline``); those caches are cleared before every pass, so each pass
   is a first sight of the texts (within a pass, passages shared by cases still hit the
   cache, as in a real run). ``--keep-caches`` measures repeated texts instead.
4. Prints per language and overall: answers, claims (the claims the judge split each
   answer into), answers/s, claims/s, ms/answer and the spread over passes.

``benchmarks/judges.py`` measures the judges' accuracy (and answers/s including
first-call loading); this script measures steady-state speed only.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_common import REPO, table

CASES = REPO / "benchmarks" / "data" / "judge_cases.jsonl"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--judge", default="offline", help="Judge backend (default: offline).")
    p.add_argument("--cases", type=Path, default=CASES, help=f"Judge cases (default: {CASES}).")
    p.add_argument("--passes", type=int, default=3, help="Timed passes over the cases (default: 3).")
    p.add_argument("--keep-caches", action="store_true",
                   help="Do not clear the judge's text caches between passes (repeated texts).")
    p.add_argument("--markdown", action="store_true", help="Print the table as Markdown.")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from evalkit.judges import make_judge
    from evalkit.judges.scoring import load_cases

    cases = load_cases(args.cases)
    judge = make_judge(args.judge)
    for lang in ("en", "zh"):
        c = next((c for c in cases if c.lang == lang), None)
        if c is not None:
            judge.judge(c.question, c.answer, c.evidence)
    # per pass, per language: (answers, claims, seconds)
    passes: list[dict[str, list[float]]] = []
    import importlib

    module = importlib.import_module(type(judge).__module__)
    caches = [f for f in vars(module).values() if callable(getattr(f, "cache_clear", None))]
    for _ in range(args.passes):
        if not args.keep_caches:
            for f in caches:
                f.cache_clear()
        acc: dict[str, list[float]] = {}
        for c in cases:
            t0 = time.perf_counter()
            r = judge.judge(c.question, c.answer, c.evidence)
            dt = time.perf_counter() - t0
            for key in (c.lang, "all"):
                a = acc.setdefault(key, [0, 0, 0.0])
                a[0] += 1
                a[1] += len(r.claims)
                a[2] += dt
        passes.append(acc)
    header = ["cases", "answers", "claims", "answers/s", "claims/s", "ms/answer", "answers/s per pass"]
    rows = []
    for key in ("en", "zh", "all"):
        if key not in passes[0]:
            continue
        n, claims = passes[0][key][0], passes[0][key][1]
        secs = [p[key][2] for p in passes]
        med = statistics.median(secs)
        rows.append([key, str(int(n)), str(int(claims)), f"{n / med:.1f}", f"{claims / med:.1f}",
                     f"{1000 * med / n:.1f}", ", ".join(f"{n / s:.1f}" for s in secs)])
    print(f"Judge throughput: {args.judge} judge ({getattr(judge, 'identity', args.judge)}), {len(cases)} cases, "
          f"{args.passes} passes (median shown), one case at a time, loading excluded, "
          f"{'text caches kept' if args.keep_caches else f'{len(caches)} text caches cleared before every pass'}\n")
    print(table(header, rows, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
