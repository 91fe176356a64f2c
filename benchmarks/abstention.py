#!/usr/bin/env python
"""The abstention detector on labelled answers: precision and recall of "abstained".

    python benchmarks/abstention.py            # both splits
    python benchmarks/abstention.py --show     # also list every wrong call
    python benchmarks/abstention.py --model e5 # the rules, then the learned stage (evalkit.models.abstention)

What it does: reads ``benchmarks/data/abstention_dev.jsonl`` (the split the default
patterns of :mod:`evalkit.text.abstention` were developed on) and
``benchmarks/data/abstention_test.jsonl`` (written afterwards, in other wordings, and
measured once: the reported figure), and ``benchmarks/data/abstention_test2.jsonl`` (120
answers written by a helper that did not read the rules, with short answers heading
their caveat among the partial answers; measured once, after the short-answer rule), and
``benchmarks/data/abstention_test3.jsonl`` (120 more, 60 of them refusals in as many
wordings, written blind for judge v10 and measured once with the rules unchanged), and
``abstention_test4`` to ``abstention_test24`` (120 each, 16 and 17 200 each, 20 240, written blind by
writers who saw no evalkit code or data; each measured once before the rules learned from its
misses, splits 8, 15, 18, 19 and 21 to 24 after the rules were final; 16, 17 and 20 were written as training
data for the learned stage (20: short and plain replies of QA systems): see tests/judges/test_abstention.py for the figures;
25 to 38 the same way, from split 19's brief; 39 to 46 likewise). A line's ``question``, where it has one, is passed to the detector
as every reader passes it (a plain answer that does not give what its question asks for is read at the stage's
``threshold_unanswered``: docs/judges.md).
Each line is an answer (``answer``, optional ``finish_reason``) labelled ``abstained`` (a
refusal, in many wordings, en and zh; an empty answer; a provider's content filter) or
``answered`` (a plain answer, a correct *negative* answer such as "does not contain a
built-in Wi-Fi module" / 也未提供住宿补贴, or a partial refusal that then answers). Prints, per split, overall and per language and
per kind: precision and recall of "abstained" (positive class), and the accuracy.
Targets: precision and recall >= 0.95 on each test split (exit 1 with ``--strict`` when
missed).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPLITS = {"dev": REPO / "benchmarks" / "data" / "abstention_dev.jsonl",
          "test": REPO / "benchmarks" / "data" / "abstention_test.jsonl",
          "test2": REPO / "benchmarks" / "data" / "abstention_test2.jsonl",
          "test3": REPO / "benchmarks" / "data" / "abstention_test3.jsonl",
          **{f"test{n}": REPO / "benchmarks" / "data" / f"abstention_test{n}.jsonl" for n in range(4, 49)}}
TARGET = 0.95


def load(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def scores(rows: list[tuple[dict, bool]]) -> dict[str, float | int | None]:
    tp = sum(1 for r, p in rows if p and r["label"] == "abstained")
    fp = sum(1 for r, p in rows if p and r["label"] != "abstained")
    fn = sum(1 for r, p in rows if not p and r["label"] == "abstained")
    ok = sum(1 for r, p in rows if p == (r["label"] == "abstained"))
    return {"n": len(rows), "precision": tp / (tp + fp) if tp + fp else None,
            "recall": tp / (tp + fn) if tp + fn else None, "accuracy": ok / len(rows) if rows else None,
            "tp": tp, "fp": fp, "fn": fn}


def _f(v: float | None) -> str:
    return "  -  " if v is None else f"{v:.3f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--show", action="store_true", help="List every answer the detector got wrong.")
    p.add_argument("--strict", action="store_true", help="Exit 1 when the test split misses a target.")
    p.add_argument("--model", default=None, help="Add the learned stage of this name (e5) after the rules. Its "
                   "weights were fitted on the splits they name (evalkit/models/data/): figures on those splits "
                   "are in-sample; the file's own 'cross_validated' figures are not.")
    args = p.parse_args(argv)
    from evalkit.models.abstention import detect as detect_abstention

    missed = []
    for split, path in SPLITS.items():
        if not path.exists():
            print(f"{split}: {path} not found")
            continue
        data = [(r, detect_abstention(r["answer"], finish_reason=r.get("finish_reason"), model=args.model,
                                      question=r.get("question")))
                for r in load(path)]
        rows = [(r, d.abstained) for r, d in data]
        print(f"\n## {split} split ({path.name}): {len(rows)} answers, "
              f"{sum(r['label'] == 'abstained' for r, _ in rows)} labelled abstained")
        print(f"{'slice':24s} {'n':>4s} {'precision':>9s} {'recall':>7s} {'accuracy':>8s}  tp/fp/fn")
        slices = {"overall": rows}
        for key in ("lang", "kind"):
            for v in sorted({r[key] for r, _ in rows}):
                slices[f"{key}={v}"] = [(r, q) for r, q in rows if r[key] == v]
        for name, sub in slices.items():
            s = scores(sub)
            print(f"{name:24s} {s['n']:4d} {_f(s['precision']):>9s} {_f(s['recall']):>7s} {_f(s['accuracy']):>8s}"
                  f"  {s['tp']}/{s['fp']}/{s['fn']}")
        o = scores(rows)
        if split.startswith("test"):
            for k in ("precision", "recall"):
                if o[k] is None or o[k] < TARGET:
                    missed.append(f"{split} {k} {_f(o[k])} (target >= {TARGET})")
        if args.show:
            for r, d in data:
                if d.abstained != (r["label"] == "abstained"):
                    print(f"  WRONG {r['id']} [{r['label']}, {r['kind']}] {r['answer']!r} -> {d.reason} {d.matched!r}")
    print("\nabstention detector vs targets (test splits): "
          + ("all met" if not missed else "MISSED: " + "; ".join(missed)))
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
