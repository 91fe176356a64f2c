"""evalkit.track: one parent run + one child run per variant, read back through MlflowClient.

Fixture invocation (two variants over five queries):

    q1  answerable, gold d1, hit@5 = 1, top-1 rerank 0.90
    q2  answerable, gold d7, hit@5 = 0, top-1 rerank 0.30   # gold not in top 5
    q3  answerable, gold d3, hit@5 = 1, top-1 rerank 0.80
    q4  unanswerable (no gold),          top-1 rerank 0.10
    q5  unanswerable (no gold),          top-1 rerank 0.15

Variant ``rerank`` has rerank scores (both histograms drawn); variant ``dense`` has no
rerank node (``rerank_top1`` None everywhere), so both figures are skipped with a note.
"""
from __future__ import annotations

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

from evalkit.errors import EvalkitError
from evalkit.records import EvalSetRef, QueryResult, RunSummary, VariantSummary
from evalkit.track import (
    VariantLog,
    default_tracking_uri,
    log_invocation,
    mask_secrets,
    mlflow_metric_name,
)
from evalkit.track.names import MAX_PARAM_VALUE_LENGTH, batches
from evalkit.track.payloads import variant_metrics
from evalkit.track.plots import FIGURE, rerank_histograms
from evalkit.track.secrets import is_secret_key, mask_yaml_secrets

PNGS = {FIGURE}
CONFIG_YAML = """name: rerank
nodes:
  retrieve: {type: retrieve, params: {top_k: 100}}
  rerank: {type: rerank, params: {top_k: 50}}
  generate: {type: generate, params: {api_key: sk-live-123, max_tokens: 256}}  # never logged
edges: {start: retrieve, retrieve: rerank, rerank: generate, generate: end}
"""


# ---------------------------------------------------------------------------- fixtures


def _qr(qid: str, gold: list[str], top1: float | None, hit: float | None) -> QueryResult:
    reranked = [] if top1 is None else [{"doc_id": "d1", "score": top1}, {"doc_id": "d2", "score": top1 / 2}]
    metrics = {} if hit is None else {"hit@5": hit, "recall@20": hit}
    return QueryResult(query_id=qid, question=f"question {qid}?", gold_doc_ids=gold,
                       retrieved=[{"doc_id": "d1", "score": 1.0}], reranked=reranked, metrics=metrics,
                       trace=[], rerank_top1=top1)


def _results(with_rerank: bool) -> list[QueryResult]:
    rows = [("q1", ["d1"], 0.9, 1.0), ("q2", ["d7"], 0.3, 0.0), ("q3", ["d3"], 0.8, 1.0),
            ("q4", [], 0.1, None), ("q5", [], 0.15, None)]
    return [_qr(q, g, s if with_rerank else None, h) for q, g, s, h in rows]


def _variant(tmp: Path, name: str, with_rerank: bool, params: dict[str, str] | None = None) -> VariantLog:
    results = _results(with_rerank)
    folder = tmp / "run" / name
    folder.mkdir(parents=True, exist_ok=True)
    per_query = folder / "per_query.jsonl"
    per_query.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in results))
    summary = VariantSummary(metrics={"recall@20": 0.75 if with_rerank else 0.5, "hit@5": 2 / 3, "mrr": 0.61},
                             n_failed=0, n_queries=5, n_excluded=1, seconds=1.25, config_sha256="c0ffee",
                             index={"dense.model": "minilm", "dense.sha256": "abc"})
    return VariantLog(name=name, params=params if params is not None else {
        "nodes.rerank.params.top_k": "50" if with_rerank else "0",
        "nodes.generate.params.api_key": "sk-live-123",
        "nodes.generate.params.max_tokens": "256",
        "auth.password": "hunter2",
        "hub.hf_token": "hf_abc",
        "nodes.retrieve.params.notes": "x" * 7000,
    }, config_yaml=CONFIG_YAML, summary=summary, results=results, per_query_path=per_query)


