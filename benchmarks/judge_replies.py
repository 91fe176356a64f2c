#!/usr/bin/env python
"""Replies as a run scores them: the abstention detector first, then the offline judge on what it reads as an answer.

    python benchmarks/judge_replies.py            # every set of the file
    python benchmarks/judge_replies.py --show     # also each refusal counted as a hallucination, each missed error
    python benchmarks/judge_replies.py --abstention-model none   # the abstention rules alone (before 2026-12-06's default)

Reads ``tests/judges/data/judge_replies_held_out.jsonl``: replies of RAG assistants with the 2-3 passages they were
given, labelled ``abstained`` (the passages do not answer and the reply declines: in as many wordings as its writer
could find, a question back, a request for a document, a referral), ``supported`` (a correct answer, some with a
question or a suggestion to the reader) or ``unsupported`` (an answer with at least one part the passages do not
back: an invented fee, phone number, form, step of a procedure). Written by helpers that had read neither the judge,
the abstention rules, their tests nor any case set (sets S1 to S6, 60 each, en/zh 30/30; each pair measured one
round of judge v14 once and was the next round's development data: S1 + S2 the first, S3 + S4 the second, S5 + S6
the third and last).

What a run does with a reply (``evalkit run``, ``evalkit score``): a reply the detector (the rules, then the learned
stage, on by default) reads as a refusal is not
judged; any other is judged claim by claim, and its verdict is its worst claim's (``unsupported`` if any claim is,
else ``unverified`` if any is, else ``supported``; ``none`` when no claim was checkable: counted apart, in no rate).
Prints, per set and label, how many replies end as each: a refusal that ends ``unsupported`` is counted as a
hallucination; a correct answer that ends ``unsupported`` is a false alarm; an erroneous one that ends ``unsupported``
is caught, ``unverified`` or ``none`` is left to a person, ``supported`` is missed.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from evalkit.judges.offline import OfflineJudge
from evalkit.models.abstention import DEFAULT, OFF, detect

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "judges" / "data" / "judge_replies_held_out.jsonl"
OUTCOMES = ("abstained", "unsupported", "unverified", "supported", "none")


def outcome(judge: OfflineJudge, row: dict, model: str | None = DEFAULT) -> tuple[str, list[tuple[str, str, str]]]:
    """What a run makes of the reply (one of :data:`OUTCOMES`), and its claims' verdicts and reasons; ``model``: the
    learned abstention stage read after the rules (the default's), None or ``none`` for the rules alone."""
    if detect(row["answer"], model=model, question=row.get("question")).abstained:
        return "abstained", []
    r = judge.judge(row["question"], row["answer"], [(e["id"], e["text"]) for e in row["evidence"]])
    if r.error:
        raise RuntimeError(f"{row['id']}: the judge failed: {r.error}")
    claims = [(c.verdict, c.claim, c.reason) for c in r.claims]
    for v in ("unsupported", "unverified", "supported"):
        if any(c.verdict == v for c in r.claims):
            return v, claims
    return "none", claims


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=DATA, help=f"Labelled replies with their passages (default: {DATA}).")
    p.add_argument("--show", action="store_true", help="List refusals counted as hallucinations and errors not caught.")
    p.add_argument("--sets", default="", help="Only these sets, comma-separated (S5,S6: the sets no rule was "
                   "developed on; default: every set).")
    p.add_argument("--abstention-model", default=DEFAULT, help=f"The learned abstention stage after the rules, as a "
                   f"run reads replies (default: {DEFAULT}); {OFF}: the rules alone.")
    args = p.parse_args(argv)
    judge = OfflineJudge()
    rows = [json.loads(x) for x in args.data.read_text(encoding="utf-8").splitlines() if x.strip()]
    if args.sets:
        rows = [r for r in rows if r["id"].split("-")[0] in args.sets.split(",")]
    print(f"judge {judge.identity}; abstention: rules + {args.abstention_model}; {len(rows)} replies in {args.data.name}")
    tally: dict[str, Counter] = {}
    for row in rows:
        got, claims = outcome(judge, row, args.abstention_model)
        for group in (row["id"].split("-")[0], "all"):
            tally.setdefault(group, Counter())[(row["label"], got)] += 1
        if args.show and ((row["label"] == "abstained" and got == "unsupported")
                          or (row["label"] == "unsupported" and got != "unsupported")):
            print(f"  {row['id']} ({row['label']} -> {got}): {row['answer'][:140]}")
            for v, c, why in claims:
                print(f"      {v:13s} {c[:90]} | {why[:90]}")
    print(f"\n{'set':4s} {'label':12s} " + " ".join(f"{o:>11s}" for o in OUTCOMES) + "      n")
    for group in sorted(tally, key=lambda g: (g == "all", g)):
        for label in ("abstained", "supported", "unsupported"):
            c = tally[group]
            n = sum(v for (lab, _), v in c.items() if lab == label)
            print(f"{group:4s} {label:12s} " + " ".join(f"{c[(label, o)]:11d}" for o in OUTCOMES) + f"  {n:5d}")
    c = tally["all"]
    n = {lab: sum(v for (k, _), v in c.items() if k == lab) for lab in ("abstained", "supported", "unsupported")}
    print(f"\nrefusals counted as hallucinations: {c[('abstained', 'unsupported')]} of {n['abstained']}; "
          f"correct answers flagged unsupported: {c[('supported', 'unsupported')]} of {n['supported']}; "
          f"erroneous answers caught: {c[('unsupported', 'unsupported')]} of {n['unsupported']} "
          f"({c[('unsupported', 'unverified')] + c[('unsupported', 'none')]} left unverified or with no verdict, "
          f"{c[('unsupported', 'supported')]} supported, {c[('unsupported', 'abstained')]} read as refusals)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
