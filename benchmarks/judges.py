#!/usr/bin/env python
"""Claim-support judges side by side: how well each registered backend tells supported
answers from answers with one planted error, and how fast.

    python benchmarks/judges.py                    # every registered judge, both data sets
    python benchmarks/judges.py --judge offline --cv --rgb-questions 0
    python benchmarks/judges.py --llm judge_llm.yaml --limit 40 --rgb-questions 10   # + llm, ragas

What it does:

1. Reads ``benchmarks/data/judge_cases.jsonl`` (written for evalkit: 216 cases, half
   Chinese, half English, half supported, half with one planted error of six kinds).
2. Builds each judge in ``evalkit.judges.JUDGES`` (a backend that cannot be built here,
   e.g. an LLM judge with no endpoint configured, is reported as skipped) and runs it.
   ``--llm FILE.yaml`` (an ``LLMSpec``: ``{backend: local, max_tokens: 256}`` or an
   OpenAI-compatible endpoint) configures the ``llm`` and ``ragas`` judges; their LLM
   cache is a fresh temporary folder unless ``--llm-cache`` names one, so the cost shown
   is a first run's (a repeated run with the same cache costs no model call).
   ``--limit N`` judges a seeded subset of at most N cases per data set, scenarios kept
   whole (a supported answer and its planted-error twins share evidence), drawn
   round-robin over language and error type; every judge sees the same subset.
3. With ``--cv`` also reports the offline judge's *out-of-fold* numbers: its thresholds
   chosen by 5-fold cross-validation grouped by scenario, each case judged with
   thresholds it did not help choose (the honest estimate; the shipped defaults were
   fitted on the whole set).
4. When ``../shared/datasets/rgb_zh_refine/zh_refine.json`` exists beside the repository
   (RGB, CC BY-NC-SA 4.0: read at run time, never copied into the repository), turns a
   seeded sample of its questions into cases at run time: evidence = up to two positive
   passages that contain the gold answer plus one hard-negative passage as a distractor;
   the supported answer is the question rewritten as a statement with the gold answer
   (``2023年世界人工智能大会在上海举办。``); planted errors, where they apply: the
   answer's number changed (changed_number) or its date moved (changed_date), the answer
   swapped for another question's answer absent from the evidence (entity_absent) or for
   a name of the same part of speech that IS in the evidence (entity_present), the
   statement negated (``...不是...``, negation), and a sentence from another question's
   passages appended (extra_sentence). Absent: says so and skips it.
5. Prints, per data set and judge: balanced accuracy, precision and recall of
   "unsupported", false-alarm rate on supported answers (overall and per language),
   recall per error type, not-checkable claim counts, and speed (answers/s, ms/answer);
   for judges that call an LLM, the cost per answer: calls, cache hits, tokens in/out,
   corrective retries, failed calls and seconds.

An answer counts as "unsupported" when any of its claims is; ``not_checkable`` claims are
counted separately. Exit code 0 (1 with ``--strict`` when the offline judge misses a
target of ``TARGETS`` on the judge set).
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "benchmarks" / "data" / "judge_cases.jsonl"
RGB = REPO.parent / "shared" / "datasets" / "rgb_zh_refine" / "zh_refine.json"
# the targets for the offline judge on the judge set: (row, metric, bound, ">=" or "<=")
TARGETS = (("overall", "balanced_accuracy", 0.85, ">="), ("overall", "precision", 0.90, ">="),
           ("overall", "false_alarm", 0.05, "<="), ("type=changed_number", "recall", 0.90, ">="),
           ("type=changed_date", "recall", 0.90, ">="), ("type=entity_absent", "recall", 0.90, ">="),
           ("type=negation,lang=en", "recall", 0.80, ">="), ("type=negation,lang=zh", "recall", 0.70, ">="),
           ("type=extra_sentence", "recall", 0.75, ">="))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--judge", action="append", help="Judge backend to run (repeatable; default: all registered).")
    p.add_argument("--cases", type=Path, default=CASES, help=f"Labelled judge cases (default: {CASES}).")
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


# --- RGB zh_refine -> judge cases, at run time ---------------------------------------------------
_QWORDS = ("什么时候", "何时", "哪一年", "哪里", "哪儿", "哪个", "哪些", "哪位", "哪家", "哪", "什么", "多少", "几", "谁")


def _clean(query: str) -> str:
    return re.sub(r"[？?。!！\s]+$", "", query.strip()).removesuffix("吗").removesuffix("呢")


def _statement(query: str, answer: str) -> str:
    """The question as a statement with ``answer`` in place of its question word."""
    q = _clean(query)
    for w in _QWORDS:
        i = q.find(w)
        if i >= 0:
            before, after = q[:i], q[i + len(w):]
            if after[:1] and answer.endswith(after[0]):
                after = after[1:]  # 在哪个组 + E组: not "E组组"
            sep = " " if before[-1:].isdigit() and answer[:1].isdigit() else ""
            return f"{before}{sep}{answer}{after}。"
    return f"{q}是{answer}。"


def _negated(query: str, answer: str) -> str:
    """A statement that the gold answer is NOT the answer (the evidence says it is)."""
    return f"{answer}不是“{_clean(query)}”的答案。"


def _gold(answer: list[Any], positives: list[str]) -> str | None:
    if len(answer) != 1:
        return None  # several required answers (a list of countries): not a one-claim answer
    alts = answer[0] if isinstance(answer[0], list) else [answer[0]]
    return next((str(a) for a in alts if any(str(a) in p for p in positives)), None)


def _changed(answer: str, evidence: str, rng: random.Random) -> tuple[str, str] | None:
    """(error type, changed answer) for a number or date answer; None when it has neither."""
    from evalkit.judges.dates import find_dates

    if find_dates(answer):
        m = re.search(r"(\d{1,2})(日|号)", answer) or re.search(r"(\d{1,2})(月)", answer) or re.search(r"(\d{4})(年)", answer)
        if not m:
            return None
        v = int(m.group(1))
        for new in ([v % 28 + 3, v % 28 + 5] if m.group(2) in "日号" else [v % 12 + 1, v % 12 + 2]
                    if m.group(2) == "月" else [v - 1, v + 1]):
            out = answer[:m.start(1)] + str(new) + answer[m.end(1):]
            if out not in evidence:
                return "changed_date", out
        return None
    m = re.search(r"\d+(?:\.\d+)?", answer)
    if not m:
        return None
    s = m.group(0)
    v, dec = float(s), len(s.split(".")[1]) if "." in s else 0
    for factor in (1.3, 0.7, 1.6):
        new = round(v * factor, dec) if dec else max(round(v * factor), int(v) + 1 + rng.randrange(3))
        new_s = f"{new:.{dec}f}" if dec else str(int(new))
        out = answer[:m.start()] + new_s + answer[m.end():]
        if new_s != s and out not in evidence:
            return "changed_number", out
    return None


def rgb_cases(path: Path, n_questions: int, seed: int) -> list[Any]:
    """Supported / planted-error cases built from a seeded sample of RGB zh_refine questions."""
    from evalkit.judges.claims import split_sentences
    from evalkit.judges.scoring import JudgeCase
    from evalkit.judges.values import _posseg

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng = random.Random(seed)
    usable = []
    for r in rows:
        gold = _gold(r["answer"], r["positive"])
        if gold:
            usable.append((r, gold))
    rng.shuffle(usable)
    usable = usable[:n_questions]
    names = {"nr", "nrt", "nrfg", "ns", "nt", "nz"}
    out: list[JudgeCase] = []
    for i, (r, gold) in enumerate(usable):
        pos = [p for p in r["positive"] if gold in p][:2]
        neg = [p for p in r["negative"] if gold not in p][:1]
        passages = pos + neg
        evidence = tuple((f"rgb{r['id']}-{k}", p) for k, p in enumerate(passages))
        ev_text = " ".join(passages)
        q = r["query"]
        cases = [("supported", None, _statement(q, gold))]
        ch = _changed(gold, ev_text, rng)
        if ch:
            cases.append(("unsupported", ch[0], _statement(q, ch[1])))
        elif not re.search(r"\d", gold):
            tags = {f for w, f in _posseg(gold) if f in names}
            others = [g for rr, g in usable if rr is not r and not re.search(r"\d", g) and g not in ev_text
                      and g not in q and (not tags or tags & {f for _, f in _posseg(g)})]
            if others:
                cases.append(("unsupported", "entity_absent", _statement(q, others[i % len(others)])))
            present = [w for w, f in _posseg(" ".join(pos)) if f in (tags or names) and len(w) >= 2
                       and w not in gold and gold not in w and w not in q]
            if present:
                cases.append(("unsupported", "entity_present", _statement(q, present[0])))
        cases.append(("unsupported", "negation", _negated(q, gold)))
        other = usable[(i + 1) % len(usable)][0]
        extra = [s for p in other["positive"] for s in split_sentences(p)
                 if 15 <= len(s) <= 80 and re.search(r"[\u4e00-\u9fff]", s) and s not in ev_text]
        if extra:
            cases.append(("unsupported", "extra_sentence", _statement(q, gold) + extra[0]))
        for label, et, answer in cases:
            out.append(JudgeCase(f"rgb{r['id']}-{len(out)}-{'s' if et is None else 'u'}", "zh", q, evidence,
                                 answer, label, et))
    return out


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


def run(args: argparse.Namespace) -> int:
    from evalkit.judges import JUDGES, make_judge
    from evalkit.judges.scoring import (
        cross_validate,
        load_cases,
        median_thresholds,
        report_rows,
    )

    cases = load_cases(args.cases)
    datasets = [(f"judge set ({args.cases.name}: {len(cases)} cases)", cases)]
    if args.rgb_questions > 0:
        if args.rgb.exists():
            rgb = rgb_cases(args.rgb, args.rgb_questions, args.seed)
            title = f"RGB zh_refine, built at run time ({len(rgb)} cases from {args.rgb_questions} sampled questions)"
            datasets.append((title, rgb))
        else:
            print(f"RGB data not found at {args.rgb}: skipping it (see ../shared/datasets/rgb_zh_refine/SOURCE.md)")
    if args.limit > 0:
        datasets = [(f"{title}; subset of {len(sub)} cases (--limit {args.limit}, seed {args.seed})", sub)
                    for title, data in datasets for sub in [subset(data, args.limit, args.seed)]]
        cases = datasets[0][1]
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
    if not judges:
        print("no judge could be built; registered: " + ", ".join(JUDGES))
        return 2
    dump: dict[str, Any] = {}
    status = 0
    for title, data in datasets:
        columns: dict[str, dict[str, Any]] = {}
        costs: dict[str, dict[str, float]] = {}
        for name, judge in judges.items():
            preds, cost = predict_with_cost(judge, data)
            columns[f"{name} [{judge.identity}]"] = {"rows": report_rows(preds), "cost": cost}
            costs[name] = cost
            if args.cv and name == "offline" and data is cases:
                cv = cross_validate(judge, data)
                columns[f"{name} (5-fold CV, out-of-fold)"] = {"rows": report_rows(cv.predictions)}
                print(f"CV thresholds per fold: {cv.fold_thresholds}; median {median_thresholds(cv.fold_thresholds)}")
        print_table(title, columns)
        print_cost(costs)
        dump[title] = {n: {r: m.as_dict() | {"seconds": m.seconds} for r, m in c["rows"].items()}
                       | ({"cost": c["cost"]} if "cost" in c else {}) for n, c in columns.items()}
        if data is cases and "offline" in judges:
            rows = next(c["rows"] for n, c in columns.items() if n.startswith("offline ["))
            # a --limit subset may hold no case of a slice: that target is not checked, not missed
            absent = [f"{r} {k}" for r, k, _, _ in TARGETS if r not in rows]
            missed = [f"{r} {k} {_fmt(getattr(rows[r], k))} (target {op} {b})" for r, k, b, op in TARGETS
                      if r in rows and (getattr(rows[r], k) is None
                                        or (getattr(rows[r], k) < b if op == ">=" else getattr(rows[r], k) > b))]
            where = f" (on a {len(cases)}-case subset)" if args.limit > 0 else ""
            print(f"\noffline judge vs targets{where}: " + ("all met" if not missed else "MISSED: " + "; ".join(missed))
                  + (f"; not checked (no such case in the data): {', '.join(absent)}" if absent else ""))
            status = 1 if (missed and args.strict) else status
    if args.json:
        args.json.write_text(json.dumps(dump, indent=2, ensure_ascii=False))
    return status


if __name__ == "__main__":
    sys.exit(run(parse_args()))
