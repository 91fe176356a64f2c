"""A finished run's answers as an ``evalkit score --answers`` file, text only (run from the repo root).

    python eval_sets/tools/answers_from_run.py /tmp/llmgen/run/en.json rag_smollm2 eval_sets/demo_llm_answers.jsonl

One row per query, in the eval set's order, in evalkit's answers format (docs/byo.md):
``id``, ``question``, ``answer``, ``contexts`` (the texts of the passages the answer was
generated and judged from, in the order shown) and ``retrieved`` (the document id of each
of those passages, so ``evalkit score`` pairs them), plus ``error`` for a failed query. The
passages and their ids are those `evalkit export --format ragas` writes (one code path).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RENAME = {"id": "id", "user_input": "question", "response": "answer", "retrieved_contexts": "contexts",
          "retrieved_context_ids": "retrieved", "error": "error"}
"""ragas sample key -> evalkit answers field (reference and gold ids are left to the eval set)."""


def answer_rows(summary: Path, variant: str) -> list[dict[str, Any]]:
    """The answers rows of ``variant`` in the run whose summary JSON is ``summary``."""
    from evalkit.analysis.runs import load_run
    from evalkit.interop.ragas_export import ragas_rows

    return [{RENAME[k]: v for k, v in sample.items() if k in RENAME}
            for sample in ragas_rows(load_run(summary), variant)]


def main(summary: Path, variant: str, out: Path) -> int:
    """Write the rows as JSONL to ``out``; return how many."""
    rows = answer_rows(summary, variant)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: python eval_sets/tools/answers_from_run.py SUMMARY.json VARIANT OUT.jsonl")
    print(main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])))
