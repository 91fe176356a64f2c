#!/usr/bin/env python
"""Offline judge throughput: ms per answer on the bundled judge cases or on deploy-gate answers, old vs new.

    python benchmarks/judge_speed.py                       # 3 timed passes over the 216 judge cases
    python benchmarks/judge_speed.py --judge offline --passes 5 --markdown
    python benchmarks/judge_speed.py --set deploy-gate --compare     # issue 34: with and without the sharing

What it does:

1. Reads the answers to judge. ``--set judge-cases`` (default): ``benchmarks/data/judge_cases.jsonl``
   (216 cases, half English, half Chinese; each an answer and its evidence). ``--set deploy-gate``:
   answers as the deploy-gate benchmark's two generating variants give them
   (``benchmarks/deploy_gate_scale.py``): the seeded bilingual corpus of ``deploy_gate_data``
   (``--passages``, ``--queries``; 70% English, 30% Chinese, Zipf words), for each query the top 3 and
   the top 5 passages by query words weighted by inverse document frequency (a stand-in for the RRF
   and BM25 retrievers: no index or model is loaded), and the extractive generator's answer from
   them: its two best sentences by the share of query terms (``evalkit.llm.extractive`` without its
   e5 cosine), each followed by its citation. ``--set multidoc``: the multi-document answers of
   ``tests/judges/data/judge_multidoc*.jsonl`` (1,178 answers).
2. Builds the judge with ``evalkit.judges.make_judge`` (default ``offline``) and judges one answer
   per language untimed, so jieba's dictionaries, the stemmer and the word lists load outside the figures.
3. Judges every answer ``--passes`` times, one at a time, as a run does: the answer against its
   evidence, then, when it has verdicts, each checkable claim against the passages it cites
   (``evalkit.judges.citation_support``: on deploy-gate answers the "three calls per answer").
   Every text cache of the judge is emptied before each pass (``evalkit.text.memo.clear_caches``),
   so a pass is a first sight of its texts; within a pass, passages shared by answers hit the caches,
   as in a run. ``--keep-caches`` measures repeated texts instead.
4. ``--compare``: every pass twice, alternately, with the sharing of ``evalkit.text.memo`` off
   (**old**: jieba's own part-of-speech decoder, every passage re-read for every value, the prefix
   scan of ``term_found``: the judge's code path before issue 34) and on (**new**), and prints both.
   Both give the same verdicts (``tests/judges/test_sharing.py``); this script also checks that the
   verdicts of the two runs are equal.
5. Prints per language and overall: answers, claims, judge calls, ms per answer (median pass; wall and
   CPU of this process), answers/s, and the spread over passes, with the load average before and after.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_common import REPO, table

CASES = REPO / "benchmarks" / "data" / "judge_cases.jsonl"
SETS = ("judge-cases", "deploy-gate", "multidoc")
Answer = tuple[str, str, str, list[tuple[str, str]]]  # (language, question, answer, evidence)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--judge", default="offline", help="Judge backend (default: offline).")
    p.add_argument("--set", dest="which", choices=SETS, default="judge-cases", help="Answers to judge (see above).")
    p.add_argument("--cases", type=Path, default=CASES, help=f"Judge cases of --set judge-cases (default: {CASES}).")
    p.add_argument("--passages", type=int, default=2000, help="Deploy-gate corpus size (default: 2000).")
    p.add_argument("--queries", type=int, default=200, help="Deploy-gate queries (default: 200; 2 answers each).")
    p.add_argument("--passes", type=int, default=3, help="Timed passes over the answers (default: 3).")
    p.add_argument("--compare", action="store_true", help="Time every pass with the sharing off (old) and on (new).")
    p.add_argument("--keep-caches", action="store_true",
                   help="Do not clear the judge's text caches between passes (repeated texts).")
    p.add_argument("--markdown", action="store_true", help="Print the table as Markdown.")
    return p.parse_args(argv)


def judge_case_answers(path: Path) -> list[Answer]:
    from evalkit.judges.scoring import load_cases

    return [(c.lang, c.question, c.answer, list(c.evidence)) for c in load_cases(path)]


def multidoc_answers() -> list[Answer]:
    out = []
    for path in sorted((REPO / "tests" / "judges" / "data").glob("judge_multidoc*.jsonl")):
        for row in map(json.loads, filter(str.strip, path.read_text(encoding="utf-8").splitlines())):
            out.append((row["lang"], row["question"], row["answer"], [(e["id"], e["text"]) for e in row["evidence"]]))
    return out


def deploy_gate_answers(n_passages: int, n_queries: int, seed: int = 34, **corpus: Any) -> list[Answer]:
    """The two generating variants' answers (top 3 and top 5 passages) to each query (see step 1);
    ``corpus``: ``vocab`` and ``sizes`` of ``deploy_gate_data.bilingual_corpus`` (tests use a small vocabulary)."""
    from deploy_gate_data import bilingual_corpus

    from evalkit.text.sentences import split_sentences
    from evalkit.text.tokenize import Tokenizer

    data = bilingual_corpus(n_passages, n_queries, seed=seed, **corpus)
    tok = Tokenizer("auto")
    postings: dict[str, list[int]] = defaultdict(list)
    for i, text in enumerate(data["texts"]):
        for t in set(tok(text)):
            postings[t].append(i)
    width = len(str(n_passages))
    out: list[Answer] = []
    for question, lang in zip(data["queries"], data["query_langs"]):
        q_terms = set(tok(question))
        score: Counter[int] = Counter()
        for t in q_terms:
            for i in postings[t]:
                score[i] += math.log(n_passages / len(postings[t]))
        ranked = sorted(score, key=lambda i: (-score[i], i))
        for k in (3, 5):
            evidence = [(f"d{i:0{width}d}", data["texts"][i]) for i in ranked[:k]]
            units = [(pid, s) for pid, text in evidence for s in split_sentences(text)]
            share = [len(q_terms & set(tok(s))) / max(1, len(q_terms)) for _, s in units]
            best = sorted(range(len(units)), key=lambda i: (-share[i], i))[:2]
            out.append((lang, question, "\n".join(f"{units[i][1]} [{units[i][0]}]" for i in best), evidence))
    return out


def judge_as_a_run(judge: Any, question: str, answer: str, evidence: list[tuple[str, str]]) -> tuple[Any, int]:
    """The answer's result and citation findings, judged as ``evalkit.run.query`` does; and the judge calls made."""
    from evalkit.judges.citation_support import judge_citations

    calls = [0]
    inner = judge.judge

    def counted(*args: Any) -> Any:
        calls[0] += 1
        return inner(*args)

    judge.judge = counted
    try:
        r = judge.judge(question, answer, evidence)
        findings = []
        if r.claims and r.error is None:
            findings = [f.to_dict() for f in judge_citations(judge, question, answer,
                                                             [(pid, pid, text) for pid, text in evidence], r)]
    finally:
        del judge.judge
    return (r.to_dict(), findings), calls[0]


