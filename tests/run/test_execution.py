"""Executors and interruptions: Ray gives the same numbers, a SIGKILLed run resumes exactly, dry runs."""
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
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.evalsets import freeze, load_eval_set
from evalkit.graph import config_from_dict
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import read_results

HERE = Path(__file__).resolve().parent
DOCS = [
    ("fin-001", "电子发票报销规定", "员工报销时，单张电子发票金额上限为5000元。超过上限需部门总监审批。"),
    ("it-001", "Laptop repair", "If your laptop is broken, open a ticket in the IT portal. Repairs take 3 business days."),
    ("it-002", "Error codes", "Error E-4012 means the battery controller failed. E-4013 means the fan failed."),
    ("cfg-001", "Config reference", "The field retry.max_attempts defaults to 3. timeout.seconds defaults to 30."),
    ("hr-001", "育儿假", "子女出生后，员工可享受10天育儿假。"),
]
BASE = [("电子发票报销上限是多少", ["fin-001"]), ("what does error E-4012 mean", ["it-002"]),
        ("retry.max_attempts default", ["cfg-001"]), ("孩子出生能休几天假", ["hr-001"]),
        ("my laptop broke, who repairs it", ["it-001"])]


def make_set(tmp_path: Path, n: int) -> Path:
    (tmp_path / "corpora").mkdir(exist_ok=True)
    corpus = tmp_path / "corpora" / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}, ensure_ascii=False) + "\n"
                              for i, t, x in DOCS), encoding="utf-8")
    path = tmp_path / "s.jsonl"
    rows = []
    for i in range(n):
        q, gold = BASE[i % len(BASE)]
        rows.append({"id": f"q{i:03d}", "question": q, "relevant_doc_ids": gold, "type": "single",
                     "lang": "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in q) else "en"})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    freeze(path, corpus=str(corpus))
    return path


HYBRID = {"name": "hybrid", "nodes": {
    "retrieve": {"type": "retrieve", "params": {"dense": {"embedder": "e5"}, "bm25": {}}},
    "rerank": {"type": "rerank", "params": {"model": "e5", "top_k": 5}}},
    "edges": {"start": "retrieve", "retrieve": "rerank", "rerank": "end"}}


@pytest.mark.integration
def test_ray_executor_gives_identical_results(tmp_path: Path):
    es = make_set(tmp_path, 10)
    runs = {}
    for executor, workers in (("local", 1), ("local", 3), ("ray", 2)):
        out = tmp_path / f"{executor}{workers}.json"
        opts = RunOptions(output=out, workers=workers, executor=executor, progress=False, mlflow=False,
                          share_work=False)
        summary = run_eval(load_eval_set(str(es)), [config_from_dict(HYBRID)], opts, echo=lambda m: None)
        rows = read_results(out.with_suffix("") / "hybrid" / "per_query.jsonl")
        runs[(executor, workers)] = (summary.variants["hybrid"].metrics,
                                     [(r.query_id, r.retrieved, r.reranked, r.metrics) for r in rows])
    import ray

    ray.shutdown()
    reference = runs[("local", 1)]
    assert runs[("local", 3)] == reference
    assert runs[("ray", 2)] == reference  # to the last digit


def _cli(*args: str, env: dict | None = None, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "evalkit.cli", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


@pytest.mark.integration
def test_a_sigkilled_run_resumes_with_nothing_lost_or_duplicated(tmp_path: Path):
    es = make_set(tmp_path, 30)
    log = tmp_path / "executions.log"
    cfg = tmp_path / "slow.yaml"
    cfg.write_text(yaml.safe_dump({"name": "slow", "nodes": {
        "slow": {"type": "test_slow", "params": {"seconds": 0.2, "log": str(log)}},
        "retrieve": {"type": "retrieve", "params": {"bm25": {}}}},
        "edges": {"start": "slow", "slow": "retrieve", "retrieve": "end"}}), encoding="utf-8")
    env = {**os.environ, "EVALKIT_PLUGINS": "slow_nodes",
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    common = ["--no-mlflow", "--no-progress"]
    # an uninterrupted run, for reference
    ref = _cli("run", "--eval-set", str(es), "--graph-config", str(cfg), "--output", str(tmp_path / "ref.json"),
               *common, env=env)
    assert ref.wait(timeout=300) == 0, ref.stderr.read()
    log.unlink()
    out = tmp_path / "run.json"
    per_query = out.with_suffix("") / "slow" / "per_query.jsonl"
    proc = _cli("run", "--eval-set", str(es), "--graph-config", str(cfg), "--output", str(out), *common, env=env)
    deadline = time.time() + 120
    while time.time() < deadline:
        if per_query.exists() and len(per_query.read_text().splitlines()) >= 6:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    finished_before = {json.loads(line)["query_id"] for line in per_query.read_text().splitlines()
                       if line.endswith("}")}
    assert 6 <= len(finished_before) < 30
    # killed mid-variant: the summary written at the start says the variant is still pending (gate: exit 7)
    assert json.loads(out.read_text())["pending"] == ["slow"]
    executed_before = log.read_text().split()
    resumed = _cli("run", "--resume", str(out), *common, env=env)
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read()
    executed_after = log.read_text().split()[len(executed_before):]
    assert not set(executed_after) & finished_before  # finished queries were not run again
    ids = [json.loads(line)["query_id"] for line in per_query.read_text().splitlines()]
    assert ids == [f"q{i:03d}" for i in range(30)]  # none lost, none duplicated, eval-set order
    got = json.loads(out.read_text())["variants"]["slow"]
    want = json.loads((tmp_path / "ref.json").read_text())["variants"]["slow"]
    assert got["metrics"] == want["metrics"] and got["n_failed"] == want["n_failed"] == 0


def test_dry_run_estimates_without_running(tmp_path: Path):
    es = make_set(tmp_path, 5)
    paths = []
    for name, fusion in (("rrf", "rrf"), ("weighted", "weighted")):
        cfg = {"name": name, "nodes": {"retrieve": {"type": "retrieve", "params": {
            "bm25": {}, "dense": {"embedder": "e5"}, "fusion": {"method": fusion}}},
            "rerank": {"type": "rerank", "params": {"model": "e5"}}},
            "edges": {"start": "retrieve", "retrieve": "rerank", "rerank": "end"}}
        paths += ["--graph-config", str(tmp_path / f"{name}.yaml")]
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    res = CliRunner().invoke(cli, ["run", "--eval-set", str(es), *paths, "--output", str(tmp_path / "x.json"),
                                   "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "5 queries x 2 variants = 10 query runs" in res.output
    assert "node executions: 20 on the default paths, 20 after sharing" in res.output
    assert "passages to encode with intfloat/multilingual-e5-small-q4" in res.output
    assert not (tmp_path / "x.json").exists()


def test_resume_without_a_run_says_what_to_do(tmp_path: Path):
    res = CliRunner().invoke(cli, ["run", "--resume", str(tmp_path / "nothing.json")])
    assert res.exit_code != 0 and "nothing to resume" in res.output
    res = CliRunner().invoke(cli, ["run", "--output", str(tmp_path / "x.json")])
    assert res.exit_code == 2 and "missing --eval-set, --graph-config" in res.output


def test_dry_run_suggests_an_approximate_index_for_a_big_corpus(tmp_path: Path, monkeypatch):
    import evalkit.run.plan as plan

    es = load_eval_set(str(make_set(tmp_path, 3)))
    flat = config_from_dict({"name": "flat", "chunking": {"method": "document"}, "nodes": {
        "retrieve": {"type": "retrieve", "params": {"dense": {"embedder": "e5"}}}},
        "edges": {"start": "retrieve", "retrieve": "end"}})
    hnsw = config_from_dict({"name": "hnsw", "chunking": {"method": "document"}, "nodes": {
        "retrieve": {"type": "retrieve", "params": {"dense": {"embedder": "e5", "index": "hnsw"}}}},
        "edges": {"start": "retrieve", "retrieve": "end"}})
    assert plan.make_plan(es, [flat, hnsw], "offline", tmp_path / "cache").suggestions == []  # 5 passages: fine
    monkeypatch.setattr(plan, "FLAT_SUGGEST_ABOVE", 4)
    found = plan.make_plan(es, [flat, hnsw], "offline", tmp_path / "cache")
    assert found.suggestions == [
        "flat: node 'retrieve' searches 5 passages with an exact (flat) index; consider `index: hnsw` (or `ivf`) "
        "in its dense channel: see docs/scaling.md for the speed and the recall@k it costs"]
    assert "suggestion: flat: node 'retrieve' searches 5 passages" in found.table()


def test_resume_continues_where_the_results_are_now(tmp_path: Path, monkeypatch):
    """invocation.json keeps --output as typed (relative); resuming a moved run, or from another folder, must go
    on in the folder named by --resume, not start a second run at the recorded path."""
    es = make_set(tmp_path, 4)
    config = tmp_path / "bm25.yaml"
    config.write_text(yaml.safe_dump({"name": "bm25", "nodes": {"retrieve": {"type": "retrieve", "params": {
        "bm25": {}}}}, "edges": {"start": "retrieve", "retrieve": "end"}}))
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli, ["run", "--eval-set", f"{es}@v1", "--graph-config", str(config), "--output",
                                   "res/r.json", "--no-mlflow", "--no-progress"])
    assert res.exit_code == 0, res.output
    records = tmp_path / "res" / "r" / "bm25" / "per_query.jsonl"
    records.write_text("".join(records.read_text().splitlines(keepends=True)[:2]))  # as if killed after 2
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (tmp_path / "res" / "r").rename(moved / "r")
    (tmp_path / "res" / "r.json").rename(moved / "r.json")
    monkeypatch.chdir(moved)
    res = CliRunner().invoke(cli, ["run", "--resume", str(moved / "r.json"), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "resuming, 2 finished queries kept, 2 to run" in res.output
    assert "resuming it in" in res.output
    assert len(read_results(moved / "r" / "bm25" / "per_query.jsonl")) == 4
    assert json.loads((moved / "r.json").read_text())["status"] == "complete"
    assert not (moved / "res").exists() and not (tmp_path / "res" / "r.json").exists()
