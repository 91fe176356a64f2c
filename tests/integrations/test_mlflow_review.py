"""People's labels from MLflow traces into the corrected estimates, against a real local MLflow server.

A real ``mlflow server`` (sqlite store, 127.0.0.1, a free port) is started and stopped by the
``mlflow_server`` fixture. The demo's answers (rag_extractive on the 12-question demo slice,
exported as ragas samples) are scored by ``evalkit score`` and logged there with their traces;
``evalkit label --to mlflow`` tags a stratified sample of them for review (and writes the same
sample as a label file). A "person" then adds ``hallucinated`` feedback with source HUMAN to
each tagged trace (one changed mind: the later feedback counts; one CODE feedback that must be
ignored). ``evalkit score --labels mlflow:EXPERIMENT`` must give exactly the corrected estimates
that the same labels give through the label file (the path ``evalkit run --labels`` takes).
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli

pytest.importorskip("mlflow")
pytestmark = pytest.mark.integration
EXPERIMENT = "review-test"
START_TIMEOUT_S = 60


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """``http://127.0.0.1:PORT`` of a real MLflow tracking server, stopped after the module."""
    tmp = tmp_path_factory.mktemp("mlflow_server")
    port = _free_port()
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
                             "--backend-store-uri", f"sqlite:///{tmp / 'mlflow.db'}",
                             "--default-artifact-root", str(tmp / "artifacts"), "--workers", "1"],
                            stdout=(tmp / "server.log").open("w"), stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.terminate()
            pytest.skip(f"mlflow server did not start within {START_TIMEOUT_S} s: "
                        f"{(tmp / 'server.log').read_text()[-500:]}")
        time.sleep(0.5)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def _invoke(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def test_human_feedback_on_traces_gives_the_corrected_estimates_of_the_same_labels(
        mlflow_server: str, demo_slice_answers: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import mlflow
    from mlflow.entities import AssessmentSource
    from mlflow.tracking import MlflowClient

    from evalkit.analysis.review import REQUESTED, REVIEW_TAG

    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    _invoke("export", str(demo_slice_answers), "--format", "ragas", "-o", str(tmp_path / "ragas"))
    answers = tmp_path / "ragas" / "rag_extractive.jsonl"
    es = f"{demo_slice_answers.parent.parent / 'slice.jsonl'}@v1"
    scored = tmp_path / "results" / "mine.json"
    _invoke("score", "--answers", str(answers), "--eval-set", es, "--name", "mine", "--output", str(scored),
            "--tracking-uri", mlflow_server, "--experiment", EXPERIMENT)
    out = _invoke("label", str(scored), "--variant", "mine", "--n", "8", "--to", "mlflow", "--out",
                  str(tmp_path / "labels.jsonl"))
    assert "tagged" in out and "strata (labelled / answers)" in out

    client = MlflowClient(tracking_uri=mlflow_server)
    exp = client.get_experiment_by_name(EXPERIMENT)
    tagged = client.search_traces(locations=[exp.experiment_id],
                                  filter_string=f"tags.`{REVIEW_TAG}` = '{REQUESTED}'", include_spans=False)
    lines = [json.loads(x) for x in (tmp_path / "labels.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(tagged) == len(lines) >= 6
    by_query = {line["query_id"]: line for line in lines}
    mlflow.set_tracking_uri(mlflow_server)
    try:
        person = AssessmentSource(source_type="HUMAN", source_id="alice")
        for i, t in enumerate(sorted(tagged, key=lambda t: t.info.tags["evalkit.label.query_id"])):
            qid = t.info.tags["evalkit.label.query_id"]
            judge_said = bool(by_query[qid]["judge"]["hallucinated"])
            says = (not judge_said) if i % 3 == 0 else judge_said  # the person disagrees with the judge now and then
            if i == 1:  # a changed mind: the first feedback is superseded by the later one
                mlflow.log_feedback(trace_id=t.info.trace_id, name="hallucinated", value="no" if says else "yes",
                                    source=person)
                time.sleep(0.01)
            mlflow.log_feedback(trace_id=t.info.trace_id, name="hallucinated", value="yes" if says else "no",
                                source=person)
            if i == 2:  # a program's feedback is never a person's label
                mlflow.log_feedback(trace_id=t.info.trace_id, name="hallucinated", value="yes" if not says else "no",
                                    source=AssessmentSource(source_type="CODE", source_id="bot"))
            by_query[qid]["hallucinated"] = says
    finally:
        mlflow.set_tracking_uri(None)
    (tmp_path / "filled.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines),
                                           encoding="utf-8")

    from_mlflow, from_file = tmp_path / "results" / "m.json", tmp_path / "results" / "f.json"
    shown = _invoke("score", "--answers", str(answers), "--eval-set", es, "--name", "mine", "--output",
                    str(from_mlflow), "--no-mlflow", "--tracking-uri", mlflow_server, "--labels",
                    f"mlflow:{EXPERIMENT}")
    _invoke("score", "--answers", str(answers), "--eval-set", es, "--name", "mine", "--output", str(from_file),
            "--no-mlflow", "--labels", str(tmp_path / "filled.jsonl"))
    got = json.loads(from_mlflow.read_text())["variants"]["mine"]["corrected"]
    want = json.loads(from_file.read_text())["variants"]["mine"]["corrected"]
    assert got is not None and got == want
    assert got["n_labels"] == len(lines) and got["stale"] == 0
    assert got["estimates"]["hallucination_rate"]["estimate"] != got["raw"]["hallucination_rate"]  # corrected
    assert "judge-corrected estimates" in shown


def test_labels_from_an_unknown_experiment_or_a_missing_file_say_what_to_do(mlflow_server: str, tmp_path: Path):
    from evalkit.analysis.review import read_review_labels
    from evalkit.errors import EvalkitError

    with pytest.raises(EvalkitError, match=r"--labels mlflow:nowhere: no such experiment in http://127\.0\.0\.1"):
        read_review_labels("nowhere", mlflow_server)
    (tmp_path / "a.jsonl").write_text('{"question": "q", "answer": "a", "contexts": []}\n', encoding="utf-8")
    res = CliRunner().invoke(cli, ["score", "--answers", str(tmp_path / "a.jsonl"), "--name", "x", "--output",
                                   str(tmp_path / "x.json"), "--labels", "labels.jsonl"])
    assert res.exit_code == 2 and "no such label file" in res.output and "mlflow:EXPERIMENT" in res.output
