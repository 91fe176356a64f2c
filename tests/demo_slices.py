"""Small eval sets cut from the bundled demo for tests: the chosen questions over their gold documents
plus a few others, frozen as an eval set of their own (one helper for every test that needs a slice)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalkit.evalsets import freeze

REPO = Path(__file__).resolve().parents[1]


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def demo_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the demo's eval-set records, its corpus documents), as written in eval_sets/."""
    return _read(REPO / "eval_sets" / "demo_kb.jsonl"), _read(REPO / "eval_sets" / "corpora" / "demo_kb.jsonl")


def freeze_slice(folder: Path, name: str, picked: list[dict[str, Any]], docs: list[dict[str, Any]],
                 n_other_docs: int) -> Path:
    """``picked`` over their gold documents and the first ``n_other_docs`` others of ``docs``, written to
    ``folder/NAME.jsonl`` (corpus ``folder/corpora/NAME.jsonl``) and frozen as v1."""
    gold = {d for r in picked for d in r["relevant_doc_ids"]}
    keep = [d for d in docs if d["id"] in gold] + [d for d in docs if d["id"] not in gold][:n_other_docs]
    (folder / "corpora").mkdir(parents=True)
    corpus = folder / "corpora" / f"{name}.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in keep), encoding="utf-8")
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in picked), encoding="utf-8")
    freeze(path, corpus=str(corpus))
    return path
