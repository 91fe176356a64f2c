#!/usr/bin/env python
"""The offline judge on short answers to multi-hop questions, right and plausibly wrong, HaluEval-style.

    python benchmarks/judge_short_answers.py              # every set
    python benchmarks/judge_short_answers.py --sets B     # one set
    python benchmarks/judge_short_answers.py --show       # also every wrong answer not caught and every false alarm

Sets A and B: a HotpotQA question (``../shared/datasets/hotpotqa_100``, read at run time, never copied), its
knowledge (the supporting-fact sentences, one passage per title, as HaluEval builds it) and three answers:
the gold span (``right_answer``), a correct answer in a writer's own sentence, and a plausible wrong answer
in one of HaluEval's four patterns (comprehension, factualness, specificity, inference). Set C: "which of the
two" questions written whole (question, two knowledge passages, the three answers; the wrong one is the other
option, ``other_option``, or another error, ``other``), half of them Chinese. All were written by helpers who
saw no evalkit code, test or data (``tests/judges/data/judge_short_answers.jsonl``, README alongside). An answer's verdict is its worst claim's
(``none``: no claim judged). Prints per set: right answers marked unsupported (false alarms), wrong answers
marked unsupported (caught), the unverified and no-verdict shares, and the balanced accuracy of
"unsupported" on the gold spans against the wrong answers (HaluEval QA's pairing).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from evalkit.judges.offline import OfflineJudge

REPO = Path(__file__).resolve().parents[1]
HOTPOT = REPO.parent / "shared" / "datasets" / "hotpotqa_100" / "hotpotqa_train.json"
ANSWERS = REPO / "tests" / "judges" / "data" / "judge_short_answers.jsonl"
KINDS = ("right_answer", "right_answer_sentence", "hallucinated_answer")
VERDICTS = ("unsupported", "unverified", "supported", "none")


def knowledge(item: dict) -> list[tuple[str, str]]:
    """The supporting-fact sentences of a HotpotQA item, one passage per title, in their order."""
    ctx = {title: sents for title, sents in item["context"]}
    out: dict[str, list[str]] = {}
    for title, i in item["supporting_facts"]:
        if title in ctx and i < len(ctx[title]):
            out.setdefault(title, []).append(ctx[title][i].strip())
    return [(title, " ".join(s)) for title, s in out.items()]


def cases(sets: set[str] | None = None) -> list[dict]:
    """Question, knowledge and the three answers of every case (of ``sets``, when given)."""
    items = {x["_id"]: x for x in json.loads(HOTPOT.read_text(encoding="utf-8"))}
    out = []
    for n, line in enumerate(ANSWERS.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        if sets and row["set"] not in sets:
            continue
        if "question" in row:  # a case written whole (set C: choice questions), with its own knowledge
            out.append({**row, "evidence": [(k["id"], k["text"]) for k in row["knowledge"]]})
            continue
        item = items.get(row["qid"])
        if item is None:
            raise SystemExit(f"{ANSWERS}:{n}: field qid: {row['qid']} is not a question of {HOTPOT}")
        out.append({**row, "question": item["question"], "right_answer": item["answer"], "evidence": knowledge(item)})
    return out


def verdict(judge: OfflineJudge, case: dict, kind: str) -> str:
    """The verdict of one answer: its worst claim's (``none`` when no claim was judged)."""
    r = judge.judge(case["question"], case[kind], case["evidence"])
    if r.error:
        return "error"
    return next((v for v in VERDICTS[:3] if any(c.verdict == v for c in r.claims)), "none")


def tally(rows: list[dict], judge: OfflineJudge, show: bool = False) -> dict[str, Counter]:
    """Per set, counts of (answer kind, verdict), and of (pattern, verdict) for the wrong answers."""
    out: dict[str, Counter] = {}
    for case in rows:
        c = out.setdefault(case["set"], Counter())
        for kind in KINDS:
            v = verdict(judge, case, kind)
            c[(kind, v)] += 1
            if kind == "hallucinated_answer":
                c[(case["pattern"], v)] += 1
            wrong = kind == "hallucinated_answer"
            if show and (v == "unsupported") != wrong:
                print(f"  {'missed' if wrong else 'false alarm'} [{v}] {case['qid']} {kind}: {case[kind][:100]!r}")
    return out


def report(name: str, c: Counter) -> list[str]:
    n = sum(c[("right_answer", v)] for v in VERDICTS + ("error",))
    lines = [f"set {name} ({n} questions)"]
    for kind in KINDS:
        lines.append(f"  {kind:22s} " + "  ".join(f"{v} {c[(kind, v)]:3d}" for v in VERDICTS)
                     + (f"  error {c[(kind, 'error')]}" if c[(kind, "error")] else ""))
    for pattern in ("comprehension", "factualness", "specificity", "inference", "other_option", "other"):
        m = sum(c[(pattern, v)] for v in VERDICTS + ("error",))
        if m:
            lines.append(f"    wrong, {pattern:14s} caught {c[(pattern, 'unsupported')]:2d} / {m}")
    fa, caught = c[("right_answer", "unsupported")] / n, c[("hallucinated_answer", "unsupported")] / n
    fa_s = c[("right_answer_sentence", "unsupported")] / n
    lines.append(f"  gold spans flagged {fa:.1%}, right sentences flagged {fa_s:.1%}, wrong answers caught {caught:.1%}; "
                 f"balanced accuracy (spans vs wrong) {(1 - fa + caught) / 2:.3f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", help="Comma-separated sets to measure (default: all).")
    p.add_argument("--show", action="store_true", help="List every wrong answer not caught and every false alarm.")
    args = p.parse_args(argv)
    if not HOTPOT.exists():
        print(f"skipped: {HOTPOT} is absent (the project's shared datasets folder)", file=sys.stderr)
        return 0
    judge = OfflineJudge()
    print(f"judge {judge.identity}")
    rows = cases(set(args.sets.split(",")) if args.sets else None)
    sets = tally(rows, judge, args.show)
    total: Counter = Counter()
    for name in sorted(sets):
        print("\n".join(report(name, sets[name])))
        total.update(sets[name])
    if len(sets) > 1:
        print("\n".join(report("all", total)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
