"""``evalkit score`` logs to MLflow as ``evalkit run`` does (issue 12), and as MLflow users expect (issue 15).

Checked on a real sqlite store: the parent and child runs are tagged ``mlflow.source.name
= evalkit score`` (they said ``evalkit run``), the eval set is the runs' dataset input, the
traces carry the per-query assessments and are dated when the outputs were scored (they
were dated 1970-01-01 with no end time: the scored trace event started at 0.0), and the
command prints the same one-line hint as ``run``.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from click.testing import CliRunner

from evalkit.cli import cli


def test_scored_answers_in_mlflow(tiny, tmp_path: Path):
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow import MlflowClient

    es, _ = tiny
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"id": "q1", "question": "invoice approval above 5000", "retrieved": ["doc-b", "doc-a"],
                                   "answer": "Electronic invoices above 5000 need director approval [doc-a]."}) + "\n",
                       encoding="utf-8")
    out = tmp_path / "res" / "mine.json"
    before = time.time()
    res = CliRunner().invoke(cli, ["score", "--answers", str(answers), "--eval-set", f"{es}@v1", "--name", "mine",
                                   "--output", str(out)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    info = json.loads(out.read_text(encoding="utf-8"))["mlflow"]
    assert info["hint"] in " ".join(res.output.split()) and "feedback.hit_at_5" in info["hint"]
    # wrapped to 120 columns: the command with the store's path whole on its line, the URL on the next
    store_line = next(x for x in res.stdout.splitlines() if x.startswith("MLflow: mlflow ui --backend-store-uri"))
    assert len(info["hint"]) > 120 and store_line == f"MLflow: {info['ui_command']},"
    assert max(len(x) for x in res.stdout.splitlines() if x != store_line) <= 120
    assert f"  then open {info['ui_url']}" in res.stdout
    uri = info["tracking_uri"]
    client = MlflowClient(uri)
    runs = client.search_runs([info["experiment_id"]])
    assert len(runs) == 2  # the parent and the variant
    assert {r.data.tags["mlflow.source.name"] for r in runs} == {"evalkit score"}
    child = next(r for r in runs if r.info.run_id != info["parent_run_id"])
    assert [d.dataset.name for d in child.inputs.dataset_inputs] == ["tiny@v1"]
    traces = client.search_traces(locations=[info["experiment_id"]])  # (mlflow.set_tracking_uri would leak to other tests)
    assert len(traces) == 6  # every eval-set query: one answered, five without an answer (failed)
    q1 = next(t for t in traces if t.info.trace_metadata.get("evalkit.query_id") == "q1"
              or '"q1"' in json.dumps(t.data.spans[0].inputs))
    assert {a.name: a.value for a in q1.info.assessments}["mrr_at_10"] == 0.5  # doc-a, the gold, ranked 2nd
    for t in traces:
        assert t.info.request_time / 1000 >= before - 1
        assert all(s.end_time_ns is not None and s.end_time_ns >= s.start_time_ns for s in t.data.spans)
