"""The newcomer path: the README's "Evaluate your own data" commands, followed literally.

A scratch folder stands for a fresh clone (its ``graph_configs/`` and ``eval_sets/``); the
test writes the two files the README describes (five documents, Chinese and English, and
their questions), then runs the five commands of the README block marked for this test, as
written, with the venv's ``evalkit`` and ``mlflow`` first on the PATH:
import -> copy a config -> run -> compare -> ``mlflow ui``. The MLflow store is then opened
with ``MlflowClient`` and through the UI server's REST API, and must hold the run: a parent run,
one child run per variant with the summary's numbers, and a trace per query and variant.

The one deviation: ``mlflow ui`` gets ``--port`` (a free port: 5000 may be taken on a shared
machine) and ``--workers 1``. README.zh-CN.md must show the same five commands.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("evalkit_tests_doc_blocks", Path(__file__).with_name("doc_blocks.py"))
doc_blocks = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = doc_blocks
_spec.loader.exec_module(doc_blocks)

REPO = doc_blocks.REPO
ME = "tests/docs/test_newcomer.py"

DOCS = [
    {"id": "hr-01", "title": "年假制度", "text": "员工入职满一年后，每年享有10天带薪年假。年假须提前3个工作日在系统中申请，"
                                           "当年未休完的年假最多可结转5天到次年第一季度。"},
    {"id": "hr-02", "title": "加班与调休", "text": "工作日加班按1.5倍工资计算，休息日加班优先安排调休，无法调休的按2倍工资计算。"
                                            "调休须在加班后30天内使用。"},
    {"id": "it-01", "title": "VPN access", "text": "Employees connect to the corporate VPN with the GlobalConnect client. "
                                                  "Accounts are locked after 5 failed logins; the IT helpdesk (ext. 4400) unlocks them."},
    {"id": "it-02", "title": "Laptop replacement", "text": "Company laptops are replaced every 4 years. A broken screen is "
                                                          "repaired free of charge once per device; a second repair is charged to the department."},
    {"id": "fin-01", "title": "Meal allowance", "text": "The meal allowance for business trips is 100 CNY per day in "
                                                       "first-tier cities and 80 CNY per day elsewhere."},
]
QUESTIONS = [
    {"id": "q1", "question": "入职满一年后每年有几天带薪年假？", "relevant_doc_ids": ["hr-01"], "lang": "zh", "reference_answer": "10天"},
    {"id": "q2", "question": "休息日加班不能调休的话怎么算工资？", "relevant_doc_ids": ["hr-02"], "lang": "zh"},
    {"id": "q3", "question": "Who unlocks a locked VPN account?", "relevant_doc_ids": ["it-01"], "lang": "en"},
    {"id": "q4", "question": "笔记本电脑屏幕坏了可以免费修吗？", "relevant_doc_ids": ["it-02"], "lang": "zh"},
    {"id": "q5", "question": "What is the daily meal allowance in a first-tier city?", "relevant_doc_ids": ["fin-01"], "lang": "en"},
]


def newcomer_commands(page: str) -> list[str]:
    blocks = [b for b in doc_blocks.blocks(REPO / page) if b.mark == "test" and b.reason.startswith(ME)]
    assert len(blocks) == 1, f"{page} should hold exactly one block marked for {ME}"
    return blocks[0].commands()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def test_both_readmes_show_the_same_five_commands():
    en = newcomer_commands("README.md")
    assert newcomer_commands("README.zh-CN.md") == en
    assert len(en) == 5 and en[0].startswith("evalkit import") and en[-1].startswith("mlflow ui")


@pytest.mark.slow
def test_a_newcomer_follows_the_readme(tmp_path: Path):
    commands = newcomer_commands("README.md")
    clone = tmp_path / "clone"
    for folder in ("graph_configs", "eval_sets"):
        __import__("shutil").copytree(REPO / folder, clone / folder)
    (clone / "my_docs.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    (clone / "my_questions.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUESTIONS),
                                              encoding="utf-8")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, target in (("evalkit", "evalkit.cli"), ("mlflow", "mlflow")):
        (bindir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {target} "$@"\n')
        (bindir / name).chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("MLFLOW_TRACKING_URI", None)

    outputs = []
    for cmd in commands[:4]:
        res = subprocess.run(["bash", "-c", cmd], check=False, cwd=clone, env=env, capture_output=True, text=True,
                             timeout=600)
        assert res.returncode == 0, f"`{cmd}` exited {res.returncode}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
        outputs.append(res.stdout)
    imported, _, ran, compared = outputs
    assert "5 records from 5 rows, frozen as v1" in imported
    assert (clone / "eval_sets" / "corpora" / "my_kb.jsonl").is_file()
    assert "bm25" in ran and "hybrid_rrf" in ran and "MLflow: mlflow ui --backend-store-uri sqlite:///" in ran
    assert "hybrid_rrf vs bm25 (reference)" in compared

    summary = json.loads((clone / "results" / "my_kb.json").read_text(encoding="utf-8"))
    assert summary["eval_set"]["name"] == "my_kb" and summary["eval_set"]["n_queries"] == 5
    # a hand count: BM25 cannot match q4 (a Chinese question about an English document shares no term with it),
    # so its gold document is not ranked first; every other question's gold document is
    bm25 = [json.loads(line) for line in (clone / "results" / "my_kb" / "bm25" / "per_query.jsonl").read_text().splitlines()]
    first = {r["query_id"]: (r["retrieved"][0]["doc_id"] if r["retrieved"] else None) for r in bm25}
    assert {q: first[q] == g for q, g in (("q1", "hr-01"), ("q2", "hr-02"), ("q3", "it-01"), ("q5", "fin-01"))} == \
        {"q1": True, "q2": True, "q3": True, "q5": True}
    assert first["q4"] != "it-02"

    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{clone / 'results' / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("evalkit")
    assert exp is not None
    runs = client.search_runs([exp.experiment_id])
    children = {r.data.tags.get("mlflow.runName"): r for r in runs if "mlflow.parentRunId" in r.data.tags}
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 1 and set(children) == {"bm25", "hybrid_rrf"}
    for name, run in children.items():
        assert run.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
        assert run.info.run_id == summary["variants"][name]["mlflow_run_id"]
        assert run.data.metrics["hit_at_5"] == summary["variants"][name]["metrics"]["hit@5"]
        assert run.data.metrics["mrr_at_10"] == summary["variants"][name]["metrics"]["mrr@10"]
    traces = client.search_traces(locations=[exp.experiment_id], max_results=100)
    assert len(traces) == 10  # one per question and variant

    # the fifth command: the UI server, on a free port, sees the same runs
    port = free_port()
    ui = subprocess.Popen(["bash", "-c", f"exec {commands[4]} --port {port} --workers 1"], cwd=clone, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                found = get_json(f"http://127.0.0.1:{port}/api/2.0/mlflow/runs/search",
                                 {"experiment_ids": [exp.experiment_id]})
                break
            except OSError:
                assert ui.poll() is None, ui.stderr.read().decode()[-3000:]
                assert time.monotonic() < deadline, "mlflow ui did not answer within 120 s"
                time.sleep(1)
        assert {r["info"]["run_id"] for r in found["runs"]} == {r.info.run_id for r in runs}
    finally:
        os.killpg(ui.pid, signal.SIGTERM)
        ui.wait(timeout=30)
