#!/usr/bin/env python
"""Claim-support judges side by side: how well each registered backend tells supported
answers from answers with one planted error, and how fast.

    python benchmarks/judges.py                    # every registered judge, both data sets
    python benchmarks/judges.py --judge offline --cv --rgb-questions 0
    python benchmarks/judges.py --llm judge_llm.yaml --limit 40 --rgb-questions 10   # + llm, ragas

What it does:

1. Reads ``benchmarks/data/judge_cases.jsonl`` (written for evalkit: 216 cases, half
   Chinese, half English, half supported, half with one planted error of six kinds) and
   ``benchmarks/data/judge_paraphrases.jsonl`` (realistic paraphrased answers to the demo's
   questions, correct and wrong, written after the judge was frozen: see the ``split``
   field; ``dev`` cases were the only ones looked at before the numbers were final, the
   ``test`` split is the reported figure). Evidence of a paraphrase case is given by
   document id and read from ``eval_sets/corpora/demo_kb.jsonl``.
2. Builds the demo's reference answers as supported cases judged against the texts of
   their gold documents (``judge_data.reference_cases``; and once more with each
   document's title prepended, as ``evalkit run``'s passages have it): a flag is a false
   alarm on a correct answer.
3. Builds each judge in ``evalkit.judges.JUDGES`` (a backend that cannot be built here,
   e.g. an LLM judge with no endpoint configured, is reported as skipped) and runs it.
   ``--llm FILE.yaml`` (an ``LLMSpec``: ``{backend: local, max_tokens: 256}`` or an
   OpenAI-compatible endpoint) configures the ``llm`` and ``ragas`` judges; their LLM
   cache is a fresh temporary folder unless ``--llm-cache`` names one, so the cost shown
   is a first run's (a repeated run with the same cache costs no model call).
   ``--limit N`` judges a seeded subset of at most N cases per data set, scenarios kept
   whole (a supported answer and its planted-error twins share evidence), drawn
   round-robin over language and error type; every judge sees the same subset.
4. With ``--cv`` also reports the offline judge's *out-of-fold* numbers on the judge set:
   its thresholds chosen by 5-fold cross-validation grouped by scenario, each case judged
   with thresholds it did not help choose (the honest estimate; the shipped defaults were
   fitted on the whole set).
5. When ``../shared/datasets/rgb_zh_refine/zh_refine.json`` exists beside the repository
   (RGB, CC BY-NC-SA 4.0: read at run time, never copied into the repository), turns a
   seeded sample of its questions into cases at run time (``judge_data.rgb_cases``:
   evidence = up to two positive passages that contain the gold answer plus one
   hard-negative passage as a distractor; the supported answer is the question rewritten
   as a statement with the gold answer; planted errors of the six kinds where they apply).
   Absent: says so and skips it.
6. Prints, per data set and judge: balanced accuracy, precision and recall of
   "unsupported", false-alarm rate on supported answers (overall, per language and per
   kind), recall per error type, not-checkable claim counts, and speed (answers/s,
   ms/answer); for judges that call an LLM, the cost per answer: calls, cache hits,
   tokens in/out, corrective retries, failed calls and seconds. The reference answers
   flagged are listed with the judge's reason.
7. Checks the offline judge against ``TARGETS`` (the issues' targets, and no error type
   worse than ``BEFORE``, the recall per type measured before issue 13's changes).

An answer counts as "unsupported" when any of its claims is; ``not_checkable`` claims are
counted separately. Exit code 0 (1 with ``--strict`` when the offline judge misses a
target).

The reference-answer figure is also measured through ``evalkit score``, the command a
user runs on their own answers: ``benchmarks/reference_score.py`` writes the reference
answers as an answers file (``answer`` = ``reference_answer``, ``retrieved`` = the gold
document ids) and runs ``evalkit score --answers FILE --eval-set
eval_sets/demo_kb.jsonl@v1 --name reference``; its flagged answers are the ones listed
here (same judge, same evidence: the gold documents' texts).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "benchmarks" / "data" / "judge_cases.jsonl"
PARAPHRASES = REPO / "benchmarks" / "data" / "judge_paraphrases.jsonl"
RGB = REPO.parent / "shared" / "datasets" / "rgb_zh_refine" / "zh_refine.json"
# the issues' targets for the offline judge: data set -> (row, metric, bound, ">=" or "<=")
TARGETS = {
    "judge set": (("overall", "balanced_accuracy", 0.85, ">="), ("overall", "precision", 0.90, ">="),
                  ("overall", "false_alarm", 0.05, "<="), ("type=changed_number", "recall", 0.90, ">="),
                  ("type=changed_date", "recall", 0.90, ">="), ("type=entity_absent", "recall", 0.90, ">="),
                  ("type=negation,lang=en", "recall", 0.80, ">="), ("type=negation,lang=zh", "recall", 0.70, ">="),
                  ("type=extra_sentence", "recall", 0.75, ">=")),
    "judge set, out of fold": (("overall", "balanced_accuracy", 0.90, ">="),),
    "reference answers": (("overall", "false_alarm", 0.05, "<="),),
    "paraphrases, test split": (("overall", "balanced_accuracy", 0.80, ">="),),
}
# recall per error type on the judge set, out of fold, before issue 13 (offline/v2; reports/judges.md)
BEFORE = {"type=changed_number": 1.0, "type=changed_date": 1.0, "type=entity_absent": 0.95,
          "type=entity_present": 0.0, "type=negation": 1.0, "type=extra_sentence": 1.0}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--judge", action="append", help="Judge backend to run (repeatable; default: all registered).")
    p.add_argument("--cases", type=Path, default=CASES, help=f"Labelled judge cases (default: {CASES}).")
    p.add_argument("--paraphrases", type=Path, default=PARAPHRASES,
                   help=f"Labelled paraphrased answers to the demo questions (default: {PARAPHRASES}).")
    p.add_argument("--no-reference", action="store_true", help="Skip the demo's reference answers.")
    p.add_argument("--rgb", type=Path, default=RGB, help=f"RGB zh_refine file (default: {RGB}).")
    p.add_argument("--rgb-questions", type=int, default=100,
                   help="RGB questions to sample (0 skips RGB; default: 100).")
    p.add_argument("--seed", type=int, default=13, help="Seed for the RGB sample and planted errors.")
    p.add_argument("--cv", action="store_true", help="Also report the offline judge's out-of-fold (5-fold CV) numbers.")
    p.add_argument("--option", action="append", default=[], metavar="JUDGE.KEY=VALUE",
                   help="A judge option, e.g. offline.embedder=e5 (repeatable; values parsed as JSON when they can be).")
    p.add_argument("--llm", type=Path, metavar="FILE.yaml",
                   help="LLM spec (YAML) for the llm and ragas judges, e.g. {backend: local, max_tokens: 256}.")
    p.add_argument("--llm-cache", type=Path, metavar="DIR",
                   help="Cache root for the judges' LLM calls (default: a fresh temporary folder).")
    p.add_argument("--limit", type=int, default=0,
                   help="Judge at most N cases per data set (seeded, stratified; 0 = all).")
    p.add_argument("--json", type=Path, help="Also write every number to this JSON file.")
    p.add_argument("--strict", action="store_true", help="Exit 1 when the offline judge misses a target.")
    return p.parse_args(argv)


# --- subsets and cost -----------------------------------------------------------------------------
def subset(cases: list[Any], limit: int, seed: int) -> list[Any]:
    """At most ``limit`` cases: whole scenarios (cases sharing evidence), seeded, round-robin over
    (language, error type) so a small subset still covers every slice; original order kept."""
    if limit <= 0 or limit >= len(cases):
        return list(cases)
    groups: dict[Any, list[Any]] = {}
    for c in cases:
        groups.setdefault(c.evidence, []).append(c)
    buckets: dict[tuple[str, str], list[list[Any]]] = {}
    for g in groups.values():
        kind = next((c.error_type for c in g if c.error_type), "none")
        buckets.setdefault((g[0].lang, kind), []).append(g)
    rng = random.Random(seed)
    for key in sorted(buckets):
        rng.shuffle(buckets[key])
    order = sorted(buckets)
    rng.shuffle(order)
    chosen: list[Any] = []
    while any(buckets[k] for k in order):
        for k in order:
            if buckets[k]:
                g = buckets[k].pop()
                if len(chosen) + len(g) <= limit:
                    chosen += g
    keep = {c.id for c in chosen}
    return [c for c in cases if c.id in keep]


def predict_with_cost(judge: Any, cases: list[Any]) -> tuple[list[Any], dict[str, float]]:
    """``predict`` plus the LLM usage (every purpose) spent per case, summed and per answer."""
    import time

    from evalkit.judges.scoring import Prediction
    from evalkit.llm.usage import Usage, usage_scope

    out, total = [], Usage()
    for c in cases:
        with usage_scope() as spent:
            t0 = time.perf_counter()
            r = judge.judge(c.question, c.answer, c.evidence)
            dt = time.perf_counter() - t0
        for u in spent.values():
            total.add(u)
        out.append(Prediction(c, r, dt))
    n = max(1, len(cases))
    seconds = sum(p.seconds for p in out)
    cost = {"answers": len(cases), "llm_calls": total.calls, "cache_hits": total.cache_hits,
            "tokens_in": total.tokens_in, "tokens_out": total.tokens_out, "retries": total.retries,
            "failed_calls": total.failures, "seconds": round(seconds, 3),
            "calls_per_answer": round(total.calls / n, 2), "tokens_per_answer": round(
                (total.tokens_in + total.tokens_out) / n, 1), "seconds_per_answer": round(seconds / n, 3)}
    return out, cost


def print_cost(costs: dict[str, dict[str, float]]) -> None:
    """One line per judge that called an LLM."""
    for name, c in costs.items():
        if c["llm_calls"]:
            print(f"{name}: cost per answer {c['calls_per_answer']} LLM calls, {c['tokens_per_answer']} tokens "
                  f"({c['tokens_in']} in / {c['tokens_out']} out over {c['answers']} answers), "
                  f"{c['seconds_per_answer']:.2f} s; cache hits {c['cache_hits']}, corrective retries "
                  f"{c['retries']}, failed calls {c['failed_calls']}")


# --- running and printing ----------------------------------------------------------------------
def _options(raw: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in raw:
        key, _, value = item.partition("=")
        judge, _, opt = key.partition(".")
        try:
            parsed: Any = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        out.setdefault(judge, {})[opt] = parsed
    return out


def _fmt(v: float | None) -> str:
    return "  -  " if v is None else f"{v:.3f}"


def print_table(title: str, columns: dict[str, dict[str, Any]]) -> None:
    """One block per data set: a row per slice, a column group per judge."""
    print(f"\n## {title}")
    names = list(columns)
    head = f"{'slice':30s}" + "".join(f" | {n[:35]:^35s}" for n in names)
    print(head)
    print(f"{'':30s}" + " | bal.acc  prec  recall  f.alarm   n  " * len(names))
    rows = list(next(iter(columns.values()))["rows"])
    for row in rows:
        line = f"{row:30s}"
        for n in names:
            m = columns[n]["rows"].get(row)
            if m is None:
                line += f" | {'':35s}"
                continue
            typed = row.startswith("type=")
            line += (f" | {'' if typed else _fmt(m.balanced_accuracy):>6s} {'' if typed else _fmt(m.precision):>5s}"
                     f" {_fmt(m.recall):>6s} {'' if typed else _fmt(m.false_alarm):>7s} {m.n if not typed else m.tp + m.fn:4d}  ")
        print(line)
    for n in names:
        c = columns[n]
        o = c["rows"]["overall"]
        speed = (f"{o.n / o.seconds:.3g} answers/s, {1000 * o.seconds / o.n:.1f} ms/answer" if o.seconds else "n/a")
        print(f"{n}: not_checkable claims {o.not_checkable}, answers with no checkable claim "
              f"{o.all_not_checkable}, judge errors {o.errors}; speed {speed}")


def _missed(rows: dict[str, Any], targets: tuple[tuple[str, str, float, str], ...]) -> tuple[list[str], list[str]]:
    """(missed targets, targets whose slice is absent from the data)."""
    absent = [f"{r} {k}" for r, k, _, _ in targets if r not in rows]
    missed = [f"{r} {k} {_fmt(getattr(rows[r], k))} (target {op} {b})" for r, k, b, op in targets
              if r in rows and (getattr(rows[r], k) is None
                                or (getattr(rows[r], k) < b if op == ">=" else getattr(rows[r], k) > b))]
    return missed, absent


def _datasets(args: argparse.Namespace) -> list[tuple[str, str, list[Any]]]:
    """(target key, title, cases) per data set, in print order."""
    from judge_data import DEMO_CORPUS, reference_cases, rgb_cases

    from evalkit.judges.scoring import load_cases

    cases = load_cases(args.cases)
    out = [("judge set", f"judge set ({args.cases.name}: {len(cases)} cases)", cases)]
    if not args.no_reference:
        ref = reference_cases()
        out.append(("reference answers", f"demo reference answers vs their gold documents' texts ({len(ref)} "
                    "correct answers: every flag is a false alarm)", ref))
        out.append(("reference answers, titles", "demo reference answers vs title + text of their gold documents "
                    "(as evalkit run shows passages)", reference_cases(titles=True)))
    if args.paraphrases.exists():
        para = load_cases(args.paraphrases, corpus=DEMO_CORPUS)
        split = {json.loads(x)["id"]: json.loads(x).get("split") for x in
                 args.paraphrases.read_text(encoding="utf-8").splitlines() if x.strip()}
        for name in ("dev", "test", "held_out", "held_out2", "held_out3", "held_out4"):
            sub = [c for c in para if split.get(c.id) == name]
            if sub:
                out.append((f"paraphrases, {name} split", f"paraphrased answers, {name} split "
                            f"({args.paraphrases.name}: {len(sub)} cases)", sub))
    if args.rgb_questions > 0:
        if args.rgb.exists():
            rgb = rgb_cases(args.rgb, args.rgb_questions, args.seed)
            out.append(("rgb", f"RGB zh_refine, built at run time ({len(rgb)} cases from {args.rgb_questions} "
                        "sampled questions)", rgb))
        else:
            print(f"RGB data not found at {args.rgb}: skipping it (see ../shared/datasets/rgb_zh_refine/SOURCE.md)")
    return out


def _judges(args: argparse.Namespace) -> dict[str, Any]:
    from evalkit.judges import JUDGES, make_judge

    opts = _options(args.option)
    llm_opts: dict[str, Any] = {}
    if args.llm is not None:
        import tempfile

        from evalkit.llm.base import LLMSpec

        spec = LLMSpec.from_yaml(args.llm)
        root = args.llm_cache or Path(tempfile.mkdtemp(prefix="evalkit-judge-bench-"))
        llm_opts = {"llm": spec, "cache_root": root}
        print(f"LLM for the llm/ragas judges: {spec.identity()}; LLM cache {root}")
    judges = {}
    for name in args.judge or list(JUDGES):
        if name in ("llm", "ragas") and not llm_opts:
            print(f"judge '{name}' skipped: it needs an LLM (--llm FILE.yaml)")
            continue
        try:
            judges[name] = make_judge(name, **(llm_opts if name in ("llm", "ragas") else {}), **opts.get(name, {}))
        except Exception as e:  # noqa: BLE001 - a backend that needs configuration we do not have
            print(f"judge '{name}' skipped: {type(e).__name__}: {e}")
    return judges


def run(args: argparse.Namespace) -> int:
    from evalkit.judges import JUDGES
    from evalkit.judges.scoring import cross_validate, median_thresholds, report_rows

    datasets = _datasets(args)
    if args.limit > 0:
        datasets = [(key, f"{title}; subset of {len(sub)} cases (--limit {args.limit}, seed {args.seed})", sub)
                    for key, title, data in datasets for sub in [subset(data, args.limit, args.seed)]]
    judges = _judges(args)
    if not judges:
        print("no judge could be built; registered: " + ", ".join(JUDGES))
        return 2
    dump: dict[str, Any] = {}
    verdicts: list[str] = []
    for key, title, data in datasets:
        columns: dict[str, dict[str, Any]] = {}
        costs: dict[str, dict[str, float]] = {}
        checked: dict[str, dict[str, Any]] = {}
        flagged: list[Any] = []
        for name, judge in judges.items():
            preds, cost = predict_with_cost(judge, data)
            rows = report_rows(preds)
            columns[f"{name} [{judge.identity}]"] = {"rows": rows, "cost": cost}
            costs[name] = cost
            if name == "offline":
                checked[key] = rows
                if key.startswith("reference"):
                    flagged = [p for p in preds if p.flagged]
            if args.cv and name == "offline" and key == "judge set":
                cv = cross_validate(judge, data)
                columns[f"{name} (5-fold CV, out-of-fold)"] = {"rows": report_rows(cv.predictions)}
                checked["judge set, out of fold"] = columns[f"{name} (5-fold CV, out-of-fold)"]["rows"]
                print(f"CV thresholds per fold: {cv.fold_thresholds}; median {median_thresholds(cv.fold_thresholds)}")
        print_table(title, columns)
        print_cost(costs)
        if key.startswith("reference") and "offline" in judges:
            print(f"offline: {len(flagged)} of {len(data)} correct reference answers flagged unsupported")
            for p in flagged:
                why = "; ".join(c.reason for c in p.result.claims if c.verdict == "unsupported")
                print(f"  flagged {p.case.id} ({p.case.kind}): {p.case.answer}\n      {why}")
        dump[title] = {n: {r: m.as_dict() | {"seconds": m.seconds} for r, m in c["rows"].items()}
                       | ({"cost": c["cost"]} if "cost" in c else {}) for n, c in columns.items()}
        for target_key, rows in checked.items():
            targets = TARGETS.get(target_key, ())
            if target_key.startswith("judge set, out of fold"):
                targets = targets + tuple((r, "recall", v, ">=") for r, v in BEFORE.items())
            if not targets:
                continue
            missed, absent = _missed(rows, targets)
            where = " (on a subset)" if args.limit > 0 else ""
            line = (f"offline judge vs targets, {target_key}{where}: "
                    + ("all met" if not missed else "MISSED: " + "; ".join(missed))
                    + (f"; not checked (no such case in the data): {', '.join(absent)}" if absent else ""))
            verdicts.append(line)
            print("\n" + line)
    if verdicts:
        print("\n## summary\n" + "\n".join(verdicts))
    if args.json:
        args.json.write_text(json.dumps(dump, indent=2, ensure_ascii=False))
    return 1 if args.strict and any("MISSED" in v for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(run(parse_args()))
