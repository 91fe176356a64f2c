"""Analysis outputs (``evalkit report``) logged to MLflow after the results folder moved.

The summary records the sqlite store by its absolute path. After ``mv results/ elsewhere/``
the report used to open that path: MLflow created an empty ``mlflow.db`` in the old,
deleted folder (recreating it), and the report failed to log ("Run ... not found"). The
store beside the moved summary is the run's store now; its runs still name the old
artifact folder (MLflow keeps absolute artifact paths), so nothing is written there either.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from evalkit.cli import cli

from .conftest import qr, write_run


def _moved_run(tmp_path: Path, mlflow_store) -> tuple[Path, Path]:
    old, new = tmp_path / "old", tmp_path / "new"
    mlflow_store(old)
    write_run(old, "ml", {"plain": [qr("q1", ["d1"], {"hit@5": 1.0}), qr("q2", ["d2"], {"hit@5": 0.0})]},
              log_mlflow=True)
    shutil.move(old, new)
    return old, new / "ml.json"


def test_report_after_a_move_recreates_nothing_at_the_old_place(tmp_path: Path, mlflow_store):
    old, summary = _moved_run(tmp_path, mlflow_store)
    res = CliRunner().invoke(cli, ["report", str(summary), "--resamples", "200"])
    assert res.exit_code == 0, res.output
    assert not old.exists(), sorted(p.name for p in old.rglob("*"))
    assert (summary.parent / "ml.report.html").exists()
    assert "moved" in res.output and str(old) in res.output  # says why the report is not in MLflow


def test_tracking_uri_follows_the_moved_store(tmp_path: Path, mlflow_store):
    from evalkit.analysis.artifacts import tracking_uri_for
    from evalkit.analysis.runs import load_run
    from evalkit.track.store import default_tracking_uri

    old, summary = _moved_run(tmp_path, mlflow_store)
    assert tracking_uri_for(load_run(summary)) == default_tracking_uri(summary.parent)
    assert not old.exists()
