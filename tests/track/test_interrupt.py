"""A real ``evalkit run`` killed while MLflow logs: no run stays RUNNING, the summary says it is partial.

The run is a sweep of three slow BM25 variants (``tests/run/slow_nodes.py``: a node that
sleeps 250 ms a query) over 40 queries, 10 s a variant, MLflow on (background worker). The test waits
until the worker has a child run open (MLflow logging in progress) and then:

- SIGTERM to evalkit: exit 143; the open child and the parent end KILLED at once;
  the summary file says ``"partial": true`` and lists the variants that did not run
  (and, without MLflow, a SIGTERM while queries run leaves those variants pending).
- SIGKILL to evalkit *and* its worker (the whole process group): nothing can clean up,
  the runs stay RUNNING; the next invocation marks them KILLED, naming the dead process.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from evalkit.evalsets import freeze

RUN_DIR = Path(__file__).resolve().parents[1] / "run"          # slow_nodes.py lives there
VARIANTS = {"slow__seconds-0.25", "slow__seconds-0.251", "slow__seconds-0.252"}
WORDS = ["invoice", "laptop", "retry", "travel", "leave", "battery", "timeout", "config"]


def _setup(tmp: Path) -> tuple[Path, Path]:
    (tmp / "corpora").mkdir()
    corpus = tmp / "corpora" / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "title": w, "text": f"about the {w} policy {i}"}) + "\n"
                              for i, w in enumerate(WORDS)), encoding="utf-8")
    es = tmp / "s.jsonl"
    es.write_text("".join(json.dumps({"id": f"q{i:02d}", "question": f"what about {WORDS[i % 8]}",
                                      "relevant_doc_ids": [f"d{i % 8}"], "type": "single", "lang": "en"}) + "\n"
                          for i in range(40)), encoding="utf-8")
    freeze(es, corpus=str(corpus))
    cfg = tmp / "slow.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "slow", "nodes": {"slow": {"type": "test_slow", "params": {"seconds": 0.25}},
                                  "retrieve": {"type": "retrieve", "params": {"bm25": {"top_k": 5}}}},
        "edges": {"start": "slow", "slow": "retrieve", "retrieve": "end"},
        "sweep": {"slow.seconds": [0.25, 0.251, 0.252]}}), encoding="utf-8")
    return es, cfg


def _start(es: Path, cfg: Path, out: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "EVALKIT_PLUGINS": "slow_nodes", "MLFLOW_DISABLE_TELEMETRY": "true",
           "PYTHONPATH": os.pathsep.join([str(RUN_DIR), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-m", "evalkit.cli", "run", "--eval-set", str(es), "--graph-config",
                             str(cfg), "--output", str(out), "--no-progress", *extra], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _runs(out: Path) -> list:
    from mlflow import MlflowClient

    db = out.parent / "mlflow.db"
    if not db.exists():
        return []
    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("evalkit")
    return client.search_runs([exp.experiment_id], max_results=100) if exp else []


def _open_children(db: Path) -> int:
    """RUNNING child runs, read with sqlite3 in read-only mode: an MlflowClient here would race the
    worker's creation of the store (both would run MLflow's schema migrations)."""
    import sqlite3

    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return con.execute("SELECT count(*) FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid "
                               "WHERE r.status = 'RUNNING' AND t.key = 'mlflow.parentRunId'").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:        # tables not created yet, or locked for a moment
        return 0


def _wait_for_open_child(proc: subprocess.Popen, out: Path, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        if _open_children(out.parent / "mlflow.db"):
            return
        time.sleep(0.05)
    pytest.fail("no child run was ever open")


@pytest.mark.integration
def test_sigterm_during_mlflow_logging_ends_runs_killed_and_marks_the_summary_partial(tmp_path: Path):
    es, cfg = _setup(tmp_path)
    out = tmp_path / "res" / "run.json"
    proc = _start(es, cfg, out)
    _wait_for_open_child(proc, out)
    proc.send_signal(signal.SIGTERM)                  # evalkit only; its worker is told by evalkit
    assert proc.wait(timeout=60) == 143, proc.stderr.read()
    err = proc.stderr.read()
    assert "interrupted (SIGTERM)" in err and "evalkit run --resume" in err
    runs = _runs(out)
    statuses = {r.info.run_name: r.info.status for r in runs}
    assert "RUNNING" not in statuses.values(), (statuses, err)
    parent = next(r for r in runs if "mlflow.parentRunId" not in r.data.tags)
    assert parent.info.status == "KILLED" and "SIGTERM" in parent.data.tags["evalkit.ended_by"]
    assert "KILLED" in {s for n, s in statuses.items() if n != parent.info.run_name}   # the child being logged
    summary = json.loads(out.read_text())
    assert summary["partial"] is True and summary["status"] == "interrupted"
    assert summary["interrupted"] == "SIGTERM"
    # on a busy machine the worker may open its first child only after the last query: then nothing is pending
    assert set(summary["variants"]) | set(summary["pending"]) == VARIANTS
    assert not set(summary["variants"]) & set(summary["pending"])


@pytest.mark.integration
def test_sigterm_while_queries_run_leaves_a_summary_that_lists_what_is_missing(tmp_path: Path):
    es, cfg = _setup(tmp_path)
    out = tmp_path / "res" / "run.json"
    proc = _start(es, cfg, out, "--no-mlflow")
    deadline = time.monotonic() + 240
    # written before any query (every variant pending: no earlier summary survives a kill), then after each variant
    while not out.exists() or len(json.loads(out.read_text())["pending"]) == len(VARIANTS):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)
    running = json.loads(out.read_text())
    assert running["status"] == "running" and running["partial"] is True and len(running["pending"]) == 2
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143, proc.stderr.read()
    summary = json.loads(out.read_text())
    assert summary["status"] == "interrupted" and summary["partial"] is True and summary["interrupted"] == "SIGTERM"
    assert summary["pending"] and set(summary["variants"]) | set(summary["pending"]) == VARIANTS


@pytest.mark.integration
def test_runs_left_running_by_a_sigkill_are_marked_killed_by_the_next_invocation(tmp_path: Path):
    es, cfg = _setup(tmp_path)
    out = tmp_path / "res" / "run.json"
    proc = _start(es, cfg, out)
    _wait_for_open_child(proc, out)
    os.killpg(proc.pid, signal.SIGKILL)               # evalkit and its MLflow worker: nobody cleans up
    proc.wait(timeout=60)
    left = {r.info.run_id for r in _runs(out) if r.info.status == "RUNNING"}
    assert len(left) >= 2                             # the parent and the child being logged
    again = _start(es, cfg, tmp_path / "res" / "again.json")
    assert again.wait(timeout=300) == 0, again.stderr.read()
    runs = {r.info.run_id: r for r in _runs(out)}
    for run_id in left:
        assert runs[run_id].info.status == "KILLED"
        assert "ended without closing it" in runs[run_id].data.tags["evalkit.ended_by"]
    assert "RUNNING" not in {r.info.status for r in runs.values()}