def _run_summary(variants: list[VariantLog]) -> RunSummary:
    ref = EvalSetRef(name="faq", version=3, sha256="e" * 64, n_queries=5, corpus_sha256="c" * 64,
                     path="eval_sets/faq.jsonl")
    return RunSummary(eval_set=ref, variants={v.name: v.summary for v in variants}, git_commit="1234abcd")


def _children(client, experiment_id: str, parent_id: str) -> dict[str, object]:
    runs = client.search_runs([experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent_id}'")
    return {r.info.run_name: r for r in runs}


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    """One invocation logged to the default embedded store, shared by the read-back tests."""
    import mlflow

    tmp = tmp_path_factory.mktemp("embedded")
    variants = [_variant(tmp, "rerank", True), _variant(tmp, "dense", False)]
    t0 = time.perf_counter()
    out = log_invocation(_run_summary(variants), variants, tmp, tags={"ci": "yes"})
    seconds = time.perf_counter() - t0
    assert mlflow.active_run() is None          # MlflowClient only: nothing global left open
    return tmp, variants, out, seconds


# ---------------------------------------------------------------------------- pure helpers


def test_metric_names_are_mapped_to_valid_mlflow_keys():
    from mlflow.utils.validation import _validate_metric_name, _validate_param_name

    assert mlflow_metric_name("recall@20") == "recall_at_20"
    assert mlflow_metric_name("hit@5") == "hit_at_5"
    assert mlflow_metric_name("mrr") == "mrr"                       # valid names unchanged
    assert mlflow_metric_name("ndcg_cut.10") == "ndcg_cut.10"
    for raw in ["recall@20", "ndcg:10", "a//b", "/a", "..a", ".", "", "a/./b", "x" * 300, "p@k (macro)"]:
        name = mlflow_metric_name(raw)
        _validate_metric_name(name)                                 # raises on an invalid name
        _validate_param_name(name)
        assert len(name) <= 250


def test_metric_name_collision_is_an_error():
    summary = VariantSummary(metrics={"recall@20": 0.1, "recall_at_20": 0.2}, n_failed=0, n_queries=1, n_excluded=0)
    with pytest.raises(EvalkitError, match="recall_at_20"):
        variant_metrics(summary)


def test_secret_keys():
    masked = mask_secrets({"llm.api_key": "sk-1", "OPENAI_API_KEY": "sk-2", "db.password": "p", "client_secret": "s",
                           "hf_token": "t", "accessToken": "t", "max_tokens": "256", "tokenizer": "bert", "top_k": "5"})
    assert masked == {"llm.api_key": "***", "OPENAI_API_KEY": "***", "db.password": "***", "client_secret": "***",
                      "hf_token": "***", "accessToken": "***", "max_tokens": "256", "tokenizer": "bert", "top_k": "5"}
    assert not is_secret_key("nodes.generate.params.max_new_tokens")


def test_config_yaml_secrets_are_masked():
    import yaml

    text = mask_yaml_secrets(CONFIG_YAML)
    assert "sk-live-123" not in text and "# never logged" in text           # layout and comments kept
    assert yaml.safe_load(text)["nodes"]["generate"]["params"] == {"api_key": "***", "max_tokens": 256}
    nested = mask_yaml_secrets("secrets:\n  openai: sk-9\nmodel: m\n")      # value under a secret key
    assert "sk-9" not in nested and yaml.safe_load(nested) == {"secrets": {"openai": "***"}, "model": "m"}


def test_batches_respect_mlflow_limits():
    got = list(batches(list(range(2500)), list(range(250)), list(range(30))))
    assert sum(len(m) for m, _, _ in got) == 2500 and sum(len(p) for _, p, _ in got) == 250
    assert sum(len(t) for _, _, t in got) == 30
    for m, p, t in got:
        assert len(m) <= 1000 and len(p) <= 100 and len(t) <= 100 and len(m) + len(p) + len(t) <= 1000


def test_histograms_skip_without_rerank_scores(tmp_path):
    written, notes = rerank_histograms(_results(with_rerank=False), tmp_path)
    assert written == [] and len(notes) == 2 and not list(tmp_path.iterdir())
    written, notes = rerank_histograms(_results(with_rerank=True), tmp_path)
    assert {p.name for p in written} == PNGS and notes == []
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written)


