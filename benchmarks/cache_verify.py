"""What verifying cache entries costs a warm load: index loads with and without the checksum check.

For every index entry under a cache folder (build one first, e.g. ``evalkit demo`` with
``EVALKIT_CACHE`` pointing there), times, in one process, with the files in the page
cache (a warm run):

- ``load``: what a warm load did before checksums, the entry's loader alone (read
  ``meta.json``, memory-map the BM25 matrix / faiss index, read ids, vocabulary, graph);
- ``sizes``: the size check of every file (``check_entry(checksums=False)``);
- ``verify``: the full check, sizes and xxh3-128 of every file (``check_entry``), which
  every load now does before ``load``.

Each is the median of ``--repeat`` tries. Prints one row per entry and the totals; the
added cost of a warm run is the ``verify`` total (paid once per index per process).

    EVALKIT_CACHE=/tmp/c PYTHONPATH=$PWD python -m evalkit.cli demo   # or any run: builds the indexes
    PYTHONPATH=$PWD python benchmarks/cache_verify.py --cache /tmp/c [--repeat 20]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _bm25(folder: Path) -> Any:
    import bm25s
    import numpy as np

    json.loads((folder / "meta.json").read_text())
    return bm25s.BM25.load(folder, mmap=True), np.load(folder / "colmax.npy")


def _bm25tok(folder: Path) -> Any:
    import numpy as np

    json.loads((folder / "meta.json").read_text())
    return (json.loads((folder / "vocab.json").read_text()), np.load(folder / "token_ids.npy"),
            np.load(folder / "offsets.npy"))


def _dense(folder: Path) -> Any:
    import faiss

    meta = json.loads((folder / "meta.json").read_text())
    mmap = faiss.IO_FLAG_MMAP if meta.get("kind") == "ivf" else faiss.IO_FLAG_MMAP_IFC
    return faiss.read_index(str(folder / "index.faiss"), mmap | faiss.IO_FLAG_READ_ONLY), json.loads(
        (folder / "ids.json").read_text())


def _graph(folder: Path) -> Any:
    json.loads((folder / "meta.json").read_text())
    return json.loads((folder / "graph.json").read_text()), json.loads((folder / "sentences.json").read_text())


LOADERS: dict[str, Callable[[Path], Any]] = {"bm25": _bm25, "bm25tok": _bm25tok, "dense": _dense, "graph": _graph}


def _median_ms(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main() -> None:
    from evalkit.cachestore import check_entry, default_cache_root

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", type=Path, default=default_cache_root())
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    folders = sorted(p for p in (args.cache / "indexes").iterdir() if p.is_dir() and not p.name.startswith("."))
    print(f"{'entry':<30} {'MB':>7} {'load ms':>8} {'sizes ms':>9} {'verify ms':>10} {'verify/load':>12}")
    totals = {"mb": 0.0, "load": 0.0, "sizes": 0.0, "verify": 0.0}
    for folder in folders:
        kind = folder.name.split("-", 1)[0]
        if kind not in LOADERS or not check_entry(folder).ok:
            print(f"{folder.name:<30} skipped ({'unknown kind' if kind not in LOADERS else 'not a good entry'})")
            continue
        mb = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6
        load = _median_ms(lambda kind=kind, folder=folder: LOADERS[kind](folder), args.repeat)
        sizes = _median_ms(lambda folder=folder: check_entry(folder, checksums=False), args.repeat)
        verify = _median_ms(lambda folder=folder: check_entry(folder), args.repeat)
        for key, value in (("mb", mb), ("load", load), ("sizes", sizes), ("verify", verify)):
            totals[key] += value
        print(f"{folder.name:<30} {mb:7.2f} {load:8.2f} {sizes:9.2f} {verify:10.2f} {verify / load:11.2f}x")
    print(f"{'total':<30} {totals['mb']:7.2f} {totals['load']:8.2f} {totals['sizes']:9.2f} {totals['verify']:10.2f}")
    if totals["verify"]:
        print(f"verify adds {totals['verify']:.1f} ms to a warm load of these {len(folders)} entries "
              f"({totals['mb'] / (totals['verify'] / 1000):.0f} MB/s checked)")


if __name__ == "__main__":
    main()