def timed_pass(judge: Any, answers: list[Answer], clear: Callable[[], int] | None) -> tuple[dict[str, list[float]], list[Any]]:
    """One pass: per language and overall [answers, claims, calls, wall s, CPU s]; and every result."""
    if clear is not None:
        clear()
    acc: dict[str, list[float]] = {}
    results = []
    for lang, question, answer, evidence in answers:
        w0, c0 = time.perf_counter(), time.process_time()
        result, calls = judge_as_a_run(judge, question, answer, evidence)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        results.append(result)
        for key in (lang, "all"):
            a = acc.setdefault(key, [0, 0, 0, 0.0, 0.0])
            for j, x in enumerate((1, len(result[0]["claims"]), calls, wall, cpu)):
                a[j] += x
    return acc, results


def rows_of(label: str, passes: list[dict[str, list[float]]]) -> list[list[str]]:
    rows = []
    for key in ("en", "zh", "all"):
        if key not in passes[0]:
            continue
        n, claims, calls = (int(x) for x in passes[0][key][:3])
        wall = statistics.median(p[key][3] for p in passes)
        cpu = statistics.median(p[key][4] for p in passes)
        rows.append([f"{label}{key}", str(n), str(claims), str(calls), f"{1000 * wall / n:.1f}", f"{1000 * cpu / n:.1f}",
                     f"{n / wall:.1f}", ", ".join(f"{1000 * p[key][4] / n:.1f}" for p in passes)])
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from evalkit.judges import make_judge
    from evalkit.text.memo import clear_caches, sharing

    answers = {"judge-cases": lambda: judge_case_answers(args.cases), "multidoc": multidoc_answers,
               "deploy-gate": lambda: deploy_gate_answers(args.passages, args.queries)}[args.which]()
    judge = make_judge(args.judge)
    for on in (False, True):  # loading outside the figures, for both code paths
        with sharing(on):
            for lang in ("en", "zh"):
                first = next((a for a in answers if a[0] == lang), None)
                if first is not None:
                    judge_as_a_run(judge, first[1], first[2], first[3])
    modes = [("old ", False), ("new ", True)] if args.compare else [("", True)]
    timings: dict[str, list[dict[str, list[float]]]] = {label: [] for label, _ in modes}
    verdicts: dict[str, list[Any]] = {}
    load_before = os.getloadavg()
    for _ in range(args.passes):
        for label, on in modes:
            with sharing(on):
                acc, results = timed_pass(judge, answers, None if args.keep_caches else clear_caches)
            timings[label].append(acc)
            verdicts.setdefault(label, results)
    load_after = os.getloadavg()
    same = len({json.dumps(v, sort_keys=True) for v in verdicts.values()}) == 1
    header = ["answers", "n", "claims", "judge calls", "ms/answer wall", "ms/answer CPU", "answers/s",
              "CPU ms/answer per pass"]
    rows = [r for label, _ in modes for r in rows_of(label, timings[label])]
    what = {"judge-cases": f"{args.cases.name}", "multidoc": "judge_multidoc*.jsonl",
            "deploy-gate": f"deploy-gate answers ({args.passages} passages, {args.queries} queries x top 3 / top 5)"}
    print(f"Judge speed: {args.judge} judge ({getattr(judge, 'identity', args.judge)}) on {what[args.which]}, "
          f"{args.passes} passes (median shown), one answer at a time with its citation checks, loading excluded, "
          f"{'text caches kept' if args.keep_caches else 'every text cache emptied before each pass'}; "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; {os.cpu_count()} CPUs\n")
    print(table(header, rows, args.markdown))
    if args.compare:
        old = statistics.median(p["all"][4] for p in timings["old "])
        new = statistics.median(p["all"][4] for p in timings["new "])
        print(f"\nnew / old CPU per answer: {new / old:.2f}; verdicts, reasons and citation findings of old and new "
              f"{'identical' if same else 'DIFFER'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