# ---------------------------------------------------------------------------- embedded store


def test_embedded_parent_and_children(embedded):
    from mlflow import MlflowClient

    tmp, variants, out, _ = embedded
    uri = default_tracking_uri(tmp)
    assert out["tracking_uri"] == uri == f"sqlite:///{(tmp.resolve() / 'mlflow.db').as_posix()}"
    assert out["ui_command"] == f"mlflow ui --backend-store-uri {uri}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment(out["experiment_id"])
    assert exp.name == "evalkit" and exp.artifact_location == (tmp / "mlartifacts").resolve().as_uri()

    parent = client.get_run(out["parent_run_id"])
    assert parent.info.status == "FINISHED"
    tags = parent.data.tags
    assert (tags["evalset.name"], tags["evalset.version"]) == ("faq", "3")
    assert tags["git.commit"] == "1234abcd" and tags["ci"] == "yes"
    assert tags["evalset.sha256"] == "e" * 64 and tags["evalset.corpus_sha256"] == "c" * 64
    assert "mlflow.parentRunId" not in tags
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} == {"comparison.json", "variants.json"}
    comp_path = client.download_artifacts(parent.info.run_id, "comparison.json", str(tmp / "dl"))
    comp = json.loads(Path(comp_path).read_text())
    assert comp["metrics"] == ["hit@5", "mrr", "recall@20"]
    assert comp["variants"]["rerank"]["metrics"]["recall@20"] == 0.75
    assert comp["variants"]["dense"]["mlflow_run_id"] == variants[1].summary.mlflow_run_id

    children = _children(client, out["experiment_id"], out["parent_run_id"])
    assert set(children) == {"rerank", "dense"}
    for v in variants:
        child = children[v.name]
        assert child.info.run_id == v.summary.mlflow_run_id
        assert child.info.status == "FINISHED"
        assert child.data.tags["mlflow.parentRunId"] == out["parent_run_id"]
        assert child.data.tags["config.sha256"] == "c0ffee" and child.data.tags["index.dense.model"] == "minilm"
        assert child.info.artifact_uri.startswith((tmp / "mlartifacts").resolve().as_uri())


def test_parent_holds_headline_metrics_sources_and_a_distinct_name(embedded):
    import re

    from mlflow import MlflowClient

    tmp, variants, out, _ = embedded
    client = MlflowClient(tracking_uri=out["tracking_uri"])
    parent = client.get_run(out["parent_run_id"])
    # per-variant headline metrics: the retrieval metrics of the run (mrr is not an evalkit metric name)
    assert parent.data.metrics == pytest.approx({
        "hit_at_5/rerank": 2 / 3, "recall_at_20/rerank": 0.75, "n_failed/rerank": 0,
        "hit_at_5/dense": 2 / 3, "recall_at_20/dense": 0.5, "n_failed/dense": 0})
    table = json.loads(Path(client.download_artifacts(parent.info.run_id, "variants.json", str(tmp / "dlv")))
                       .read_text())
    rows = {r[table["columns"].index("variant")]: dict(zip(table["columns"], r)) for r in table["data"]}
    assert rows["dense"]["recall@20"] == 0.5 and rows["rerank"]["mlflow_run_id"] == variants[0].summary.mlflow_run_id
    tags = parent.data.tags
    assert tags["mlflow.source.name"] == "evalkit run" and tags["mlflow.source.type"] == "LOCAL"
    assert tags["mlflow.source.git.commit"] == "1234abcd" and tags["mlflow.user"]
    assert "faq" in tags["mlflow.note.content"] and "rerank, dense" in tags["mlflow.note.content"]
    assert re.fullmatch(r"faq v3 · 2 variants \(rerank, dense\) · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d",
                        parent.info.run_name)
    for v in variants:
        child = client.get_run(v.summary.mlflow_run_id)
        assert child.data.tags["mlflow.source.name"] == "evalkit run"
        assert child.data.tags["mlflow.source.git.commit"] == "1234abcd"


