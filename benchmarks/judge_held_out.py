#!/usr/bin/env python
"""The offline judge on multi-document answers written blind to its rules, per set, with the three verdicts.

    python benchmarks/judge_held_out.py                 # every set of both files
    python benchmarks/judge_held_out.py --show          # also each correct answer marked unsupported

Reads ``tests/judges/data/judge_multidoc_blind.jsonl`` (sets 1-4: the ``dev`` split the v9
rules were fitted on, and the ``test`` split) and ``tests/judges/data/judge_multidoc_held_out.jsonl``
(sets A and B, written for judge v10 by helpers that had read neither the judge, its tests
nor any case set, and measured once, after the v10 rules were final; sets C to I likewise for v11 to
v13). Each set has 72 correct answers and 24 planted errors. The ``comparisons`` split (set J,
``judge_comparisons_held_out.jsonl``, written for judge v15) has 30 correct answers that compare figures and
30 with one error, 20 of them a wrong comparison. An answer's verdict is its worst claim's:
``unsupported`` if any claim is, else ``unverified`` if any claim is, else ``supported``
(``none`` when no claim was judged). Prints per split and set: correct answers marked
unsupported (false alarms), unverified and supported; planted errors marked unsupported
(caught), unverified and supported (missed); and the targets of judge v10 (false alarms
<= 8%, planted errors unsupported >= 75%).
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from evalkit.judges.offline import OfflineJudge

REPO = Path(__file__).resolve().parents[1]
FILES = (REPO / "tests" / "judges" / "data" / "judge_multidoc_blind.jsonl",
         REPO / "tests" / "judges" / "data" / "judge_multidoc_held_out.jsonl",
         REPO / "tests" / "judges" / "data" / "judge_comparisons_held_out.jsonl")
MAX_FALSE_ALARM, MIN_CAUGHT = 0.08, 0.75


def load_rows() -> list[dict]:
    """Every labelled answer of :data:`FILES` (those present), in file order."""
    return [json.loads(x) for f in FILES if f.exists() for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]


def answer_verdict(judge: OfflineJudge, row: dict) -> str:
    """The verdict of the whole answer: its worst claim's (see the module docstring)."""
    r = judge.judge(row["question"], row["answer"], [(e["id"], e["text"]) for e in row["evidence"]])
    if r.error:
        return "error"
    for v in ("unsupported", "unverified", "supported"):
        if any(c.verdict == v for c in r.claims):
            return v
    return "none"


def group_of(row: dict) -> str:
    """``dev``, ``test`` or ``held_out``, and the set within it."""
    return f"{row['split']} {row.get('set') or row['id'].split('-')[0]}"


def tally(rows: list[dict], judge: OfflineJudge, show: bool = False) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for row in rows:
        v = answer_verdict(judge, row)
        c = out.setdefault(group_of(row), Counter())
        c[("correct" if row["label"] == "supported" else "error", v)] += 1
        if show and row["label"] == "supported" and v == "unsupported":
            print(f"  false alarm {row['id']} ({row['kind']}): {row['answer'][:110]}")
    return out


def line(name: str, c: Counter) -> str:
    n_ok = sum(v for (k, _), v in c.items() if k == "correct")
    n_err = sum(v for (k, _), v in c.items() if k == "error")
    fa, caught = c[("correct", "unsupported")], c[("error", "unsupported")]
    return (f"{name:14s} correct: {fa:3d} unsupported ({fa / n_ok:5.1%}) {c[('correct', 'unverified')]:3d} unverified "
            f"{c[('correct', 'supported')]:3d} supported /{n_ok} | errors: {caught:2d} unsupported ({caught / n_err:5.1%}) "
            f"{c[('error', 'unverified')]:2d} unverified {c[('error', 'supported')]:2d} supported /{n_err}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--show", action="store_true", help="List every correct answer marked unsupported.")
    args = p.parse_args(argv)
    judge = OfflineJudge()
    print(f"judge {judge.identity}")
    sets = tally(load_rows(), judge, args.show)
    splits: dict[str, Counter] = {}
    for name in sorted(sets):
        print(line(name, sets[name]))
        splits.setdefault(name.split()[0], Counter()).update(sets[name])
    print()
    for name, c in splits.items():
        print(line(name, c))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
