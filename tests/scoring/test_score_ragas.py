"""ragas ``EvaluationDataset`` files with responses: scored, and gated, through the CLI.

The datasets are built and written by the real ragas library (``EvaluationDataset.to_jsonl``,
``to_hf_dataset().save_to_disk``). The eval data is imported once with ``evalkit import
ragas`` (whose summary now points at ``evalkit score``); two systems' responses are scored
against it and gated. Retrieval metrics come from the retrieved contexts, matched by content
to the imported corpus (the ``ctx-`` ids); they are recomputed here by hand.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
pytest.importorskip("ragas", reason="the ragas extra builds these datasets: pip install 'evalkit-ragraph[ragas]'")

CTX = {"inv": "Electronic invoices above 5000 yuan need the approval of a director.",
       "hotel": "The hotel allowance is 600 yuan per night in tier one cities.",
       "leave": "Parents get 10 days of parental leave after a birth.",
       "vpn": "Connect to the LanLink VPN with your badge number and a one-time code.",
       "pwd": "Passwords must have at least 12 characters and change every 90 days."}
SAMPLES = [  # question, retrieved context keys (ranked), gold keys, reference, good response, bad response
    ("Who must approve an invoice above 5000 yuan?", ["hotel", "inv"], ["inv"], "A director.",
     "A director must approve invoices above 5000 yuan.", "The CFO must approve invoices above 8000 yuan."),
    ("How much is the hotel allowance in tier one cities?", ["hotel", "pwd"], ["hotel"], "600 yuan per night.",
     "It is 600 yuan per night.", "It is 900 yuan per night."),
    ("How many days of parental leave do parents get?", ["vpn", "pwd"], ["leave"], "10 days.",
     "I cannot answer this from the knowledge base.", "Parents get 30 days of leave."),
    ("How do I connect to the VPN?", ["vpn"], ["vpn"], "With your badge number and a one-time code.",
     "Connect with your badge number and a one-time code.", "Connect with your badge number and a one-time code."),
    ("How long must a password be?", ["pwd", "vpn"], ["pwd"], "At least 12 characters.",
     "At least 12 characters.", "At least 16 characters, changed every 30 days."),
]


def _dataset(which: int):
    from ragas import EvaluationDataset

    return EvaluationDataset.from_list([
        {"user_input": q, "retrieved_contexts": [CTX[k] for k in ret], "reference_contexts": [CTX[k] for k in gold],
         "reference": ref, "response": (good, bad)[which]} for q, ret, gold, ref, good, bad in SAMPLES])


@pytest.fixture(scope="module")
def ragas_files(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("ragas")
    _dataset(0).to_jsonl(str(tmp / "good.jsonl"))
    _dataset(1).to_jsonl(str(tmp / "bad.jsonl"))
    return tmp


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _rows(summary: Path, name: str) -> list[dict]:
    return [json.loads(x) for x in (summary.with_suffix("") / name / "per_query.jsonl").read_text().splitlines()]


def test_import_once_score_two_systems_and_gate(ragas_files: Path, tmp_path: Path):
    res = _invoke("import", "ragas", str(ragas_files / "good.jsonl"), "--name", "rg", "--out-dir", str(tmp_path / "es"))
    assert res.exit_code == 0, res.output
    kept = tmp_path / "es" / "rg.responses.jsonl"  # import keeps the responses as an answers file
    assert "responses 5 'response' values" in res.output and f"evalkit score --answers {kept}" in res.output
    es = f"{tmp_path / 'es' / 'rg.jsonl'}@v1"
    for system in ("good", "bad"):
        res = _invoke("score", "--answers", str(ragas_files / f"{system}.jsonl"), "--eval-set", es, "--name", "rag",
                      "--output", str(tmp_path / f"{system}.json"), "--no-mlflow")
        assert res.exit_code == 0, res.output
    good, bad = _rows(tmp_path / "good.json", "rag"), _rows(tmp_path / "bad.json", "rag")
    # retrieval by hand: the gold context's rank among the retrieved contexts
    hand_mrr = [1 / (ret.index(gold[0]) + 1) if gold[0] in ret else 0.0 for _, ret, gold, *_ in SAMPLES]
    assert [r["metrics"]["mrr@10"] for r in good] == hand_mrr == [0.5, 1.0, 0.0, 1.0, 1.0]
    assert [r["metrics"]["hit@5"] for r in bad] == [1.0, 1.0, 0.0, 1.0, 1.0]
    # q1: every atom of the answer is in the question (not checkable); q3 declined
    assert [r["metrics"]["hallucinated"] for r in good] == [None, 0.0, None, 0.0, 0.0]
    assert [r["metrics"]["hallucinated"] for r in bad] == [1.0, 1.0, 1.0, 0.0, 1.0]
    assert good[2]["generation"]["abstained"] is True
    res = _invoke("score", "--answers", str(kept), "--eval-set", es, "--name", "rag", "--output",
                  str(tmp_path / "kept.json"), "--no-mlflow")
    assert res.exit_code == 0, res.output
    assert [r["metrics"] for r in _rows(tmp_path / "kept.json", "rag")] == [r["metrics"] for r in good]
    gate = ["gate", "--baseline", str(tmp_path / "good.json"), "--resamples", "500", "--metric", "hallucinated",
            "--max-drop", "0.1", "--metric", "hit@5", "--max-drop", "0.1"]
    res = _invoke(*gate, "--candidate", str(tmp_path / "bad.json"))
    assert res.exit_code == 1, res.output
    assert "hallucinated" in res.output and "FAIL" in res.output
    res = _invoke("score", "--answers", str(ragas_files / "good.jsonl"), "--eval-set", es, "--name", "rag",
                  "--output", str(tmp_path / "good2.json"), "--no-mlflow")
    res = _invoke(*gate, "--candidate", str(tmp_path / "good2.json"))
    assert res.exit_code == 0, res.output


def test_self_contained_ragas_file_uses_reference_contexts_as_gold(ragas_files: Path, tmp_path: Path):
    res = _invoke("score", "--answers", str(ragas_files / "good.jsonl"), "--name", "rag", "--output",
                  str(tmp_path / "s.json"), "--no-mlflow")
    assert res.exit_code == 0, res.output
    rows = _rows(tmp_path / "s.json", "rag")
    assert [r["metrics"]["mrr@10"] for r in rows] == [0.5, 1.0, 0.0, 1.0, 1.0]
    assert [r["metrics"]["answer_em"] for r in rows] == [0.0, 0.0, 0.0, 0.0, 1.0]
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["eval_set"]["kind"] == "answers_file" and summary["variants"]["rag"]["source"]["format"] == "ragas"


def test_hf_datasets_folder_with_a_column_map(ragas_files: Path, tmp_path: Path):
    folder = tmp_path / "hf"
    _dataset(1).to_hf_dataset().rename_column("response", "system_answer").save_to_disk(str(folder))
    res = _invoke("score", "--answers", str(folder), "--name", "rag", "--output", str(tmp_path / "h.json"),
                  "--no-mlflow")
    assert res.exit_code == 1 and "no 'response' column" in res.output and "evalkit import ragas" in res.output
    res = _invoke("score", "--answers", str(folder), "--map", "answer=system_answer", "--name", "rag", "--output",
                  str(tmp_path / "h.json"), "--no-mlflow")
    assert res.exit_code == 0, res.output
    assert [r["metrics"]["hallucinated"] for r in _rows(tmp_path / "h.json", "rag")] == [1.0, 1.0, 1.0, 0.0, 1.0]
    res = _invoke("score", "--answers", str(folder), "--map", "answer=nope", "--name", "rag", "--output",
                  str(tmp_path / "x.json"), "--no-mlflow")
    assert res.exit_code == 1 and "--map answer=nope: no column 'nope'" in res.output
