"""``benchmarks/scaling.py``'s BM25 memory phases at a tiny size (issue 34): the old build (bm25s's index())
and the new chunked one run side by side, write byte-identical matrix files, and the printed old/new ratios are
the ones the figures give."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_old_and_new_builds_side_by_side(tmp_path):
    out_json = tmp_path / "fig.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "scaling.py"), "--sizes", "1500",
         "--kinds", "bm25-tokens,bm25-build-old,bm25-build,bm25-query", "--queries", "4", "--repeats", "1",
         "--work-dir", str(tmp_path / "work"), "--json", str(out_json)],
        capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    figs = {r["kind"]: r for r in json.loads(out_json.read_text())}
    assert set(figs) == {"bm25-tokens", "bm25-build-old", "bm25-build", "bm25-query"}
    old, new = figs["bm25-build-old"], figs["bm25-build"]
    assert len(new["matrix_sha256"]) == 64 and old["matrix_sha256"] == new["matrix_sha256"]
    assert figs["bm25-query"]["memory_mapped"] is True
    for r in figs.values():
        assert r["peak_rss_mb"] > 10  # a Python process with numpy: a real measurement, not a default
    assert "matrix files = old build's" in done.stdout
    want = (f"vs old: build {old['build_s'] / new['build_s']:.1f}x faster, "
            f"peak RSS {old['peak_rss_mb'] / new['peak_rss_mb']:.1f}x lower")
    assert want in done.stdout