def test_eval_set_is_the_dataset_input_of_every_run(embedded):
    from mlflow import MlflowClient

    _, variants, out, _ = embedded
    client = MlflowClient(tracking_uri=out["tracking_uri"])
    for run_id in [out["parent_run_id"], *(v.summary.mlflow_run_id for v in variants)]:
        inputs = client.get_run(run_id).inputs.dataset_inputs
        assert len(inputs) == 1
        ds = inputs[0].dataset
        assert (ds.name, ds.digest, ds.source_type) == ("faq@v3", "e" * 12, "local")
        assert json.loads(ds.source)["uri"] == str(Path("eval_sets/faq.jsonl").resolve())
        assert json.loads(ds.profile)["num_rows"] == 5
        assert {"query_id", "question", "gold_doc_ids"} <= {c["name"] for c in json.loads(ds.schema)["mlflow_colspec"]}
        assert [(t.key, t.value) for t in inputs[0].tags] == [("mlflow.data.context", "eval")]


def test_embedded_params_metrics_and_secrets(embedded):
    from mlflow import MlflowClient

    _, variants, out, _ = embedded
    client = MlflowClient(tracking_uri=out["tracking_uri"])
    child = client.get_run(variants[0].summary.mlflow_run_id)
    params = child.data.params
    assert params["nodes.rerank.params.top_k"] == "50"
    assert params["nodes.generate.params.max_tokens"] == "256"
    assert params["nodes.generate.params.api_key"] == "***"
    assert params["auth.password"] == "***" and params["hub.hf_token"] == "***"
    assert "sk-live-123" not in json.dumps(params) and "hunter2" not in json.dumps(params)
    long = params["nodes.retrieve.params.notes"]
    assert len(long) == MAX_PARAM_VALUE_LENGTH and long.endswith("[truncated by evalkit: 7000 chars]")

    assert child.data.metrics == pytest.approx({"recall_at_20": 0.75, "hit_at_5": 2 / 3, "mrr": 0.61, "n_failed": 0,
                                                "n_queries": 5, "n_excluded": 1, "seconds": 1.25})
    assert client.get_run(variants[1].summary.mlflow_run_id).data.metrics["recall_at_20"] == 0.5


def test_embedded_artifacts(embedded):
    import yaml
    from mlflow import MlflowClient

    tmp, variants, out, _ = embedded
    client = MlflowClient(tracking_uri=out["tracking_uri"])
    rerank_id, dense_id = (v.summary.mlflow_run_id for v in variants)
    base = {"per_query.jsonl", "config.yaml", "rerank_scores.json"}
    assert {a.path for a in client.list_artifacts(rerank_id)} == base | PNGS
    assert {a.path for a in client.list_artifacts(dense_id)} == base          # no scores: figures skipped
    assert "skipped" in client.get_run(dense_id).data.tags["evalkit.plots.skipped"]
    assert "evalkit.plots.skipped" not in client.get_run(rerank_id).data.tags

    dl = tmp / "dl_rerank"
    scores = json.loads(Path(client.download_artifacts(rerank_id, "rerank_scores.json", str(dl))).read_text())
    assert scores["q1"] == [0.9, 0.45] and scores["q4"] == [0.1, 0.05] and len(scores) == 5
    config = Path(client.download_artifacts(rerank_id, "config.yaml", str(dl))).read_text()
    assert "sk-live-123" not in config and yaml.safe_load(config)["nodes"]["rerank"]["params"]["top_k"] == 50
    per_query = Path(client.download_artifacts(rerank_id, "per_query.jsonl", str(dl)))
    lines = per_query.read_text().splitlines()
    assert [json.loads(x)["query_id"] for x in lines] == ["q1", "q2", "q3", "q4", "q5"]
    assert per_query.read_bytes() == variants[0].per_query_path.read_bytes()   # nothing to mask: its bytes as they are
    png = Path(client.download_artifacts(rerank_id, FIGURE, str(dl))).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_artifact_is_the_bytes_that_were_checked_for_secrets(tmp_path, monkeypatch):
    """A per_query.jsonl that changes after its secrets were checked (here a secret appended at once) does not
    reach MLflow as it now is: the child run's artifact is the bytes that were read and checked."""
    from mlflow import MlflowClient

    from evalkit.track import mlflow_log

    variant = _variant(tmp_path, "rerank", True)
    checked = variant.per_query_path.read_bytes()
    real = mlflow_log.mask_jsonl_bytes

    def check_then_change(raw: bytes) -> bytes:
        out = real(raw)
        with variant.per_query_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"query_id": "q9", "question": "password=hunter22"}) + "\n")
        return out

    monkeypatch.setattr(mlflow_log, "mask_jsonl_bytes", check_then_change)
    out = log_invocation(_run_summary([variant]), [variant], tmp_path)
    client = MlflowClient(tracking_uri=out["tracking_uri"])
    logged = Path(client.download_artifacts(variant.summary.mlflow_run_id, "per_query.jsonl", str(tmp_path / "dl")))
    assert b"hunter22" in variant.per_query_path.read_bytes()          # the file did change after the check
    assert logged.read_bytes() == checked                                # nothing to mask in what was checked


