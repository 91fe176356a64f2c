#!/usr/bin/env python
"""The error-reply detector on labelled replies: precision and recall of "error", per language.

    python benchmarks/error_replies.py                 # the dev split (rules are tuned on it)
    python benchmarks/error_replies.py --show          # also list every wrong call on dev
    python benchmarks/error_replies.py --split test    # the held-out split: the reported figure
    python benchmarks/error_replies.py --answers       # false alarms on ~2,000 answers and refusals

What it does: reads ``tests/judges/data/error_replies.jsonl`` (written before the detector:
each line a reply ``text``, its ``lang``, ``label`` error | answer | refusal, ``source``, and
``split``: every third case of each language is ``test``) and runs
:func:`evalkit.text.error_replies.detect_error_reply`. Prints per language the counts,
precision and recall of "error" (positive class) and the wrong calls' ids (dev only, with
``--show``). ``--answers`` runs the detector over the repository's other labelled answers
(abstention cases, judge cases, the bundled eval sets' reference answers), none of which is
an error reply, and prints every one it flags: each is a false alarm.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "tests" / "judges" / "data" / "error_replies.jsonl"
ANSWERS = {  # file -> the field holding an answer (every one is an answer or a refusal, none an error reply)
    "tests/judges/data/abstention_cases.jsonl": "answer", "benchmarks/data/abstention_dev.jsonl": "answer",
    "benchmarks/data/abstention_test.jsonl": "answer", "benchmarks/data/abstention_test2.jsonl": "answer", "benchmarks/data/judge_cases.jsonl": "answer",
    "benchmarks/data/judge_paraphrases.jsonl": "answer", "eval_sets/demo_kb.jsonl": "reference_answer",
    "eval_sets/demo_routes.jsonl": "reference_answer", "eval_sets/demo_tenants.jsonl": "reference_answer",
    "eval_sets/demo_turns.jsonl": "reference_answer",
}


def load(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def scores(rows: list[tuple[dict, bool]]) -> dict[str, float | int | None]:
    """Precision and recall of "error" with their counts."""
    tp = sum(1 for r, p in rows if p and r["label"] == "error")
    fp = sum(1 for r, p in rows if p and r["label"] != "error")
    fn = sum(1 for r, p in rows if not p and r["label"] == "error")
    return {"n": len(rows), "errors": tp + fn, "tp": tp, "fp": fp, "fn": fn,
            "precision": tp / (tp + fp) if tp + fp else None, "recall": tp / (tp + fn) if tp + fn else None}


def _f(v: float | None) -> str:
    return "  -  " if v is None else f"{v:.3f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--split", choices=("dev", "test"), default="dev", help="Which split to measure.")
    p.add_argument("--show", action="store_true", help="List the wrong calls (dev split only).")
    p.add_argument("--answers", action="store_true", help="Count false alarms on the repository's other answers.")
    args = p.parse_args(argv)
    from evalkit.text.error_replies import detect_error_reply

    rows = [r for r in load(CASES) if r["split"] == args.split]
    found = {r["id"]: detect_error_reply(r["text"]) for r in rows}
    print(f"## {args.split} split of {CASES.name}: {len(rows)} replies")
    print(f"{'lang':6s} {'n':>4s} {'errors':>6s} {'precision':>9s} {'recall':>7s}  tp/fp/fn")
    for lang in sorted({r["lang"] for r in rows}) + ["all"]:
        sub = [(r, found[r["id"]] is not None) for r in rows if lang in ("all", r["lang"])]
        s = scores(sub)
        print(f"{lang:6s} {s['n']:4d} {s['errors']:6d} {_f(s['precision']):>9s} {_f(s['recall']):>7s}  "
              f"{s['tp']}/{s['fp']}/{s['fn']}")
    if args.show and args.split == "dev":
        for r in rows:
            f = found[r["id"]]
            if (f is not None) != (r["label"] == "error"):
                print(f"  WRONG {r['id']} [{r['label']}] {r['text'][:110]!r} -> {f}")
    if args.answers:
        n = flagged = 0
        for rel, key in ANSWERS.items():
            path = REPO / rel
            if not path.exists():
                continue
            for r in load(path):
                text = r.get(key)
                if not isinstance(text, str) or not text.strip():
                    continue
                n += 1
                f = detect_error_reply(text)
                if f is not None:
                    flagged += 1
                    print(f"  FALSE ALARM {rel}:{r.get('id')} {text[:110]!r} -> {f}")
        print(f"other answers: {flagged} of {n} flagged ({flagged / max(n, 1):.2%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
