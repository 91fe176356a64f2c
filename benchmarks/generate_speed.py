#!/usr/bin/env python
"""The warm extractive generator and the offline judge per call, on recorded deploy-gate inputs.

    python benchmarks/generate_speed.py --inputs /tmp/genspeed-work/records --cache-root /tmp/genspeed-work/cache
    python benchmarks/generate_speed.py ... --limit 1000 --profile /tmp/genspeed-prof.out --out /tmp/genspeed-new.jsonl
    python benchmarks/generate_speed.py ... --compare      # every pass with the sharing off (old) and on (new)

What it does:

1. Reads the inputs: every ``*.jsonl`` under ``--inputs`` (or one file), one object per line with
   ``question``, ``lang`` and ``evidence`` (``[doc id, text]`` pairs), as a deploy-gate run's
   generating variants gave them to the generator (``benchmarks/deploy_gate_scale.py``; taken from
   the ``generation`` of its per-query records: ``evidence`` ids and ``evidence_text``).
2. Generates every answer once untimed with ``evalkit.llm.extractive.ExtractiveBackend`` over
   ``--cache-root`` (its e5 vectors are read from ``embeddings.sqlite`` there, so the timed passes
   are warm: the script says how many texts still had to be encoded).
3. Times ``--passes`` passes, each over every input: the generator's answer and what the ``generate``
   node makes of it (``parse_citations``, ``detect_abstention``: the deploy gate's "generate" stage
   without the LLM cache's look-up), then the offline judge
   as a run calls it (the answer against its evidence, then each claim against its citations;
   ``judge_speed.judge_as_a_run``). Every text cache of ``evalkit.text`` and ``evalkit.judges`` is
   emptied before each pass (``evalkit.text.memo.clear_caches``).
4. ``--compare``: every pass twice, alternately, with the sharing of ``evalkit.text.memo`` off and
   on; the answers and verdicts of both must be identical (exit 1 otherwise).
5. ``--out``: every answer, judge result and citation finding as JSONL, to compare two checkouts
   byte for byte (``cmp``); ``--profile``: cProfile of one more pass (sharing on) into that file.

Prints CPU ms per generator call and per judge call (median pass), with the load average.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_speed import judge_as_a_run
from scale_common import table

Input = tuple[str, str, tuple[tuple[str, str], ...]]  # (language, question, evidence)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--inputs", type=Path, required=True, help="A JSONL file of inputs, or a folder of them.")
    p.add_argument("--cache-root", type=Path, required=True, help="The evalkit cache with the e5 vectors.")
    p.add_argument("--limit", type=int, default=0, help="Only the first N inputs (default: all).")
    p.add_argument("--passes", type=int, default=3, help="Timed passes (default: 3).")
    p.add_argument("--compare", action="store_true", help="Time every pass with the sharing off and on.")
    p.add_argument("--no-judge", dest="judge", action="store_false", help="Time the generator only.")
    p.add_argument("--out", type=Path, default=None, help="Write every output here (JSONL).")
    p.add_argument("--profile", type=Path, default=None, help="cProfile one more pass into this file.")
    return p.parse_args(argv)


def read_inputs(path: Path, limit: int = 0) -> list[Input]:
    """The recorded inputs of ``path`` (a file, or every ``*.jsonl`` of a folder, by name)."""
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    out: list[Input] = []
    for f in files:
        for row in map(json.loads, filter(str.strip, f.read_text(encoding="utf-8").splitlines())):
            out.append((row["lang"], row["question"], tuple((d, t) for d, t in row["evidence"])))
    return out[:limit] if limit else out


def one_pass(backend: Any, judge: Any, inputs: list[Input]) -> tuple[list[float], list[Any]]:
    """``[generator calls, generator CPU s, judge calls, judge CPU s]`` and every output."""
    from evalkit.nodes.generate import parse_citations
    from evalkit.text.abstention import detect_abstention

    acc = [0.0, 0.0, 0.0, 0.0]
    outputs = []
    for _lang, question, evidence in inputs:
        c0 = time.process_time()
        answer = backend.answer(question, evidence)
        cited = parse_citations(answer, [(d, d) for d, _ in evidence])
        abstention = detect_abstention(answer, finish_reason="stop").to_dict()
        c1 = time.process_time()
        acc[0] += 1
        acc[1] += c1 - c0
        result = None
        if judge is not None:
            result, calls = judge_as_a_run(judge, question, answer, list(evidence))
            acc[2] += calls
            acc[3] += time.process_time() - c1
        outputs.append((answer, cited, abstention, result))
    return acc, outputs


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from evalkit.judges import make_judge
    from evalkit.llm.base import LLMSpec
    from evalkit.llm.extractive import ExtractiveBackend, _embedder
    from evalkit.text.memo import clear_caches, sharing

    inputs = read_inputs(args.inputs, args.limit)
    backend = ExtractiveBackend(LLMSpec(backend="extractive"), cache_root=args.cache_root)
    judge = make_judge("offline") if args.judge else None
    for on in (False, True):  # loading and the cold vectors outside the figures
        with sharing(on):
            one_pass(backend, judge, inputs if on else inputs[:20])
    encoded = _embedder(args.cache_root.resolve()).encoded
    modes = [("old ", False), ("new ", True)] if args.compare else [("", True)]
    timings: dict[str, list[list[float]]] = {label: [] for label, _ in modes}
    outputs: dict[str, list[Any]] = {}
    load_before = os.getloadavg()
    for _ in range(args.passes):
        for label, on in modes:
            with sharing(on):
                clear_caches()
                acc, outs = one_pass(backend, judge, inputs)
            timings[label].append(acc)
            outputs.setdefault(label, outs)
    load_after = os.getloadavg()
    if args.profile is not None:
        clear_caches()
        cProfile.runctx("one_pass(backend, judge, inputs)", globals(), locals(), str(args.profile))
    same = len({json.dumps(o, sort_keys=True, ensure_ascii=False) for o in outputs.values()}) == 1
    rows = []
    for label, _ in modes:
        passes = timings[label]
        n, calls = passes[0][0], passes[0][2]
        gen = statistics.median(p[1] for p in passes)
        jud = statistics.median(p[3] for p in passes)
        rows.append([label.strip() or "-", f"{int(n)}", f"{1000 * gen / n:.2f}",
                     f"{int(calls)}", f"{1000 * jud / calls:.2f}" if calls else "-",
                     ", ".join(f"{1000 * p[1] / n:.2f}/{1000 * p[3] / max(1, calls):.2f}" for p in passes)])
    print(f"Extractive generator and offline judge on {len(inputs)} recorded inputs ({args.inputs}), warm "
          f"({encoded} texts encoded before the timed passes), {args.passes} passes (median), every text cache "
          f"emptied before each; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after\n")
    print(table(["sharing", "answers", "generate CPU ms/call", "judge calls", "judge CPU ms/call",
                 "per pass gen/judge"], rows, False))
    if args.out is not None:
        with args.out.open("w", encoding="utf-8") as fh:
            for answer, cited, abstention, result in outputs[modes[-1][0]]:
                fh.write(json.dumps({"answer": answer, "citations": cited, "abstention": abstention, "judged": result},
                                    sort_keys=True, ensure_ascii=False) + "\n")
    if args.compare:
        print(f"\noutputs with the sharing off and on: {'identical' if same else 'DIFFER'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
