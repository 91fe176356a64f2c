"""The guard node: absolute and relative (calibrated) thresholds, min_documents, params checks."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from pydantic import ValidationError

from evalkit.errors import ConfigError, EvalkitError
from evalkit.graph import config_from_dict
from evalkit.graph.schema import OUTCOME_NO_EVIDENCE as NO_EVIDENCE
from evalkit.nodes.guard import Guard, GuardParams, calibration_scores
from evalkit.records import Hit


def ranked(*scores: float) -> list[Hit]:
    return [Hit(f"d{i}#0", f"d{i}", s) for i, s in enumerate(scores)]


def guard(resources=None, **params) -> Guard:
    return Guard("guard", GuardParams(**params), resources)


# --- absolute threshold ---------------------------------------------------------------

def test_absolute_passes_evidence_on():
    out = guard(threshold=0.8, evidence_k=2).run({"reranked": ranked(0.85, 0.82, 0.5)})
    assert out == {"guard_triggered": False, "guard_reason": "", "guard_threshold": 0.8,
                   "evidence": ranked(0.85, 0.82), "outcome": "evidence_found"}
    assert set(out) == set(Guard.writes)


def test_absolute_trips_below_threshold():
    out = guard(threshold=0.8).run({"reranked": ranked(0.79, 0.5)})
    assert out["guard_triggered"] is True and out["outcome"] == NO_EVIDENCE
    assert out["guard_reason"] == "top score 0.7900 < threshold 0.8000"
    assert out["evidence"] == []


def test_threshold_is_inclusive():
    assert guard(threshold=0.8).run({"reranked": ranked(0.8)})["guard_triggered"] is False


def test_min_documents():
    g = guard(threshold=0.0, min_documents=3)
    out = g.run({"reranked": ranked(0.9, 0.9)})
    assert out["guard_triggered"] is True
    assert out["guard_reason"] == "2 passage(s) after rerank, fewer than min_documents=3"
    assert g.run({"reranked": ranked(0.9, 0.9, 0.1)})["guard_triggered"] is False
    # nothing retrieved always trips, even with min_documents=0
    out = guard(threshold=-1.0, min_documents=0).run({"reranked": []})
    assert out["guard_triggered"] is True and "0 passage(s)" in out["guard_reason"]


# --- relative threshold (calibrated on earlier runs) ----------------------------------

def test_relative_from_json_list(tmp_path):
    scores = [0.70, 0.75, 0.80, 0.85, 0.90, 0.95]  # top-1 scores of answerable queries
    (tmp_path / "calib.json").write_text(json.dumps(scores))
    g = guard(mode="relative", calibration=str(tmp_path / "calib.json"), percentile=20)
    # numpy's linear interpolation: position 0.2 * 5 = 1.0 -> the 2nd smallest, 0.75
    assert g.threshold == pytest.approx(0.75) == pytest.approx(np.percentile(scores, 20))
    assert g.run({"reranked": ranked(0.74)})["guard_triggered"] is True
    assert g.run({"reranked": ranked(0.76)})["guard_triggered"] is False


def test_relative_default_percentile_interpolates(tmp_path):
    (tmp_path / "calib.json").write_text("[0.0, 1.0]")
    assert guard(mode="relative", calibration=str(tmp_path / "calib.json")).threshold == pytest.approx(0.1)


def test_relative_from_per_query_jsonl_uses_answerable_only(tmp_path):
    rows = [
        {"query_id": "q1", "gold_doc_ids": ["d1"], "rerank_top1": 0.9},
        {"query_id": "q2", "gold_doc_ids": ["d2"], "rerank_top1": 0.7},
        {"query_id": "q3", "gold_doc_ids": [], "rerank_top1": 0.1},        # unanswerable: ignored
        {"query_id": "q4", "gold_doc_ids": ["d4"], "rerank_top1": None},   # failed query: ignored
        {"query_id": "q5", "gold_doc_ids": ["d5"], "rerank_top1": 0.8},
    ]
    path = tmp_path / "per_query.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    assert calibration_scores(path) == [0.9, 0.7, 0.8]
    assert guard(mode="relative", calibration=str(path), percentile=50).threshold == pytest.approx(0.8)


def test_relative_path_resolves_against_config_folder(tmp_path):
    (tmp_path / "calib.json").write_text("[0.5, 0.6]")
    g = guard(SimpleNamespace(base_dir=tmp_path), mode="relative", calibration="calib.json", percentile=0)
    assert g.threshold == pytest.approx(0.5)


@pytest.mark.parametrize("name,content", [
    ("calib.json", "[]"),
    ("calib.json", '{"scores": [0.5]}'),
    ("calib.json", '[0.5, "high"]'),
    ("per_query.jsonl", json.dumps({"gold_doc_ids": [], "rerank_top1": 0.4})),  # no answerable query
])
def test_calibration_without_scores_is_an_error(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(EvalkitError, match="no calibration scores"):
        guard(mode="relative", calibration=str(path))


# --- params validation ----------------------------------------------------------------

@pytest.mark.parametrize("params,message", [
    ({}, "absolute mode needs 'threshold'"),
    ({"mode": "relative"}, "relative mode needs 'calibration'"),
    ({"mode": "percent", "threshold": 1}, "'absolute' or 'relative'"),
    ({"threshold": 0.5, "percentile": 101}, "less than or equal to 100"),
    ({"threshold": 0.5, "min_documents": -1}, "greater than or equal to 0"),
    ({"threshold": 0.5, "evidence_k": 0}, "greater than or equal to 1"),
    ({"threshold": 0.5, "treshold": 0.5}, "Extra inputs are not permitted"),
])
def test_params_validation(params, message):
    with pytest.raises(ValidationError, match=message):
        GuardParams(**params)


def test_config_error_names_the_node_and_suggests():
    base = {"nodes": {"guard": {"type": "guard", "params": {"treshold": 0.5}}},
            "edges": {"start": "guard", "guard": "end"}}
    with pytest.raises(ConfigError, match="nodes.guard.params.treshold: unknown parameter 'treshold'.*"
                                          "did you mean 'threshold'"):
        config_from_dict(base)
