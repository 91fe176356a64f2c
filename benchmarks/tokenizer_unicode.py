#!/usr/bin/env python
"""What Unicode tokenisation changes in BM25 numbers: SciFact and HotpotQA-100, side by side.

    python benchmarks/tokenizer_unicode.py [--markdown]

Three BM25 variants on each dataset, in one run, with the same settings as
``benchmarks/configs/scifact_bm25.yaml`` (one passage per document, ``tokenizer: en``,
Porter, Lucene stop words and IDF, k1 0.9, b 0.4):

* ``ascii``: ``letters: ascii``, the tokeniser before Unicode letters (tokenizer v3:
  ``Zürich`` -> ``z``, ``rich``; Cyrillic and Greek dropped), i.e. the published numbers
  of ``reports/scifact.md``;
* ``unicode``: the default now (NFKC, case folding, Unicode letters and digits);
* ``unicode_strip``: the same with ``accents: strip``.

It also counts the documents and queries holding a non-ASCII letter, and the queries
whose nDCG@10 changed. Data comes from ``../shared/datasets/`` (absent: says so, exits 0)
and is imported into ``--work-dir`` (default ``/tmp/evalkit-tokenizer``), never into the
repository.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from scale_common import DATA_DIR, FILES, REPO, _inside_repo, _quiet_env, table

HOTPOT_DIR = REPO.parent / "shared" / "datasets" / "hotpotqa_100"
METRICS = ("ndcg@10", "recall@100", "recall@20", "hit@5")
VARIANTS = {"ascii": {"letters": "ascii"}, "unicode": {}, "unicode_strip": {"accents": "strip"}}


def config(name: str, extra: dict[str, Any]) -> Any:
    from evalkit.graph import config_from_dict

    bm25 = {"tokenizer": "en", "k1": 0.9, "b": 0.4, "idf": "lucene", "stem": True, "stopwords": True, "top_k": 100,
            **extra}
    return config_from_dict({"name": name, "chunking": {"method": "document"},
                             "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": bm25, "top_k": 100}}},
                             "edges": {"start": "retrieve", "retrieve": "end"}}, source=f"<{name}>")


def non_ascii_letters(text: str) -> bool:
    return any(ord(c) > 127 and c.isalpha() for c in text)


def measure(label: str, set_path: Path, work: Path, progress: bool) -> list[str]:
    from evalkit.evalsets import load_eval_set
    from evalkit.run.runner import RunOptions, run_eval
    from evalkit.runstore import read_results

    eval_set = load_eval_set(f"{set_path}@v1")
    docs = eval_set.corpus.documents
    n_docs = sum(non_ascii_letters(f"{d.title} {d.text}") for d in docs)
    n_q = sum(non_ascii_letters(r.question) for r in eval_set.records)
    output = work / "results" / f"{label}.json"
    t0 = time.perf_counter()
    summary = run_eval(eval_set, [config(n, x) for n, x in VARIANTS.items()],
                       RunOptions(output=output, metrics=METRICS, mlflow=False, progress=progress,
                                  cache_root=work / "cache"), echo=lambda m: print(m, file=sys.stderr))
    per = {n: {r.query_id: r.metrics.get("ndcg@10") for r in read_results(output.with_suffix("") / n / "per_query.jsonl")}
           for n in VARIANTS}
    rows = []
    for n, v in summary.variants.items():
        changed = sum(1 for q, x in per[n].items() if x is not None and abs(x - per["ascii"][q]) > 1e-12)
        rows.append([n, *[f"{v.metrics[m]:.4f}" for m in METRICS],
                     f"{v.metrics['ndcg@10'] - summary.variants['ascii'].metrics['ndcg@10']:+.4f}", str(changed)])
    head = (f"{label}: {len(eval_set.records)} queries ({n_q} with a non-ASCII letter), {len(docs)} documents "
            f"({n_docs} with a non-ASCII letter); {time.perf_counter() - t0:.1f} s")
    return [head, table(["variant", *METRICS, "ndcg@10 vs ascii", "queries whose ndcg@10 changed"], rows,
                        markdown=ARGS.markdown)]


def main(argv: list[str] | None = None) -> int:
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-tokenizer"))
    p.add_argument("--markdown", action="store_true", help="Print Markdown tables.")
    p.add_argument("--no-progress", action="store_true")
    ARGS = p.parse_args(argv)
    if _inside_repo(ARGS.work_dir):
        print(f"error: --work-dir {ARGS.work_dir} is inside the repository; pick a folder outside", file=sys.stderr)
        return 2
    _quiet_env(1)
    out: list[str] = []
    if all((DATA_DIR / n).is_file() for n in FILES.values()):
        from evalkit.importers import BeirFiles, import_beir

        files = BeirFiles(**{kind: DATA_DIR / name for kind, name in FILES.items()})
        result = import_beir(files, "scifact", ARGS.work_dir / "eval_sets", lang="en", force=True)
        out += measure("SciFact test", result.eval_set_path, ARGS.work_dir, not ARGS.no_progress)
    else:
        out.append(f"SciFact skipped: {DATA_DIR} is missing (see the shared datasets README)")
    from evalkit.importers.hotpotqa import FILES as HOTPOT_FILES
    from evalkit.importers.hotpotqa import import_hotpotqa

    if all((HOTPOT_DIR / n).is_file() for n in HOTPOT_FILES):
        out += measure("HotpotQA-100", import_hotpotqa(HOTPOT_DIR, ARGS.work_dir / "hotpotqa"), ARGS.work_dir,
                       not ARGS.no_progress)
    else:
        out.append(f"HotpotQA-100 skipped: {HOTPOT_DIR} is missing")
    print("\n\n".join(out))
    return 0


ARGS: argparse.Namespace
if __name__ == "__main__":
    sys.exit(main())
