"""Worker for tests/faults/test_cache_concurrent.py (a module, so ``multiprocessing`` spawn can import it).

Each worker waits for the others at a barrier, then builds or loads the same BM25 and
dense entries several times in one shared cache folder and returns what it retrieved.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from fakes import BagOfWords

IDS = [f"d{i:04d}" for i in range(1500)]
WORDS = "apple banana cherry date elderberry fig grape kiwi lemon mango nectarine olive papaya quince".split()
TEXTS = [" ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 2 + i % 9)) + f" w{i % 97}" for i in range(len(IDS))]
KEY = {"corpus_sha256": "race", "chunking": {"method": "document"}}
QUERIES = ["apple fig", "w13 grape", "kiwi lemon mango", "w96"]
ROUNDS = 4


class Embedder(BagOfWords):
    def __init__(self) -> None:
        super().__init__("bow-race")


def retrieve(root: Path) -> dict[str, Any]:
    """BM25 and dense top-10 of every query, from the entries under ``root`` (built if absent)."""
    from evalkit.index.bm25 import build_or_load_bm25
    from evalkit.index.dense import build_or_load_dense
    from evalkit.text.tokenize import Tokenizer

    bm25 = build_or_load_bm25(TEXTS, IDS, Tokenizer("whitespace"), KEY, root)
    dense = build_or_load_dense(TEXTS, IDS, Embedder(), KEY, root)
    return {"bm25": [bm25.search(q, 10) for q in QUERIES],
            "dense": dense.search(Embedder().encode_queries(QUERIES), 10, "bow-race")}


def worker(root: str, barrier: Any) -> list[dict[str, Any]]:
    barrier.wait(timeout=120)
    return [retrieve(Path(root)) for _ in range(ROUNDS)]
