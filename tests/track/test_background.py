"""Background logging (the worker process) logs exactly what synchronous logging logs.

The same invocation (two variants over four queries, with node traces, a reused step and
a failed query) is logged twice: once with ``log_invocation`` in this process, once
through ``BackgroundLogger`` (``python -m evalkit.track.background``). The two stores are
read back and compared entity by entity (runs, params, metrics, tags, dataset inputs,
artifact bytes, traces, spans, assessments), ignoring only what differs by nature: run
and trace ids, wall-clock timestamps and the owning process.
"""
from __future__ import annotations

import json
import resource
from pathlib import Path

import pytest

from evalkit.records import EvalSetRef, QueryResult, RunSummary, VariantSummary
from evalkit.track import VariantLog, log_invocation
from evalkit.track.background import BackgroundLogger
from evalkit.track.mlflow_log import CPU_STAGES

T0 = 1_780_000_000.0
VOLATILE_TAGS = {"evalkit.host", "evalkit.pid", "evalkit.pid_started", "mlflow.parentRunId", "mlflow.runName",
                 "mlflow.loggedArtifacts", "evalkit.ended_by"}


def _ev(step: int, node: str, start: float, ms: float, wrote: dict, edge: str | None, **kw) -> dict:
    return {"step": step, "node": node, "type": node, "started_at": T0 + start, "duration_ms": ms, "wrote": wrote,
            "edge": edge, "edge_reason": "default", "error": None, **kw}


def _results(variant: str) -> list[QueryResult]:
    out = []
    for i in range(4):
        failed = i == 3
        trace = [_ev(0, "retrieve", i, 5.0, {"retrieved": [["d1#0", "d1", 0.9]]}, "rerank",
                     reused=variant == "b", elapsed_ms=0.02 if variant == "b" else 5.0),
                 _ev(1, "rerank", i + 0.01, 2.0, {"reranked": [["d1#0", "d1", 0.8]]}, "end", elapsed_ms=2.0)]
        out.append(QueryResult(query_id=f"q{i}", question=f"question {i} password=hunter2?", gold_doc_ids=["d1"],
                               retrieved=[{"doc_id": "d1", "score": 0.9}], reranked=[{"doc_id": "d1", "score": 0.8}],
                               metrics={"hit@5": float(i % 2), "recall@20": 0.5}, trace=trace, type="single",
                               lang="en", rerank_top1=0.8, outcome="failed" if failed else "completed",
                               error={"node": "rerank", "type": "Boom", "message": "x"} if failed else None))
    return out


