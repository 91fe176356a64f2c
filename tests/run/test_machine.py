"""Where a run was computed: recorded in its summary, and said by compare and gate when two runs differ."""
from __future__ import annotations

import json
import platform
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.graph import config_from_dict
from evalkit.machine import KERNEL_FLAGS, environment, environment_notes
from evalkit.run.runner import RunOptions, run_eval

from .test_degraded import evalset  # noqa: F401 - the fixture

HERE = {"cpu": "Intel(R) Xeon(R) Processor", "cpu_flags": ["avx", "avx2", "avx512f"], "machine": "x86_64",
        "python": "3.11.7", "libraries": {"numpy": "2.4.6", "torch": "2.13.0+cpu"}}


def test_the_environment_names_the_cpu_and_the_stack_and_nothing_personal():
    env = environment()
    assert env["cpu"] and set(env["cpu_flags"]) <= set(KERNEL_FLAGS)
    assert env["libraries"]["numpy"] == np.__version__ and env["python"] == platform.python_version()
    assert platform.node() not in json.dumps(env) and str(Path.home()) not in json.dumps(env)


def test_notes_name_what_differs_and_stay_silent_otherwise():
    labels = ("base", "cand")
    assert environment_notes(HERE, dict(HERE), labels) == []
    assert environment_notes(HERE, {}, labels) == [] and environment_notes(None, HERE, labels) == []  # not recorded
    other = {**HERE, "cpu": "AMD EPYC 7B13", "cpu_flags": ["avx", "avx2"],
             "libraries": {"numpy": "2.4.6", "torch": "2.12.0+cpu", "faiss-cpu": "1.15.1"}}
    (note,) = environment_notes(HERE, other, labels)
    assert "CPU 'Intel(R) Xeon(R) Processor' vs 'AMD EPYC 7B13'" in note
    assert "only base: avx512f" in note and "only cand" not in note
    assert "faiss-cpu - vs 1.15.1" in note and "torch 2.13.0+cpu vs 2.12.0+cpu" in note and "numpy" not in note


def test_a_run_records_its_environment_and_the_gate_notes_another_machine(evalset, tmp_path: Path):  # noqa: F811
    config = config_from_dict({"name": "bm25", "nodes": {"retrieve": {"type": "retrieve", "params": {
        "bm25": {"tokenizer": "auto"}}}}, "edges": {"start": "retrieve", "retrieve": "end"}})
    out = tmp_path / "base.json"
    summary = run_eval(evalset, [config], RunOptions(output=out, mlflow=False, progress=False), echo=lambda _: None)
    assert summary.environment == environment()
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["environment"] == environment()
    moved = tmp_path / "cand.json"
    data["environment"] = {**data["environment"], "cpu": "Some other CPU", "cpu_flags": ["avx2"]}
    moved.write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "cand").symlink_to(out.with_suffix(""), target_is_directory=True)  # the same per-query records
    args = ["--variant", "bm25", "--metric", "hit@5", "--max-drop", "0.1"]
    res = CliRunner().invoke(cli, ["gate", "--baseline", str(out), "--candidate", str(moved), *args])
    assert res.exit_code == 0, res.output
    assert "different machines or stacks (CPU" in res.output and "'Some other CPU'" in res.output
    same = CliRunner().invoke(cli, ["gate", "--baseline", str(out), "--candidate", str(out), *args])
    assert same.exit_code == 0 and "different machines" not in same.output
    cmp = CliRunner().invoke(cli, ["compare", str(out), str(moved), "--variants", "base:bm25,cand:bm25"])
    assert "different machines or stacks" in cmp.output, cmp.output


def test_mlflow_tags_give_the_environment_back():
    from evalkit.machine import environment_from_tags, environment_tags

    env = environment()
    tags = environment_tags(env)
    assert tags["environment.lib.numpy"] == np.__version__ and all(k.startswith("environment.") for k in tags)
    assert environment_from_tags(tags) == env
    assert environment_tags({}) == {} and environment_from_tags({"mlflow.user": "x"}) == {}


def test_resuming_a_run_begun_on_another_machine_says_so(evalset, tmp_path: Path):  # noqa: F811
    config = config_from_dict({"name": "bm25", "nodes": {"retrieve": {"type": "retrieve", "params": {
        "bm25": {"tokenizer": "auto"}}}}, "edges": {"start": "retrieve", "retrieve": "end"}})
    out = tmp_path / "r.json"
    said: list[str] = []
    options = RunOptions(output=out, mlflow=False, progress=False)
    run_eval(evalset, [config], options, echo=said.append)
    resume = RunOptions(output=out, mlflow=False, progress=False, resume=True)
    run_eval(evalset, [config], resume, echo=said.append)
    assert not any("another machine" in m for m in said)  # same machine: nothing to say
    data = json.loads(out.read_text(encoding="utf-8"))
    data["environment"]["libraries"]["numpy"] = "1.26.4"
    out.write_text(json.dumps(data), encoding="utf-8")
    run_eval(evalset, [config], resume, echo=said.append)
    (warning,) = [m for m in said if "another machine" in m]
    assert f"numpy 1.26.4 vs {np.__version__}" in warning and "kept were computed there" in warning
