"""Four processes building and reading the same cache entries at once never corrupt them.

Ray workers on shared storage, or two runs started together, reach an index that does
not exist yet at the same moment. Each process builds in its own staging folder and the
first rename wins; every process must get the same rankings as a single process on a
clean cache, and the published entries must verify.
"""
from __future__ import annotations

import multiprocessing

import cache_race

from evalkit.cachestore import check_entry

PROCESSES = 4


def test_four_processes_build_and_read_one_key(tmp_path):
    expected = cache_race.retrieve(tmp_path / "clean")
    root = tmp_path / "shared"
    ctx = multiprocessing.get_context("spawn")  # no fork: faiss's OpenMP threads do not survive one
    barrier = ctx.Manager().Barrier(PROCESSES)
    with ctx.Pool(PROCESSES) as pool:
        runs = pool.starmap(cache_race.worker, [(str(root), barrier)] * PROCESSES, chunksize=1)
    assert len(runs) == PROCESSES
    for rounds in runs:
        assert rounds == [expected] * cache_race.ROUNDS
    entries = sorted(p for p in (root / "indexes").iterdir() if not p.name.startswith("."))
    assert [p.name.split("-")[0] for p in entries] == ["bm25", "bm25tok", "dense"]
    assert all(check_entry(p).ok for p in entries)
    assert not (root / "indexes" / ".staging").exists()  # every loser's copy was removed