def _invocation(tmp: Path, eval_set: Path) -> tuple[RunSummary, list[VariantLog]]:
    variants = []
    for name in ("a", "b"):
        folder = tmp / "res" / name
        folder.mkdir(parents=True, exist_ok=True)
        results = _results(name)
        (folder / "per_query.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in results))
        summary = VariantSummary(metrics={"hit@5": 0.5, "recall@20": 0.5}, n_failed=1, n_queries=4, n_excluded=0,
                                 config_sha256="abc", seconds=1.5, timing={"latency_ms_mean": 7.0})
        variants.append(VariantLog(name=name, params={"nodes.rerank.params.top_k": "5", "llm.api_key": "sk-x"},
                                   config_yaml=f"name: {name}\napi_key: sk-live-0123456789abcdefgh\n",
                                   summary=summary, results=results, per_query_path=folder / "per_query.jsonl"))
    run = RunSummary(eval_set=EvalSetRef(name="tiny", version=2, sha256="f" * 64, n_queries=4,
                                         path=str(eval_set)),
                     variants={v.name: v.summary for v in variants}, git_commit="cafe1234")
    return run, variants


def _store(uri: str, tmp: Path) -> dict:
    """Everything in a store that logging decides, keyed by names instead of ids."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("evalkit")
    runs = client.search_runs([exp.experiment_id], max_results=100)
    ids = {r.info.run_id: ("parent" if "mlflow.parentRunId" not in r.data.tags else r.info.run_name) for r in runs}
    out = {}
    for r in runs:
        key = ids[r.info.run_id]
        arts = {}
        for a in client.list_artifacts(r.info.run_id):
            local = Path(client.download_artifacts(r.info.run_id, a.path, str(tmp / "dl" / key)))
            data = local.read_bytes()
            if a.path.endswith(".png"):
                arts[a.path] = data
                continue
            text = data.decode("utf-8")
            for run_id, name in ids.items():              # run ids appear inside comparison/variants tables
                text = text.replace(run_id, f"<{name}>")
            arts[a.path] = text
        out[key] = {"status": r.info.status,
                    "params": r.data.params, "metrics": r.data.metrics,
                    "tags": {k: v for k, v in r.data.tags.items() if k not in VOLATILE_TAGS},
                    "datasets": [(d.dataset.name, d.dataset.digest, d.dataset.source, d.dataset.schema,
                                  d.dataset.profile, [(t.key, t.value) for t in d.tags])
                                 for d in r.inputs.dataset_inputs],
                    "artifacts": arts}
        if key != "parent":
            traces = client.search_traces(locations=[exp.experiment_id], run_id=r.info.run_id, max_results=100)
            out[key]["traces"] = {
                t.info.tags["mlflow.traceName"]: {
                    "state": t.info.state.value,
                    "tags": {k: v for k, v in t.info.tags.items() if k != "mlflow.artifactLocation"},
                    "assessments": sorted((a.name, a.value, a.source.source_id) for a in t.info.assessments),
                    "spans": sorted((s.name, s.start_time_ns, s.end_time_ns, s.span_type, s.status.status_code.value,
                                     json.dumps(s.inputs, sort_keys=True), json.dumps(s.outputs, sort_keys=True),
                                     json.dumps({k: v for k, v in s.attributes.items()
                                                 if k != "mlflow.traceRequestId"}, sort_keys=True))
                                    for s in t.data.spans)}
                for t in traces}
    return out


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bg")
    sync_dir, bg_dir = tmp / "sync", tmp / "bg"
    run, variants = _invocation(sync_dir, tmp / "tiny.jsonl")
    sync_info = log_invocation(run, variants, sync_dir, source_name="evalkit test")
    run, variants = _invocation(bg_dir, tmp / "tiny.jsonl")
    bg = BackgroundLogger(run, bg_dir, source_name="evalkit test", echo=lambda m: None, max_pending=1)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    bg.open([v.name for v in variants])
    for v in variants:
        bg.submit(v)
    bg_info = bg.close(run.variants)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)     # the worker has been waited for: its CPU is in
    assert bg.proc.returncode == 0
    worker_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return (_store(sync_info["tracking_uri"], sync_dir), _store(bg_info["tracking_uri"], bg_dir), variants, bg_info,
            (bg.cpu, worker_cpu))


def test_background_logs_exactly_what_sync_logs(both):
    sync, bg, _, _, _ = both
    assert set(sync) == set(bg) == {"parent", "a", "b"}
    for key in sync:
        for part in ("status", "params", "metrics", "tags", "datasets", "artifacts"):
            assert bg[key][part] == sync[key][part], (key, part)
        if key != "parent":
            assert bg[key]["traces"] == sync[key]["traces"], key


def test_the_compared_stores_hold_the_invocation(both):
    """The comparison above is not vacuous: the runs, traces and assessments are there."""
    _, bg, variants, info, _ = both
    assert bg["parent"]["status"] == "FINISHED" and bg["parent"]["metrics"]["hit_at_5/b"] == 0.5
    assert len(bg["a"]["traces"]) == 4 and len(bg["b"]["params"]) == 2
    assert bg["b"]["traces"]["q1"]["assessments"] == [("expected_document_ids", ["d1"], "evalkit"),
                                                      ("hit_at_5", 1.0, "evalkit"), ("recall_at_20", 0.5, "evalkit")]
    assert bg["b"]["params"]["llm.api_key"] == "***"
    dumped = json.dumps(bg, default=repr)
    assert "sk-live-0123456789abcdefgh" not in dumped and "hunter2" not in dumped
    assert all(v.summary.mlflow_run_id for v in variants)      # the worker's run ids came back
    assert info["hint"].startswith("MLflow: mlflow ui --backend-store-uri")


def test_the_worker_says_where_its_cpu_went(both):
    """The per-step CPU the worker reports (what the deploy-gate benchmark prints) is each step's, within its total."""
    *_, (cpu, worker_cpu) = both
    assert list(cpu) == list(CPU_STAGES)
    assert all(sec > 0 for sec in cpu.values()), cpu        # every step ran: reading, the runs, building, storing
    assert sum(cpu.values()) <= worker_cpu                   # parts of the worker process's own CPU (rusage)


def test_warm_up_imports_what_the_worker_will_need_and_names_what_is_missing():
    import subprocess
    import sys

    code = ("import sys; from evalkit.track.background import WARM_MODULES, warm_up; "
            "print(warm_up(WARM_MODULES + ('evalkit_no_such_module',))); "
            "print(all(m in sys.modules for m in WARM_MODULES))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.split("\n")[:2] == ["['evalkit_no_such_module']", "True"]
