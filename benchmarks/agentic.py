#!/usr/bin/env python
"""Reflection loops, router and self-check against plain pipelines, on the demo and on HotpotQA.

    python benchmarks/agentic.py                        # demo + HotpotQA (when present)
    python benchmarks/agentic.py --dataset demo --markdown
    python benchmarks/agentic.py --dataset smollm        # the self-check loop with SmolLM2 (~15 min)

What it does:

1. **demo**: ``eval_sets/demo_kb.jsonl`` (120 questions, 13 unanswerable) with the shipped
   ``hybrid_rrf`` and ``rag_extractive`` (baselines), ``agentic_reflect``, ``modular_rag``
   and ``router``, plus ablations of ``agentic_reflect``: ``..._gate_only``
   (``max_attempts: 1``: the same grade gate, no loop; isolates what the loop adds),
   ``..._lenient`` (``on_exhausted: generate``: answer from what was kept instead of the
   fallback) and ``..._nodict`` (no term dictionary; it was written looking at the demo).
2. **hotpotqa**: ``../shared/datasets/hotpotqa_100/`` imported at run time into
   ``--work-dir`` (outside the repository): document = title + its sentences, gold = the
   2 supporting titles, bridge -> ``multi_hop``, comparison -> ``comparison``. Absent:
   skipped with a message. Variants: one passage per document, English BM25; the
   agentic variants without the demo dictionary; ``agentic_reflect_nosplit`` (no
   comparison splitting) and, built on it, ``..._gate_only``, ``..._lenient`` and
   ``..._min2`` (the gate wants 2 relevant documents: a bridge question needs both
   hops), with and without ``lenient``.
3. ``smollm`` (only when asked: ``--dataset smollm``): ``modular_rag`` with the local SmolLM2-135M generator on the demo's
   English questions, without a self-check, with a self-check that only refuses
   (``max_attempts: 1``) and with the self-check loop (2 attempts).
4. Prints, per variant: recall@20, hit@5, recall@5 (HotpotQA's hit@5 is saturated: any
   of 2 gold in the top 5; recall@5 asks for both hops), the first attempt's hit@5, loop rate, mean
   attempts, rescued (of which with new documents) / harmed / futile, loop cost (ms and
   LLM calls of attempts after the first, per rescue), LLM fallbacks, answer outcomes;
   then hit@5 per attempt and how well the offline grade's first-attempt gate matches
   the gold labels.

Everything runs through ``evalkit.run.runner.run_eval`` (no MLflow, no work shared
between variants, so each variant's loop cost is its own), definitions in
``evalkit.metrics.agentic``. Timings depend on the embedding caches: run it twice and read
the second run (the first one encodes the evidence sentences of the extractive answers). Caches go to ``WORK_DIR/cache`` unless ``--cache-dir`` says
otherwise. Offline: no LLM anywhere (grade = the documented embedding + lexical rule).
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
from pathlib import Path
from typing import Any

from evalkit.importers.hotpotqa import FILES as HOTPOT_FILES

REPO = Path(__file__).resolve().parents[1]
HOTPOT_DIR = REPO.parent / "shared" / "datasets" / "hotpotqa_100"
AGENTIC = ("agentic_reflect", "modular_rag")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", action="append", choices=("demo", "hotpotqa", "smollm"),
                   help="Run only this dataset (repeatable). Default: demo and hotpotqa. 'smollm': modular_rag "
                        "with the local SmolLM2-135M generator on the demo's English questions (slow: seconds "
                        "per answer), with and without the self-check loop.")
    p.add_argument("--data-dir", type=Path, default=HOTPOT_DIR, help=f"HotpotQA folder (default: {HOTPOT_DIR}).")
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-agentic"),
                   help="Scratch folder (outside the repository) for imports, results and caches.")
    p.add_argument("--cache-dir", type=Path, default=None, help="evalkit cache (default: WORK_DIR/cache).")
    p.add_argument("--workers", type=int, default=1, help="Query threads (results do not depend on it).")
    p.add_argument("--markdown", action="store_true", help="Print Markdown tables (for reports/).")
    p.add_argument("--no-progress", action="store_true", help="Hide the progress bars.")
    return p.parse_args(argv)


def _load(name: str) -> dict[str, Any]:
    from evalkit.graph import load_graph_config

    return copy.deepcopy(load_graph_config(REPO / "graph_configs" / f"{name}.yaml").to_dict())


def _variant(base: dict[str, Any], name: str, **grade: Any) -> dict[str, Any]:
    d = copy.deepcopy(base)
    d["name"] = name
    d["nodes"]["grade"]["params"].update(grade)
    return d


def demo_configs() -> list[Any]:
    from evalkit.graph import config_from_dict

    reflect = _load("agentic_reflect")
    nodict = copy.deepcopy(reflect)
    nodict["name"] = "agentic_reflect_nodict"
    nodict["nodes"]["rewrite"]["params"]["dictionary"] = {}
    ds = [_load(n) for n in ("hybrid_rrf", "rag_extractive")] + [
        reflect, _variant(reflect, "agentic_reflect_gate_only", max_attempts=1),
        _variant(reflect, "agentic_reflect_lenient", on_exhausted="generate"), nodict,
        _load("modular_rag"), _load("router")]
    return [config_from_dict(d) for d in ds]


def hotpot_configs() -> list[Any]:
    """The demo's variants on HotpotQA: one passage per document, English BM25, no demo dictionary.

    ``agentic_reflect`` is the shipped config (comparison splitting on); the ablations start
    from ``agentic_reflect_nosplit``, because splitting costs recall@5 here (see the report).
    """
    from evalkit.graph import config_from_dict

    chunking = {"method": "document", "prepend_title": True}
    out = []
    for name in ("hybrid_rrf", "rag_extractive", "agentic_reflect", "modular_rag", "router"):
        d = _load(name)
        d["chunking"] = chunking
        for node in d["nodes"].values():
            p = node["params"]
            if "bm25" in p:
                p["bm25"]["tokenizer"] = "en"
            if node["type"] == "query_rewrite":
                p["dictionary"] = {}
            if node["type"] in ("graph_local", "graph_global"):
                p["graph"] = {"mode": "fast", "sentence_weight": 1.0, "chunk_weight": 0.3, "title_as_entity": True}
        out.append(d)
    nosplit = copy.deepcopy(out[2])
    nosplit["name"] = "agentic_reflect_nosplit"
    nosplit["nodes"]["rewrite"]["params"]["split"] = False
    out[3:3] = [nosplit, _variant(nosplit, "agentic_reflect_gate_only", max_attempts=1),
                _variant(nosplit, "agentic_reflect_lenient", on_exhausted="generate"),
                _variant(nosplit, "agentic_reflect_min2", min_relevant=2),
                _variant(nosplit, "agentic_reflect_min2_lenient", min_relevant=2, on_exhausted="generate")]
    return [config_from_dict(d) for d in out]


def smollm_configs() -> list[Any]:
    """modular_rag with SmolLM2 generating: no self-check, a self-check that only refuses, the loop."""
    from evalkit.graph import config_from_dict

    base = _load("modular_rag")
    base["nodes"]["generate"]["params"]["llm"] = {"backend": "local", "max_tokens": 96, "threads": 1}
    nocheck = copy.deepcopy(base)
    nocheck["name"] = "smollm_no_check"
    del nocheck["nodes"]["self_check"]
    del nocheck["routes"]["self_check"]
    nocheck["edges"]["generate"] = "end"
    del nocheck["edges"]["self_check"]
    refuse = copy.deepcopy(base)
    refuse["name"] = "smollm_check_refuse"
    refuse["nodes"]["self_check"]["params"]["max_attempts"] = 1
    loop = copy.deepcopy(base)
    loop["name"] = "smollm_check_loop"
    return [config_from_dict(d) for d in (nocheck, refuse, loop)]


def english_demo() -> Any:
    """The demo eval set restricted to its English questions (SmolLM2's Chinese is garbled)."""
    import dataclasses
    import hashlib

    from evalkit.evalsets import load_eval_set

    es = load_eval_set(str(REPO / "eval_sets" / "demo_kb.jsonl"))
    records = [r for r in es.records if r.lang == "en"]
    digest = hashlib.sha256(("en-subset:" + es.sha256 + ":" + ",".join(r.id for r in records)).encode()).hexdigest()
    return dataclasses.replace(es, name=f"{es.name}_en", records=records, sha256=digest)


def import_hotpot(data_dir: Path, work_dir: Path) -> Path:
    """HotpotQA-100 imported into ``work_dir/hotpotqa`` (see ``evalkit.importers.hotpotqa``)."""
    from evalkit.importers.hotpotqa import import_hotpotqa

    return import_hotpotqa(data_dir, work_dir / "hotpotqa")


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and x.is_integer() and digits == 0:
        return str(int(x))
    return f"{x:.{digits}f}"


def _table(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        return "\n".join(["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|",
                          *["| " + " | ".join(r) + " |" for r in rows]])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in [header, ["-" * w for w in widths], *rows])


def main_table(summary: Any, markdown: bool) -> str:
    header = ["variant", "R@20", "Hit@5", "R@5", "Hit@5 1st", "looped", "attempts", "rescued (new docs)", "harmed",
              "futile", "loop s", "loop s/rescue", "LLM-client calls (loop)", "LLM fallbacks", "halluc", "abstain(ans)",
              "abstain(unans)", "ms/q"]
    rows = []
    for name, v in summary.variants.items():
        m = v.metrics
        loops = "loop_rate" in m
        rescued = f"{_fmt(m.get('rescued'), 0)} ({_fmt(m.get('rescued_new_docs'), 0)})" if loops else "-"
        per_rescue = m.get("loop_ms_per_rescue")
        rows.append([name, _fmt(m.get("recall@20")), _fmt(m.get("hit@5")), _fmt(m.get("recall@5")),
                     _fmt(m.get("first_attempt_hit@5")),
                     _fmt(m.get("loop_rate")), _fmt(m.get("attempts_mean"), 2), rescued,
                     _fmt(m.get("harmed"), 0), _fmt(m.get("futile"), 0),
                     _fmt(m["loop_ms"] / 1000, 1) if loops else "-",
                     _fmt(per_rescue / 1000, 2) if per_rescue else "-", _fmt(m.get("loop_llm_calls"), 0),
                     _fmt(m.get("llm_fallbacks"), 0), _fmt(m.get("hallucination_rate")),
                     _fmt(m.get("abstention_rate")), _fmt(m.get("correct_abstention_rate")),
                     f"{v.timing.get('latency_ms_mean', 0):.0f}"])
    return _table(header, rows, markdown)


def _means(queries: list[tuple[list[str], dict]], attempt: int) -> list[str]:
    """Mean Hit@5 (final stage), R@5 and R@20 (retrieval stage) of ``queries`` at ``attempt``."""
    from evalkit.metrics import hit, recall

    values = [(hit(rk[attempt][1], g, 5), recall(rk[attempt][0], g, 5), recall(rk[attempt][0], g, 20))
              for g, rk in queries]
    return [_fmt(sum(v[i] for v in values) / len(values)) for i in range(3)]


def attempts_table(output: Path, summary: Any, markdown: bool) -> str:
    """Per attempt, over the answerable queries that reached it: Hit@5, R@5, R@20 there and at attempt 1.

    hit@5 / recall@20 per attempt are ``evalkit.metrics.agentic``'s; recall@5 is computed here
    from the same per-attempt rankings (``attempt_rankings``), on the retrieval stage.
    """
    from evalkit.metrics.agentic import attempt_rankings
    from evalkit.runstore import read_results

    header = ["variant", "attempt", "answerable queries", "Hit@5", "R@5", "R@20",
              "same queries at attempt 1 (Hit@5 / R@5 / R@20)"]
    rows = []
    for name in summary.variants:
        results = [r for r in read_results(output.with_suffix("") / name / "per_query.jsonl") if r.gold_doc_ids]
        ranked = [(r.gold_doc_ids, attempt_rankings(r.trace)) for r in results if "attempts" in r.metrics]
        n = 1
        while True:
            here = [(gold, rk) for gold, rk in ranked if n in rk]
            if not here:
                break

            rows.append([name, str(n), str(len(here)), *_means(here, n),
                         " / ".join(_means(here, 1)) if n > 1 else ""])
            n += 1
    return _table(header, rows, markdown)


def gate_table(output: Path, summary: Any, markdown: bool) -> str:
    """How the first attempt's grade agrees with the gold labels (queries and documents)."""
    from evalkit.runstore import read_results

    header = ["variant", "gate pass (answerable)", "gate pass (unanswerable)", "kept docs that are gold",
              "gold judged -> kept", "kept by atom rescue"]
    rows = []
    for name in summary.variants:
        results = read_results(output.with_suffix("") / name / "per_query.jsonl")
        firsts = [(r, next((e for e in r.trace if e["type"] == "grade"), None)) for r in results]
        firsts = [(r, e) for r, e in firsts if e is not None and not e.get("error")]
        if not firsts:
            continue
        ans = [e["wrote"]["grade_decision"] == "generate" for r, e in firsts if r.gold_doc_ids]
        una = [e["wrote"]["grade_decision"] == "generate" for r, e in firsts if not r.gold_doc_ids]
        kept = gold_kept = judged_gold = judged_gold_kept = atom = 0
        for r, e in firsts:
            gold = set(r.gold_doc_ids)
            for g in e["wrote"].get("graded") or []:
                kept += g["relevant"]
                gold_kept += g["relevant"] and g["doc_id"] in gold
                atom += g["by"] == "atom"
                if g["by"] != "atom" and g["doc_id"] in gold:
                    judged_gold += 1
                    judged_gold_kept += g["relevant"]
        rows.append([name, _fmt(sum(ans) / len(ans) if ans else None), _fmt(sum(una) / len(una) if una else None),
                     _fmt(gold_kept / kept if kept else None), _fmt(judged_gold_kept / judged_gold if judged_gold else None),
                     str(atom)])
    return _table(header, rows, markdown)


def run(dataset: str, eval_set: Any, configs: list[Any], args: argparse.Namespace) -> None:
    from evalkit.evalsets import load_eval_set
    from evalkit.metrics import DEFAULT_METRICS
    from evalkit.run.runner import RunOptions, run_eval

    if isinstance(eval_set, str):
        eval_set = load_eval_set(eval_set)
    output = args.work_dir / "results" / f"{dataset}.json"
    opts = RunOptions(output=output, workers=args.workers, mlflow=False, progress=not args.no_progress,
                      cache_root=args.cache_dir, metrics=(*DEFAULT_METRICS, "recall@5"),
                      share_work=False)  # each variant pays for its own nodes: loop costs stay comparable
    summary = run_eval(eval_set, configs, opts, echo=lambda m: print(m, file=sys.stderr))
    n = summary.eval_set.n_queries
    print(f"\n## {dataset} ({n} questions)\n")
    print(main_table(summary, args.markdown))
    print("\nPer attempt (means over the answerable queries that reached the attempt):\n")
    print(attempts_table(output, summary, args.markdown))
    gate = gate_table(output, summary, args.markdown)
    if len(gate.splitlines()) > 2:
        print("\nThe offline grade's first-attempt gate against the gold labels:\n")
        print(gate)
    by_type = [(name, t, g) for name, v in summary.variants.items() for t, g in sorted(v.by_type.items())
               if name.startswith(AGENTIC + ("smollm",)) and "loop_rate" in g]
    if by_type:
        print("\nLoops by question type:\n")
        print(_table(["variant", "type", "n", "Hit@5", "looped", "rescued", "harmed", "futile"],
                     [[name, t, _fmt(g.get("n"), 0), _fmt(g.get("hit@5")), _fmt(g.get("loop_rate")),
                       _fmt(g.get("rescued"), 0), _fmt(g.get("harmed"), 0), _fmt(g.get("futile"), 0)]
                      for name, t, g in by_type], args.markdown))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    datasets = args.dataset or ["demo", "hotpotqa"]
    args.work_dir.mkdir(parents=True, exist_ok=True)
    args.cache_dir = args.cache_dir or args.work_dir / "cache"
    os.environ.setdefault("EVALKIT_CACHE", str(args.cache_dir))
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(key, "1")
    if "demo" in datasets:
        run("demo", str(REPO / "eval_sets" / "demo_kb.jsonl"), demo_configs(), args)
    if "smollm" in datasets:
        run("demo_en_smollm", english_demo(), smollm_configs(), args)
    if "hotpotqa" in datasets:
        if not all((args.data_dir / f).exists() for f in HOTPOT_FILES):
            print(f"\nhotpotqa: skipped ({args.data_dir} does not hold {', '.join(HOTPOT_FILES)})")
        else:
            run("hotpotqa", str(import_hotpot(args.data_dir, args.work_dir)), hotpot_configs(), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
