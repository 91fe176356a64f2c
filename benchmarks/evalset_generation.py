#!/usr/bin/env python
"""Does a generated eval set rank pipeline variants the way a human-written one does?

    python benchmarks/evalset_generation.py                    # demo + HotpotQA-100 (when present)
    python benchmarks/evalset_generation.py --dataset demo --markdown

What it does, per corpus:

1. generates an eval set from the corpus with the offline template generator
   (``template/v1``: ``evalkit evalset generate`` with its defaults, ``--n`` questions,
   seed 0) into ``--work-dir`` and freezes it;
2. runs the same retrieval-only variants on the generated set and on the human-written
   set of that corpus (demo: ``eval_sets/demo_kb.jsonl``; HotpotQA-100: its 100 questions,
   imported at run time from ``../shared/datasets/hotpotqa_100/``, skipped with the reason
   when absent);
3. prints recall@20 and hit@5 of every variant on both sets, and Kendall's tau
   (``scipy.stats.kendalltau``, tau-b, ties allowed) between the two sets' values across
   variants: 1 = the same order, 0 = unrelated, -1 = reversed;
4. prints the 30 generated questions a reader reviewed (a fixed sample, seed 0)
   with the verdict recorded in ``benchmarks/data/evalset_generation_review.json`` (keep or
   drop, and why), and the share the reader would drop. A question whose id is not in that
   file (the generator changed since) is listed as not reviewed and left out of the share.
   The file also keeps the verdicts on the sample of the first two-hop rule (any two facts
   sharing an entity; 11 of 30 dropped, 9 of them two-hop), which led to the current one.

Variants: demo: ``bm25``, ``vector``, ``hybrid_rrf``, ``hybrid_weighted``, ``graphrag_local``,
``filter_recent`` as shipped. HotpotQA: the first five with one passage per document and the
English tokenizer (as ``benchmarks/graphrag.py`` adapts them); ``filter_recent`` filters on
an ``updated`` date the HotpotQA documents do not have, so it is left out there.
Everything runs through ``evalkit.run.runner.run_eval`` (no MLflow).
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import os
import random
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# ../shared beside the repository; a git worktree (wt/NAME) sits one level further down
HOTPOT_DIR = next((p for p in (REPO.parent / "shared" / "datasets" / "hotpotqa_100",
                               REPO.parent.parent / "shared" / "datasets" / "hotpotqa_100") if p.is_dir()),
                  REPO.parent / "shared" / "datasets" / "hotpotqa_100")
REVIEW_FILE = REPO / "benchmarks" / "data" / "evalset_generation_review.json"
METRICS = ("recall@20", "hit@5")
DEMO_VARIANTS = ("bm25", "vector", "hybrid_rrf", "hybrid_weighted", "graphrag_local", "filter_recent")
HOTPOT_VARIANTS = DEMO_VARIANTS[:5]
READ_SAMPLE = 30


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", action="append", choices=("demo", "hotpotqa"),
                   help="Run only this dataset (repeatable). Default: both.")
    p.add_argument("--n", type=int, default=120, help="Questions to generate per corpus (default 120).")
    p.add_argument("--data-dir", type=Path, default=HOTPOT_DIR, help=f"HotpotQA folder (default: {HOTPOT_DIR}).")
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-evalgen"),
                   help="Scratch folder (outside the repository) for generated sets, results and caches.")
    p.add_argument("--cache-dir", type=Path, default=None, help="evalkit cache (default: $EVALKIT_CACHE or WORK_DIR/cache).")
    p.add_argument("--markdown", action="store_true", help="Print Markdown tables.")
    p.add_argument("--no-progress", action="store_true", help="Hide the progress bars.")
    return p.parse_args(argv)


def _load(name: str) -> dict[str, Any]:
    from evalkit.graph import load_graph_config

    return copy.deepcopy(load_graph_config(REPO / "graph_configs" / f"{name}.yaml").to_dict())


def demo_configs() -> list[Any]:
    from evalkit.graph import config_from_dict

    return [config_from_dict(_load(n)) for n in DEMO_VARIANTS]


def hotpot_configs() -> list[Any]:
    """The variants on HotpotQA: one passage per document, English BM25, titles as graph entities."""
    from evalkit.graph import config_from_dict

    out = []
    for name in HOTPOT_VARIANTS:
        d = _load(name)
        d["chunking"] = {"method": "document", "prepend_title": True}
        for node in d["nodes"].values():
            p = node["params"]
            if "bm25" in p:
                p["bm25"]["tokenizer"] = "en"
            if node["type"] == "graph_local":
                p["graph"] = {"mode": "fast", "sentence_weight": 1.0, "chunk_weight": 0.3, "title_as_entity": True}
        out.append(config_from_dict(d))
    return out


def generate(corpus: Path, folder: Path, n: int, cache: Path) -> Path:
    """A fresh template-generated set of ``n`` questions from ``corpus``, frozen as v1."""
    from evalkit.evalsets import freeze
    from evalkit.evalsets.gen_run import generate_eval_set
    from evalkit.evalsets.generate import TEMPLATE_TYPES, GenOptions

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "generated.jsonl"
    for stale in folder.glob("generated.*"):
        stale.unlink()
    generate_eval_set(corpus, str(path), GenOptions(n=n, types=TEMPLATE_TYPES, seed=0), cache_root=cache)
    freeze(path, corpus=str(corpus))
    return path


def run(label: str, spec: str, configs: list[Any], args: argparse.Namespace, cache: Path) -> dict[str, dict[str, float]]:
    """``{variant: {metric: value over answerable queries}}`` of one run."""
    from evalkit.evalsets import load_eval_set
    from evalkit.run.runner import RunOptions, run_eval

    options = RunOptions(output=args.work_dir / "results" / f"{label}.json", metrics=METRICS, mlflow=False,
                         progress=not args.no_progress, cache_root=cache, overwrite=True)
    summary = run_eval(load_eval_set(spec), configs, options, echo=lambda m: print(m, file=sys.stderr))
    return {name: {m: float(v.metrics[m]) for m in METRICS} for name, v in summary.variants.items()}


def kendall(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]], metric: str) -> tuple[float, float]:
    """Kendall's tau-b (and its p-value) between two runs' values of ``metric`` across the same variants."""
    from scipy.stats import kendalltau

    names = sorted(a)
    res = kendalltau([a[n][metric] for n in names], [b[n][metric] for n in names])
    return float(res.statistic), float(res.pvalue)


def _table(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        return "\n".join(["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|",
                          *["| " + " | ".join(r) + " |" for r in rows]])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in [header, ["-" * w for w in widths], *rows])


def agreement(label: str, human: dict, generated: dict, markdown: bool) -> str:
    rows = [[n, *(f"{human[n][m]:.3f}" for m in METRICS), *(f"{generated[n][m]:.3f}" for m in METRICS)]
            for n in human]
    lines = [f"## {label}: human-written set vs template-generated set",
             _table(["variant", *(f"human {m}" for m in METRICS), *(f"generated {m}" for m in METRICS)], rows,
                    markdown)]
    for m in METRICS:
        tau, p = kendall(human, generated, m)
        tied = {round(generated[n][m], 6) for n in generated}
        if math.isnan(tau):  # one of the two sides ranks nothing: every variant has the same value
            lines.append(f"Kendall's tau across {len(human)} variants on {m}: undefined (every variant scores "
                         f"{tied.pop() if len(tied) == 1 else '-'} on the generated set: it does not rank them)")
        else:
            lines.append(f"Kendall's tau across {len(human)} variants on {m}: {tau:.3f} (p = {p:.3f}; "
                         f"{len(tied)} distinct values on the generated set)")
    return "\n\n".join(lines)


def reader_sample(path: Path, markdown: bool, corpus: str = "demo") -> str:
    """The fixed sample of generated questions a reader reviewed, their verdicts and the drop share."""
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    sample = random.Random(0).sample(lines, min(READ_SAMPLE, len(lines)))
    verdicts = json.loads(REVIEW_FILE.read_text(encoding="utf-8")) if REVIEW_FILE.exists() else {}
    rows, drop, read = [], 0, 0
    for x in sample:
        v = verdicts.get(x["id"])
        if v is None:
            rows.append([x["id"], x["generated"]["pattern"], "not reviewed", "", x["question"][:80]])
            continue
        read += 1
        drop += v["verdict"] == "drop"
        rows.append([x["id"], x["generated"]["pattern"], v["verdict"], v["why"], x["question"][:80]])
    share = f"{drop}/{read} = {drop / read:.2f}" if read else "n/a (no reviewed question in the sample)"
    return "\n\n".join([f"## The {len(sample)} generated {corpus} questions a reader reviewed ({REVIEW_FILE.name})",
                        _table(["id", "pattern", "verdict", "why", "question"], rows, markdown),
                        f"Share the reader would drop: {share}"])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        args.work_dir.resolve().relative_to(REPO)
        print(f"error: --work-dir {args.work_dir} is inside the repository; pick a folder outside", file=sys.stderr)
        return 2
    except ValueError:
        pass
    for key, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}.items():
        os.environ.setdefault(key, value)
    cache = args.cache_dir or Path(os.environ.get("EVALKIT_CACHE") or args.work_dir / "cache")
    parts = []
    if "demo" in (args.dataset or ["demo", "hotpotqa"]):
        corpus = REPO / "eval_sets" / "corpora" / "demo_kb.jsonl"
        gen = generate(corpus, args.work_dir / "demo", args.n, cache)
        human = run("demo_human", str(REPO / "eval_sets" / "demo_kb.jsonl"), demo_configs(), args, cache)
        generated = run("demo_generated", f"{gen}@v1", demo_configs(), args, cache)
        parts += [agreement("demo_kb", human, generated, args.markdown), reader_sample(gen, args.markdown)]
    if "hotpotqa" in (args.dataset or ["demo", "hotpotqa"]):
        from evalkit.importers.hotpotqa import FILES, import_hotpotqa

        missing = [f for f in FILES if not (args.data_dir / f).is_file()]
        if missing:
            parts.append(f"HotpotQA skipped: {args.data_dir} lacks {', '.join(missing)} (see the shared datasets' "
                         "hotpotqa_100/SOURCE.md; the data is not shipped with evalkit)")
        else:
            human_set = import_hotpotqa(args.data_dir, args.work_dir / "hotpotqa")
            corpus = human_set.parent / "corpora" / "hotpotqa_100.jsonl"
            gen = generate(corpus, args.work_dir / "hotpotqa_generated", args.n, cache)
            human = run("hotpot_human", f"{human_set}@v1", hotpot_configs(), args, cache)
            generated = run("hotpot_generated", f"{gen}@v1", hotpot_configs(), args, cache)
            parts += [agreement("hotpotqa_100", human, generated, args.markdown),
                      reader_sample(gen, args.markdown, "HotpotQA-100")]
    print("\n\n".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
