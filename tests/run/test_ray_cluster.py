"""Ray on an existing multi-process cluster (``--ray-address``): indexes built by a worker, numbers as local.

A real two-node Ray cluster on this machine (``ray.cluster_utils.Cluster``: a head node and
a second node, each its own raylet and worker processes, one CPU each, own temp dir), all
on 127.0.0.1. The
cache folder is the "shared storage": every node sees it at the same path. The driver is
forbidden to tokenise or encode passages, so the indexes can only come from a worker;
every per-query record must equal a local run's (wall-clock fields aside).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from evalkit.evalsets import load_eval_set
from evalkit.graph import config_from_dict
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import read_results

from .test_execution import make_set

VARIANTS = [
    {"name": "hybrid", "chunking": {"method": "document"}, "nodes": {
        "retrieve": {"type": "retrieve", "params": {"dense": {"embedder": "e5", "index": "hnsw", "ef_search": 100},
                                                    "bm25": {}}},
        "rerank": {"type": "rerank", "params": {"model": "e5", "top_k": 5}}},
     "edges": {"start": "retrieve", "retrieve": "rerank", "rerank": "end"}},
    {"name": "bm25_okapi", "chunking": {"method": "fixed", "size": 60, "overlap": 10}, "nodes": {
        "retrieve": {"type": "retrieve", "params": {"bm25": {"idf": "okapi"}}}},
     "edges": {"start": "retrieve", "retrieve": "end"}},
]
TIMING = ("duration_ms", "elapsed_ms", "started_at")


def _records(out: Path, name: str) -> list[dict]:
    rows = []
    for r in read_results(out.with_suffix("") / name / "per_query.jsonl"):
        d = r.to_dict()
        d["trace"] = [{k: v for k, v in ev.items() if k not in TIMING} for ev in d["trace"]]
        rows.append(d)
    return rows


@pytest.fixture
def cluster(monkeypatch):
    """A head node and a second node (``ray.cluster_utils.Cluster``), both on 127.0.0.1; yields the address."""
    # RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 makes every Ray process take 127.0.0.1 as its node address; otherwise
    # Ray on Linux advertises the machine's outward address (and `ray start --address 127.0.0.1:PORT` for a
    # second node rewrites the address to it too), so nothing of this test would stay on loopback
    for key, value in {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0",
                       "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}.items():
        monkeypatch.setenv(key, value)
    pytest.importorskip("ray")
    import ray
    import ray._private.ray_constants as ray_constants
    from ray.cluster_utils import Cluster

    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)  # read at import: ray may be imported already
    ray.shutdown()
    temp = tempfile.mkdtemp(prefix="rt-", dir="/tmp")  # short: Ray's socket paths have a length limit
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "temp_dir": temp, "include_dashboard": False})
    try:
        c.add_node(num_cpus=1)
        c.wait_for_nodes()
        yield c.address
    finally:
        ray.shutdown()
        c.shutdown()


@pytest.mark.integration
def test_cluster_builds_on_workers_and_matches_a_local_run(tmp_path, cluster, monkeypatch):
    import ray

    es = make_set(tmp_path, 12)
    configs = [config_from_dict(v) for v in VARIANTS]
    local = tmp_path / "local.json"
    # share_work off on both sides: Ray workers keep no cross-query memo, so "reused" would differ in traces
    run_eval(load_eval_set(str(es)), configs, RunOptions(output=local, progress=False, mlflow=False, share_work=False,
                                                          cache_root=tmp_path / "local-cache"), echo=lambda m: None)

    import evalkit.index.bm25 as bm25
    from evalkit.models.embedders import CachedEmbedder

    def refuse(*a, **k):
        raise AssertionError("the driver built an index: that is the workers' job")

    monkeypatch.setattr(bm25, "_tokens", refuse)  # driver only: workers are other processes
    monkeypatch.setattr(CachedEmbedder, "encode_passages", refuse)
    shared = tmp_path / "shared-cache"  # the folder every node sees
    remote = tmp_path / "ray.json"
    summary = run_eval(load_eval_set(str(es)), configs,
                       RunOptions(output=remote, progress=False, mlflow=False, cache_root=shared, executor="ray",
                                  share_work=False,
                                  ray_address=cluster, workers=2), echo=lambda m: None)
    assert {n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]} == {"127.0.0.1"}
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    assert sorted(p.name.split("-")[0] for p in (shared / "indexes").iterdir()) == ["bm25", "bm25", "bm25tok",
                                                                                   "bm25tok", "dense"]
    for v in VARIANTS:
        assert summary.variants[v["name"]].n_failed == 0
        got, want = _records(remote, v["name"]), _records(local, v["name"])
        for a, b in zip(got, want):
            assert a == b, (v["name"], a["query_id"], {k for k in a if a[k] != b.get(k)},
                            [(x, y) for x, y in zip(a["trace"], b["trace"]) if x != y])
        assert len(got) == len(want) == 12