def test_second_invocation_reuses_experiment(embedded):
    import mlflow
    from mlflow import MlflowClient

    tmp, _, first, _ = embedded
    variants = [_variant(tmp / "again", "rerank", True)]
    out = log_invocation(_run_summary(variants), variants, tmp)
    assert out["experiment_id"] == first["experiment_id"] and out["parent_run_id"] != first["parent_run_id"]
    assert mlflow.active_run() is None
    client = MlflowClient(tracking_uri=out["tracking_uri"])
    assert set(_children(client, out["experiment_id"], out["parent_run_id"])) == {"rerank"}


def test_many_params_and_metrics_are_batched(embedded):
    from mlflow import MlflowClient

    tmp, _, _, _ = embedded
    v = _variant(tmp / "many", "wide", True, params={f"nodes.n{i}.params.k": str(i) for i in range(250)})
    v.summary.metrics.update({f"recall@{k}": k / 2000 for k in range(1, 1201)})
    out = log_invocation(_run_summary([v]), [v], tmp, experiment="wide")
    run = MlflowClient(tracking_uri=out["tracking_uri"]).get_run(v.summary.mlflow_run_id)
    assert len(run.data.params) == 250 and run.data.params["nodes.n249.params.k"] == "249"
    assert len(run.data.metrics) == 1200 + 3 + 4 - 1    # recall@20 overwritten, hit@5, mrr, 4 counts
    assert run.data.metrics["recall_at_1200"] == 0.6


def test_failure_midway_marks_runs_failed_and_reraises(embedded):
    from mlflow import MlflowClient

    tmp, _, _, _ = embedded
    ok, broken = _variant(tmp / "fail", "ok", True), _variant(tmp / "fail", "broken", True)
    broken.per_query_path = tmp / "fail" / "missing.jsonl"
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        log_invocation(_run_summary([ok, broken]), [ok, broken], tmp, experiment="failing")
    client = MlflowClient(tracking_uri=default_tracking_uri(tmp))
    assert client.get_run(ok.summary.mlflow_run_id).info.status == "FINISHED"
    bad = client.get_run(broken.summary.mlflow_run_id)
    assert bad.info.status == "FAILED"
    assert client.get_run(bad.data.tags["mlflow.parentRunId"]).info.status == "FAILED"


def test_duplicate_variant_names_fail_before_logging(tmp_path):
    variants = [_variant(tmp_path, "same", True), _variant(tmp_path, "same", False)]
    with pytest.raises(EvalkitError, match="same"):
        log_invocation(_run_summary(variants), variants, tmp_path)
    assert not (tmp_path / "mlflow.db").exists()


