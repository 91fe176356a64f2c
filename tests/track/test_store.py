"""evalkit.track.store: the artifact location follows a moved store; RUNNING runs of dead processes are reaped."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from evalkit.records import EvalSetRef, QueryResult, RunSummary, VariantSummary
from evalkit.track import VariantLog, default_tracking_uri, log_invocation
from evalkit.track.store import (
    OWNER_HOST,
    OWNER_PID,
    OWNER_STARTED,
    artifact_root,
    owner_alive,
    owner_tags,
    reap_stale_runs,
    ui_hint,
)


def _invocation(folder: Path) -> tuple[RunSummary, list[VariantLog]]:
    results = [QueryResult(query_id="q1", question="q?", gold_doc_ids=["d1"], retrieved=[{"doc_id": "d1", "score": 1}],
                           reranked=[], metrics={"hit@5": 1.0}, trace=[])]
    per_query = folder / "res" / "v" / "per_query.jsonl"
    per_query.parent.mkdir(parents=True, exist_ok=True)
    per_query.write_text(json.dumps(results[0].to_dict()) + "\n")
    summary = VariantSummary(metrics={"hit@5": 1.0}, n_failed=0, n_queries=1, n_excluded=0)
    v = VariantLog(name="v", params={"k": "1"}, config_yaml="name: v\n", summary=summary, results=results,
                   per_query_path=per_query)
    return RunSummary(eval_set=EvalSetRef(name="e", version=1, sha256="a" * 64, n_queries=1),
                      variants={"v": summary}), [v]


def test_artifact_root_is_beside_the_store():
    assert artifact_root("sqlite:////data/x/mlflow.db", Path("/out")) == Path("/data/x/mlartifacts")
    assert artifact_root("postgresql://u@h/db", Path("/out")) == Path("/out").resolve() / "mlartifacts"
    assert artifact_root("http://127.0.0.1:5000", Path("/out")) is None


def test_a_moved_results_folder_writes_new_artifacts_into_the_new_folder(tmp_path: Path):
    from mlflow import MlflowClient

    old, new = tmp_path / "results", tmp_path / "moved" / "results"
    run, variants = _invocation(old)
    first = log_invocation(run, variants, old)
    new.parent.mkdir()
    shutil.move(str(old), str(new))                    # the user moves the whole results folder
    notes: list[str] = []
    run, variants = _invocation(new)
    second = log_invocation(run, variants, new, note=notes.append)
    assert not old.exists()                            # nothing was written into the old place
    client = MlflowClient(tracking_uri=default_tracking_uri(new))
    exp = client.get_experiment(second["experiment_id"])
    assert exp.name == "evalkit" and exp.artifact_location == (new / "mlartifacts").resolve().as_uri()
    child = client.get_run(variants[0].summary.mlflow_run_id)
    assert child.info.artifact_uri.startswith((new / "mlartifacts").resolve().as_uri())
    assert {a.path for a in client.list_artifacts(child.info.run_id)} >= {"per_query.jsonl", "config.yaml"}
    assert list((new / "mlartifacts").rglob(f"{child.info.run_id}/artifacts/per_query.jsonl"))
    # the earlier runs stay visible, in the renamed experiment that names where they were logged
    stale = client.get_experiment(first["experiment_id"])
    assert stale.name == f"evalkit (moved from {old.resolve()})"
    assert client.get_run(first["parent_run_id"]).info.experiment_id == stale.experiment_id
    assert len(notes) == 1 and "moved" in notes[0] and str(new / "mlartifacts") in notes[0]
    # a third invocation in the new place reuses the new experiment, silently
    run, variants = _invocation(new)
    third = log_invocation(run, variants, new, note=notes.append)
    assert third["experiment_id"] == second["experiment_id"] and len(notes) == 1


def test_owner_tags_tell_a_live_process_from_a_dead_one():
    me = owner_tags()
    assert me[OWNER_HOST] == socket.gethostname() and me[OWNER_PID] == str(os.getpid())
    assert owner_alive(me) is True
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    assert owner_alive({**me, OWNER_PID: dead.stdout.strip()}) is False            # process gone
    assert owner_alive({**me, OWNER_STARTED: "12.3"}) is False                     # pid reused by another process
    assert owner_alive({**me, OWNER_HOST: "elsewhere"}) is None                    # cannot tell
    assert owner_alive({}) is None


def test_stale_running_runs_are_marked_killed(tmp_path: Path):
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=default_tracking_uri(tmp_path))
    exp = client.create_experiment("evalkit", artifact_location=(tmp_path / "mlartifacts").as_uri())
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    dead = client.create_run(exp, tags={**owner_tags(), OWNER_PID: gone.stdout.strip()}).info.run_id
    alive = client.create_run(exp, tags=owner_tags()).info.run_id
    foreign = client.create_run(exp, tags={**owner_tags(), OWNER_HOST: "other-host"}).info.run_id
    untagged = client.create_run(exp).info.run_id
    assert reap_stale_runs(client, exp) == [dead]
    assert client.get_run(dead).info.status == "KILLED"
    assert "ended without closing it" in client.get_run(dead).data.tags["evalkit.ended_by"]
    assert {client.get_run(r).info.status for r in (alive, foreign, untagged)} == {"RUNNING"}


def test_ui_hint_is_one_line_naming_the_command_and_the_run():
    local = ui_hint("sqlite:////r/mlflow.db", "3", "abc")
    assert local["ui_command"] == "mlflow ui --backend-store-uri sqlite:////r/mlflow.db"
    assert local["ui_url"] == "http://127.0.0.1:5000/#/experiments/3/runs/abc"
    assert "\n" not in local["hint"] and local["ui_command"] in local["hint"] and local["ui_url"] in local["hint"]
    remote = ui_hint("http://mlflow:5000/", "3", "abc")
    assert remote["ui_command"] == remote["ui_url"] == "http://mlflow:5000/#/experiments/3/runs/abc"


def test_a_half_migrated_store_is_named_with_its_leftover_tables(tmp_path: Path):
    import sqlite3

    import pytest

    from evalkit.track.store import StoreError, check_store, unfinished_migration

    db = tmp_path / "mlflow.db"
    check_store(None, tmp_path)  # no store yet: nothing to refuse
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE tags (k TEXT); CREATE TABLE _alembic_tmp_tags (k TEXT);"
                      "CREATE TABLE _alembic_tmp_params (k TEXT); CREATE TABLE alembicXtmpYruns (k TEXT);")
    con.close()
    assert unfinished_migration(db) == ["_alembic_tmp_params", "_alembic_tmp_tags"]  # '_' is not a wildcard
    with pytest.raises(StoreError) as info:
        check_store(None, tmp_path)
    msg = str(info.value)
    assert msg.startswith(f"MLflow store {db} was left half-migrated (table _alembic_tmp_params, _alembic_tmp_tags ")
    assert f"sqlite3 {db} 'DROP TABLE _alembic_tmp_params; DROP TABLE _alembic_tmp_tags;' && mlflow db upgrade" in msg
    check_store("http://127.0.0.1:5000", tmp_path)  # a server's store is the server's business
    (tmp_path / "not.db").write_text("not a database")
    assert unfinished_migration(tmp_path / "not.db") == []  # MLflow's own error says more
