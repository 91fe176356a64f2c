"""The local MLflow store: two first runs at once no longer half-migrate it, and a store left half-migrated
(by an older evalkit) is an error with the fix, before any work, instead of a warning on every run.

Before (issue 33): two first runs into a new folder both exited 0 with `warning: MLflow logging failed
(... alembic ...)`; the store kept `_alembic_tmp_tags`, and every later run into that folder skipped
MLflow with only that warning.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from faultkit import N_QUESTIONS, SET, cli, one_line_error, spawn


def _tables(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    finally:
        con.close()


def test_a_half_migrated_store_is_an_error_with_the_fix(ws: Path):
    db = ws / "out" / "mlflow.db"
    db.parent.mkdir()
    con = sqlite3.connect(db)  # what the race left: a schema upgrade's copy of 'tags' never renamed back
    con.executescript("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL);"
                      "INSERT INTO alembic_version VALUES ('4465047574b1');"
                      "CREATE TABLE tags (key VARCHAR(250), value VARCHAR(5000), run_uuid VARCHAR(32));"
                      "CREATE TABLE _alembic_tmp_tags (key VARCHAR(250), value VARCHAR(8000), run_uuid VARCHAR(32));")
    con.commit()
    con.close()
    before = db.read_bytes()
    run = cli(ws, "run", "--eval-set", SET, "--graph-config", "bm25.yaml", "--output", "out/kb.json", "--no-progress")
    msg = one_line_error(run, 2)
    assert msg.startswith(f"error: MLflow store {db} was left half-migrated (table _alembic_tmp_tags ")
    assert (f"repair it (its runs are kept) with: sqlite3 {db} 'DROP TABLE _alembic_tmp_tags;' && mlflow db upgrade "
            f"sqlite:///{db}") in msg
    assert msg.endswith("; or run with --no-mlflow (results files only)")
    assert not (ws / "out" / "kb" / "bm25").exists()  # refused before any query ran
    assert db.read_bytes() == before
    (ws / "mine.trec").write_text("".join(f"q{n} Q0 d{n} 1 1.0 mine\n" for n in range(N_QUESTIONS)))
    score = cli(ws, "score", "--eval-set", SET, "--run", "mine.trec", "--name", "mine", "--output", "out/kb.json")
    assert "was left half-migrated (table _alembic_tmp_tags" in one_line_error(score, 1)
    assert cli(ws, "run", "--eval-set", SET, "--graph-config", "bm25.yaml", "--output", "out/kb.json",
               "--no-progress", "--no-mlflow").returncode == 0  # the way around it the message gives


@pytest.mark.slow
def test_two_first_runs_at_once_into_a_new_folder_share_one_store(ws: Path):
    runs = [spawn(ws, "run", "--eval-set", SET, "--graph-config", "bm25.yaml", "--output", f"out/{name}.json",
                  "--no-progress", "--mlflow-sync", "--no-traces") for name in ("a", "b")]
    for proc in runs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        assert "warning" not in err, err  # before: "warning: MLflow logging failed (... alembic ...)"
        assert "MLflow: mlflow ui --backend-store-uri" in out
    db = ws / "out" / "mlflow.db"
    assert not [t for t in _tables(db) if t.startswith("_alembic_tmp_")]
    con = sqlite3.connect(db)
    try:
        statuses = sorted(r[0] for r in con.execute("SELECT status FROM runs"))
    finally:
        con.close()
    assert statuses == ["FINISHED"] * 4  # a parent and a variant run of each invocation