# ---------------------------------------------------------------------------- real server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """``mlflow server`` on a free port (sqlite store, proxied artifacts); SIGTERM on teardown."""
    tmp = tmp_path_factory.mktemp("server")
    port = _free_port()
    exe = Path(sys.executable).parent / "mlflow"
    if not exe.is_file():
        pytest.skip(f"no `mlflow` command beside {sys.executable} to start a server with (pip install mlflow)")
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_DISABLE_TELEMETRY": "true"}
    log = (tmp / "server.log").open("wb")
    proc = subprocess.Popen(
        [str(exe), "server", "--backend-store-uri", f"sqlite:///{(tmp / 'srv.db').as_posix()}",
         "--artifacts-destination", str(tmp / "art"), "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"

    def output() -> str:
        log.flush()
        return (tmp / "server.log").read_text(errors="replace")[-4000:]

    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"mlflow server exited with {proc.returncode} before answering /health:\n{output()}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"mlflow server at {url} did not answer /health within 60 s:\n{output()}")
            time.sleep(0.25)
        yield url, tmp
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)          # the group of the server we started
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()


@pytest.mark.integration
def test_real_server(mlflow_server, tmp_path, monkeypatch):
    from mlflow import MlflowClient

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")   # fail fast if the server dies
    url, server_dir = mlflow_server
    variants = [_variant(tmp_path, "rerank", True), _variant(tmp_path, "dense", False)]
    out = log_invocation(_run_summary(variants), variants, tmp_path, tracking_uri=url)
    assert out["tracking_uri"] == url
    assert out["ui_command"] == f"{url}/#/experiments/{out['experiment_id']}/runs/{out['parent_run_id']}"
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "mlartifacts").exists()

    client = MlflowClient(tracking_uri=url)
    assert client.get_experiment(out["experiment_id"]).artifact_location.startswith("mlflow-artifacts:")
    children = _children(client, out["experiment_id"], out["parent_run_id"])
    assert set(children) == {"rerank", "dense"}
    child = client.get_run(variants[0].summary.mlflow_run_id)
    assert child.info.status == "FINISHED" and child.data.tags["mlflow.parentRunId"] == out["parent_run_id"]
    assert child.data.metrics["recall_at_20"] == 0.75 and child.data.metrics["n_queries"] == 5
    assert child.data.params["nodes.generate.params.api_key"] == "***"
    assert {a.path for a in client.list_artifacts(child.info.run_id)} == {
        "per_query.jsonl", "config.yaml", "rerank_scores.json"} | PNGS
    scores = json.loads(Path(client.download_artifacts(child.info.run_id, "rerank_scores.json",
                                                       str(tmp_path / "dl"))).read_text())
    assert scores["q2"] == [0.3, 0.15]
    assert {a.path for a in client.list_artifacts(out["parent_run_id"])} == {"comparison.json", "variants.json"}
    assert list((server_dir / "art").rglob("rerank_scores.json"))       # stored by the server, not the client


