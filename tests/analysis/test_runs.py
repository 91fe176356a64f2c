"""Loading finished runs: summary JSON, results folder, MLflow run ids (parent or child)."""
from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.analysis.runs import load_run
from evalkit.errors import EvalkitError

from .conftest import qr, write_run


def _variants() -> dict[str, list]:
    return {"a": [qr("q1", ["d1"], {"hit@5": 1.0}, retrieved=["d1"]), qr("q2", [], retrieved=["d3"])],
            "b": [qr("q1", ["d1"], {"hit@5": 0.0}, retrieved=["d2"]), qr("q2", [], retrieved=["d3"])]}


def test_summary_and_folder_are_the_same_run(tmp_path: Path):
    path = write_run(tmp_path, "r", _variants())
    by_file, by_folder = load_run(path), load_run(tmp_path / "r")
    assert by_file.summary == by_folder.summary and by_file.variant_names == ["a", "b"]
    assert [r.query_id for r in by_folder.results("b")] == ["q1", "q2"]
    assert by_file.output_stem() == path.resolve().with_suffix("")
    with pytest.raises(EvalkitError, match="did you mean 'a'"):
        by_file.variant("aa")


def test_bad_references_say_what_to_pass(tmp_path: Path):
    with pytest.raises(EvalkitError, match="pass a summary JSON"):
        load_run(tmp_path / "nothing.txt")
    with pytest.raises(EvalkitError, match="add --tracking-uri"):
        load_run("0" * 32)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(EvalkitError, match="not an evalkit run summary"):
        load_run(tmp_path / "bad.json")


def test_mlflow_parent_and_child_run_ids(tmp_path: Path, mlflow_store):
    mlflow_store(tmp_path)
    path = write_run(tmp_path, "ml", _variants(), log_mlflow=True)
    local = load_run(path)
    uri, parent = local.tracking_uri, local.mlflow_parent()
    remote = load_run(parent, tracking_uri=uri)
    assert remote.variant_names == ["a", "b"] and remote.summary.eval_set.name == "tiny"
    assert remote.summary.eval_set.sha256 == local.summary.eval_set.sha256
    assert [r.to_dict() for r in remote.results("b")] == [r.to_dict() for r in local.results("b")]
    assert remote.variant("a").metrics == {"hit@5": 1.0}
    assert remote.summary.environment == local.summary.environment and local.summary.environment["cpu"]
    child = load_run(local.variant("b").mlflow_run_id, tracking_uri=uri)
    assert child.variant_names == ["b"] and child.mlflow_parent() == parent
    assert child.config("b").name == "b"                        # config.yaml artifact
    with pytest.raises(EvalkitError, match="not found"):
        load_run("f" * 32, tracking_uri=uri)