def _rest(url: str, path: str, body: dict | None = None) -> dict:
    """One call to the MLflow REST API (what the UI itself calls)."""
    req = urllib.request.Request(f"{url}{path}", data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="GET" if body is None else "POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def _traced(tmp: Path, name: str) -> VariantLog:
    """Variant ``name`` over q1..q5 with a two-node trace per query (q2 misses: hit@5 = 0)."""
    v = _variant(tmp, name, True)
    for i, r in enumerate(v.results):
        r.trace = [{"step": 0, "node": "retrieve", "type": "retrieve", "started_at": 1.78e9 + i, "duration_ms": 3.0,
                    "elapsed_ms": 3.0, "wrote": {}, "edge": "rerank", "edge_reason": "default", "error": None},
                   {"step": 1, "node": "rerank", "type": "rerank", "started_at": 1.78e9 + i + 0.01, "duration_ms": 9.0,
                    "elapsed_ms": 0.01, "reused": True, "wrote": {}, "edge": "end", "edge_reason": "default",
                    "error": None}]
    return v


@pytest.mark.integration
def test_the_ui_facts_through_the_rest_api(mlflow_server, tmp_path, monkeypatch):
    """What the MLflow UI shows, read the way the UI reads it: datasets, sources, parent metrics, trace assessments."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    url, _ = mlflow_server
    variants = [_traced(tmp_path, "rerank"), _traced(tmp_path, "dense")]
    out = log_invocation(_run_summary(variants), variants, tmp_path, tracking_uri=url, experiment="ui-facts")
    exp = out["experiment_id"]
    parent = _rest(url, f"/api/2.0/mlflow/runs/get?run_id={out['parent_run_id']}")["run"]
    metrics = {m["key"]: m["value"] for m in parent["data"]["metrics"]}
    assert metrics["hit_at_5/rerank"] == pytest.approx(2 / 3) and metrics["recall_at_20/dense"] == 0.75
    tags = {t["key"]: t["value"] for t in parent["data"]["tags"]}
    assert (tags["mlflow.source.name"], tags["mlflow.source.type"], tags["mlflow.source.git.commit"]) == (
        "evalkit run", "LOCAL", "1234abcd")
    assert parent["info"]["run_name"].startswith("faq v3 · 2 variants (rerank, dense) · ")
    children = _rest(url, "/api/2.0/mlflow/runs/search", {
        "experiment_ids": [exp], "filter": f"tags.mlflow.parentRunId = '{out['parent_run_id']}'"})["runs"]
    assert len(children) == 2
    for run in [parent, *children]:                              # the Dataset column of every row
        (ds,) = run["inputs"]["dataset_inputs"]
        assert (ds["dataset"]["name"], ds["dataset"]["digest"], ds["dataset"]["source_type"]) == (
            "faq@v3", "e" * 12, "local")
        assert {"key": "mlflow.data.context", "value": "eval"} in ds["tags"]
    where = {"locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": exp}}],
             "max_results": 100}
    every = _rest(url, "/api/3.0/mlflow/traces/search", where)["traces"]
    assert len(every) == 10                                      # 5 queries x 2 variants
    for t in every:                                              # the trace view of each (GetTraceInfoV3)
        info = _rest(url, f"/api/3.0/mlflow/traces/{t['trace_id']}")["trace"]["trace_info"]
        got = {a["assessment_name"]: a["feedback"]["value"] for a in info.get("assessments", []) if "feedback" in a}
        gold = [a["assessment_name"] for a in info.get("assessments", []) if "expectation" in a]
        assert gold == ["expected_document_ids"]              # the gold ids, where mlflow.genai.evaluate looks
        qid = info["tags"]["mlflow.traceName"]
        # q4, q5 are unanswerable: no retrieval metric, no assessment
        hit = 0.0 if qid == "q2" else 1.0                           # the fixture: recall@20 = hit@5
        want = {} if qid in ("q4", "q5") else {"hit_at_5": hit, "recall_at_20": hit}
        assert got == want, (qid, got)
        assert {a["source"]["source_type"] for a in info.get("assessments", [])} <= {"CODE"}
    misses = _rest(url, "/api/3.0/mlflow/traces/search", {**where, "filter": "feedback.hit_at_5 < 1"})["traces"]
    assert sorted(t["tags"]["mlflow.traceName"] for t in misses) == ["q2", "q2"]   # filterable by assessment
    spans = _spans(url, misses[0]["trace_id"])
    reused = next(s for s in spans if s.name == "rerank" and s.parent_id is not None)
    root = next(s for s in spans if s.parent_id is None)
    assert reused.attributes["evalkit.reused"] is True and reused.end_time_ns - reused.start_time_ns == 10_000
    assert reused.end_time_ns <= root.end_time_ns


def _spans(url: str, trace_id: str) -> list:
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=url).get_trace(trace_id).data.spans
