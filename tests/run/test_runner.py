"""The runner end to end on a tiny bilingual corpus: files, metrics, failures, resume, determinism."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.evalsets import freeze, load_eval_set
from evalkit.graph import Node, NodeParams, config_from_dict, register_node
from evalkit.graph.schema import declare_field
from evalkit.metrics import hit, ndcg, recall
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import read_results

REPO = Path(__file__).resolve().parents[2]

DOCS = [
    ("fin-001", "电子发票报销规定", "员工报销时，单张电子发票金额上限为5000元。超过上限需部门总监审批。"),
    ("fin-002", "差旅住宿补贴", "一线城市每晚住宿补贴600元，二线城市每晚450元。"),
    ("it-001", "Laptop repair", "If your laptop is broken, open a ticket in the IT portal. Repairs take 3 business days."),
    ("it-002", "Error codes", "Error E-4012 means the battery controller failed. E-4013 means the fan failed."),
    ("cfg-001", "Config reference", "The field retry.max_attempts defaults to 3. timeout.seconds defaults to 30."),
    ("hr-001", "育儿假", "子女出生后，员工可享受10天育儿假。"),
]
QUESTIONS = [
    ("q1", "电子发票报销上限是多少", ["fin-001"], "single", "zh"),
    ("q2", "what does error E-4012 mean", ["it-002"], "exact_term", "en"),
    ("q3", "retry.max_attempts default", ["cfg-001"], "exact_term", "en"),
    ("q4", "孩子出生能休几天假", ["hr-001"], "colloquial", "zh"),
    ("q5", "my computer broke, who fixes it", ["it-001"], "colloquial", "en"),
    ("q6", "海外出差每天补贴多少", [], "unanswerable", "zh"),
]

BM25 = {"name": "bm25", "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "auto"}}}},
        "edges": {"start": "retrieve", "retrieve": "end"}}
HYBRID = {"name": "hybrid_guard",
          "nodes": {"retrieve": {"type": "retrieve", "params": {"dense": {"embedder": "e5"}, "bm25": {}}},
                    "rerank": {"type": "rerank", "params": {"model": "e5", "top_k": 10}},
                    "guard": {"type": "guard", "params": {"threshold": 0.85}}},
          "edges": {"start": "retrieve", "retrieve": "rerank", "rerank": "guard", "guard": "end"},
          "routes": {"guard": {"field": "guard_triggered", "cases": {True: "end"}}}}


@pytest.fixture
def evalset(tmp_path: Path) -> Path:
    (tmp_path / "corpora").mkdir()
    corpus = tmp_path / "corpora" / "tiny.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}, ensure_ascii=False) + "\n"
                              for i, t, x in DOCS), encoding="utf-8")
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": g, "type": t, "lang": lang},
                                       ensure_ascii=False) + "\n" for i, q, g, t, lang in QUESTIONS), encoding="utf-8")
    freeze(path, corpus=str(corpus))
    return path


def _run(evalset: Path, configs: list[dict], out: Path, **kw):
    opts = RunOptions(output=out, progress=False, mlflow=kw.pop("mlflow", False), **kw)
    return run_eval(load_eval_set(str(evalset)), [config_from_dict(c) for c in configs], opts, echo=lambda m: None)


def test_run_writes_summary_and_per_query_records(evalset: Path, tmp_path: Path):
    out = tmp_path / "results" / "tiny.json"
    summary = _run(evalset, [BM25, HYBRID], out)
    data = json.loads(out.read_text())
    assert data["eval_set"]["name"] == "tiny" and data["eval_set"]["version"] == 1
    assert data["eval_set"]["n_queries"] == 6 and len(data["eval_set"]["sha256"]) == 64
    assert set(data["variants"]) == {"bm25", "hybrid_guard"}
    for name in ("bm25", "hybrid_guard"):
        v = data["variants"][name]
        assert set(v["metrics"]) >= {"recall@20", "hit@5", "mrr@10", "ndcg@10"}
        assert v["n_failed"] == 0 and v["n_excluded"] == 1
        rows = read_results(out.with_suffix("") / name / "per_query.jsonl")
        assert [r.query_id for r in rows] == [q[0] for q in QUESTIONS]
        for r in rows:
            if not r.gold_doc_ids:
                assert r.metrics == {"degraded": 0.0}  # unanswerable: no retrieval metric (excluded, not scored 0)
                continue
            docs = [d["doc_id"] for d in r.retrieved]
            assert len(docs) == len(set(docs))  # document level, deduplicated
            final = [d["doc_id"] for d in r.reranked]
            assert r.metrics["recall@20"] == recall(docs, r.gold_doc_ids, 20)
            assert r.metrics["hit@5"] == hit(final, r.gold_doc_ids, 5)
            assert r.metrics["ndcg@10"] == pytest.approx(ndcg(final, r.gold_doc_ids, 10))
            assert r.trace and r.trace[0]["node"] == "retrieve"
        means = [sum(r.metrics["hit@5"] for r in rows if r.gold_doc_ids) / 5]
        assert v["metrics"]["hit@5"] == pytest.approx(means[0])
    hybrid = read_results(out.with_suffix("") / "hybrid_guard" / "per_query.jsonl")
    assert all(len(r.retrieved) == len(DOCS) for r in hybrid)  # dense returns every doc of a tiny corpus
    assert all(r.rerank_top1 is not None for r in hybrid)
    assert [e["node"] for e in hybrid[0].trace] == ["retrieve", "rerank", "guard"]
    assert summary.variants["hybrid_guard"].metrics["abstain_rate_unanswerable"] in (0.0, 1.0)


def test_results_do_not_depend_on_the_number_of_workers(evalset: Path, tmp_path: Path):
    one = _run(evalset, [HYBRID], tmp_path / "a.json", workers=1)
    three = _run(evalset, [HYBRID], tmp_path / "b.json", workers=3)
    assert one.variants["hybrid_guard"].metrics == three.variants["hybrid_guard"].metrics
    ra = read_results(tmp_path / "a" / "hybrid_guard" / "per_query.jsonl")
    rb = read_results(tmp_path / "b" / "hybrid_guard" / "per_query.jsonl")
    assert [(r.query_id, r.retrieved, r.reranked, r.outcome) for r in ra] == \
           [(r.query_id, r.retrieved, r.reranked, r.outcome) for r in rb]


class Crash(BaseException):
    """Stands for a killed process (not an Exception: the engine must not swallow it)."""


class FlakyParams(NodeParams):
    fail_on: list[str] = []
    crash_on: list[str] = []


CALLS: list[str] = []


declare_field("flaky_seen", bool, "the test's flaky node ran")


@register_node
class Flaky(Node):
    """Test node: raises on some queries, 'crashes the process' on others, counts its calls."""

    type = "test_flaky"
    reads = ("query_id",)
    writes = ("flaky_seen",)
    Params = FlakyParams

    def run(self, state):
        CALLS.append(state["query_id"])
        if state["query_id"] in self.params.crash_on:
            raise Crash()
        if state["query_id"] in self.params.fail_on:
            raise ValueError(f"cannot handle {state['query_id']}")
        return {"flaky_seen": True}


def _flaky(**params) -> dict:
    return {"name": "flaky", "nodes": {"flaky": {"type": "test_flaky", "params": params},
                                       "retrieve": {"type": "retrieve", "params": {"bm25": {}}}},
            "edges": {"start": "flaky", "flaky": "retrieve", "retrieve": "end"}}


def test_a_failing_query_is_recorded_and_the_run_goes_on(evalset: Path, tmp_path: Path):
    summary = _run(evalset, [_flaky(fail_on=["q2"])], tmp_path / "f.json")
    v = summary.variants["flaky"]
    assert v.n_failed == 1
    rows = {r.query_id: r for r in read_results(tmp_path / "f" / "flaky" / "per_query.jsonl")}
    assert rows["q2"].error["node"] == "flaky" and rows["q2"].error["type"] == "ValueError"
    assert rows["q2"].trace[-1]["error"]["message"] == "cannot handle q2"
    assert rows["q2"].metrics["hit@5"] == 0.0  # a failure counts as a miss, never a hole in the mean
    assert rows["q1"].error is None and rows["q3"].metrics["hit@5"] == 1.0


def test_resume_reruns_only_unfinished_and_failed_queries(evalset: Path, tmp_path: Path, monkeypatch):
    out = tmp_path / "r.json"
    CALLS.clear()
    crashing = {"on": True}
    original = Flaky.run

    def run(self, state):
        if crashing["on"] and state["query_id"] == "q4":
            CALLS.append(state["query_id"])
            raise Crash()
        return original(self, state)

    monkeypatch.setattr(Flaky, "run", run)
    cfg = _flaky(fail_on=["q2"])
    with pytest.raises(Crash):
        _run(evalset, [cfg], out)
    assert CALLS == ["q1", "q2", "q3", "q4"]
    assert [r.query_id for r in read_results(out.with_suffix("") / "flaky" / "per_query.jsonl")] == ["q1", "q2", "q3"]
    crashing["on"] = False
    CALLS.clear()
    summary = _run(evalset, [cfg], out, resume=True)
    assert CALLS == ["q2", "q4", "q5", "q6"]  # q1, q3 kept; q2 failed before, so it runs again
    rows = read_results(out.with_suffix("") / "flaky" / "per_query.jsonl")
    assert [r.query_id for r in rows] == [q[0] for q in QUESTIONS]  # rewritten in eval-set order
    assert summary.variants["flaky"].n_failed == 1  # q2 still fails
    CALLS.clear()
    _run(evalset, [cfg], out)  # without --resume everything runs again
    assert [q[0] for q in QUESTIONS] == CALLS


def test_duplicate_variant_names_are_refused(evalset: Path, tmp_path: Path):
    from evalkit.errors import EvalkitError

    with pytest.raises(EvalkitError, match="share the variant name"):
        _run(evalset, [BM25, BM25], tmp_path / "d.json")


def test_cli_run_prints_the_comparison_table(evalset: Path, tmp_path: Path):
    cfg = tmp_path / "bm25.yaml"
    cfg.write_text(config_from_dict(BM25).to_yaml(), encoding="utf-8")
    res = CliRunner().invoke(cli, ["run", "--eval-set", f"{evalset}@v1", "--graph-config", str(cfg),
                                   "--output", str(tmp_path / "c.json"), "--no-mlflow", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "recall@20" in res.output and "bm25" in res.output and "excluded" in res.output


def test_runner_script_matches_the_cli(evalset: Path, tmp_path: Path):
    cfg = tmp_path / "bm25.yaml"
    cfg.write_text(config_from_dict(BM25).to_yaml(), encoding="utf-8")
    out = tmp_path / "script.json"
    proc = subprocess.run([sys.executable, str(REPO / "runners" / "eval_runner.py"), "--eval-set", str(evalset),
                           "--graph-config", str(cfg), "--output", str(out), "--no-mlflow", "--no-progress"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["variants"]["bm25"]["metrics"]["hit@5"] > 0


@pytest.mark.integration
def test_run_logs_to_the_embedded_mlflow_store(evalset: Path, tmp_path: Path):
    out = tmp_path / "m.json"
    summary = _run(evalset, [BM25], out, mlflow=True)
    run_id = summary.variants["bm25"].mlflow_run_id
    assert run_id and summary.mlflow["tracking_uri"].startswith("sqlite:")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=summary.mlflow["tracking_uri"])
    run = client.get_run(run_id)
    assert run.data.metrics["hit_at_5"] == pytest.approx(summary.variants["bm25"].metrics["hit@5"])
    assert run.data.params["nodes.retrieve.type"] == "retrieve"
    assert json.loads(out.read_text())["variants"]["bm25"]["mlflow_run_id"] == run_id


@pytest.mark.integration
def test_a_run_logging_to_mlflow_prepares_the_analysis_views_while_the_logger_finishes(evalset: Path, tmp_path: Path):
    """The main process would only wait for the background logger: it writes each variant's view then, byte for byte
    the one the first ``compare`` would write. Without MLflow (no wait) the run writes none."""
    from evalkit import viewfile
    from evalkit.recordview import ANALYSIS

    _run(evalset, [BM25, HYBRID], tmp_path / "m.json", mlflow=True)
    for name in ("bm25", "hybrid_guard"):
        records = tmp_path / "m" / name / "per_query.jsonl"
        prepared = viewfile.view_path(records).read_bytes()
        viewfile.view_path(records).unlink()
        viewfile.read_kept_rows(records, ANALYSIS)
        assert viewfile.view_path(records).read_bytes() == prepared
    _run(evalset, [BM25], tmp_path / "plain.json")
    assert sorted(p.name for p in (tmp_path / "plain" / "bm25").iterdir()) == ["per_query.jsonl", "run.json"]


def test_shared_prefix_runs_once_and_changes_no_number(evalset: Path, tmp_path: Path):
    # two variants with the same flaky node and BM25 retrieval, differing only in a later rerank
    a = _flaky()
    b = _flaky()
    b["name"] = "flaky_b"
    b["nodes"]["rerank"] = {"type": "rerank", "params": {"model": "e5", "top_k": 5}}
    b["edges"] = {"start": "flaky", "flaky": "retrieve", "retrieve": "rerank", "rerank": "end"}
    CALLS.clear()
    shared = _run(evalset, [a, b], tmp_path / "s.json")
    assert [q[0] for q in QUESTIONS] == CALLS  # the second variant reused the first one's flaky runs
    rows = read_results(tmp_path / "s" / "flaky_b" / "per_query.jsonl")
    assert all(r.trace[0]["reused"] and r.trace[1]["reused"] and not r.trace[2]["reused"] for r in rows)
    assert shared.variants["flaky_b"].timing["node_executions_reused"] == 2 * len(QUESTIONS)
    CALLS.clear()
    alone = _run(evalset, [a, b], tmp_path / "n.json", share_work=False)
    assert [q[0] for q in QUESTIONS] * 2 == CALLS
    for name in ("flaky", "flaky_b"):
        assert shared.variants[name].metrics == alone.variants[name].metrics
        x = read_results(tmp_path / "s" / name / "per_query.jsonl")
        y = read_results(tmp_path / "n" / name / "per_query.jsonl")
        assert [(r.retrieved, r.reranked) for r in x] == [(r.retrieved, r.reranked) for r in y]


def test_fusion_sweep_searches_each_query_once(evalset: Path, tmp_path: Path, monkeypatch):
    # two retrieve nodes that differ only in fusion: no node-level sharing, but one BM25 search per query
    from evalkit.index.bm25 import BM25Index

    scored: list[str] = []
    real = BM25Index.search
    monkeypatch.setattr(BM25Index, "search", lambda self, q, k: scored.append(q) or real(self, q, k))
    k20 = json.loads(json.dumps(BM25))
    k20["name"], k20["nodes"]["retrieve"]["params"]["fusion"] = "bm25_k20", {"k": 20}
    shared = _run(evalset, [BM25, k20], tmp_path / "s.json")
    assert sorted(scored) == sorted(q[1] for q in QUESTIONS)
    scored.clear()
    alone = _run(evalset, [BM25, k20], tmp_path / "n.json", share_work=False)
    assert sorted(scored) == sorted(q[1] for q in QUESTIONS * 2)  # --no-share: every variant pays
    for name in ("bm25", "bm25_k20"):
        assert shared.variants[name].metrics == alone.variants[name].metrics


class _GradingJudge:
    """A judge with a ``correctness`` grade (the runner wiring; LLMJudge.correctness is tested over HTTP)."""

    identity = "test-grading-judge"

    def judge(self, question, answer, evidence):
        from evalkit.judges import ClaimVerdict, JudgeResult

        return JudgeResult([ClaimVerdict(answer, "supported", "test")])

    def correctness(self, question, answer, reference):
        if "5000" in reference:
            return {"verdict": "correct" if "5000" in answer else "incorrect", "reason": "test"}
        return {"verdict": None, "reason": "test: judge failed"}


def test_answer_correctness_flows_from_the_judge_to_the_summary(tmp_path: Path):
    from evalkit.judges import JUDGES, register_judge

    if "test_grading" not in JUDGES:
        register_judge("test_grading", lambda cache_root=None: _GradingJudge())
    (tmp_path / "corpora").mkdir()
    corpus = tmp_path / "corpora" / "tiny.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}, ensure_ascii=False) + "\n"
                              for i, t, x in DOCS), encoding="utf-8")
    rows = [("q1", "电子发票报销上限是多少", ["fin-001"], "5000元"), ("q2", "孩子出生能休几天假", ["hr-001"], "10天"),
            ("q3", "what does error E-4012 mean", ["it-002"], None)]
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": g, "reference_answer": r,
                                        "type": "single", "lang": "zh"}, ensure_ascii=False) + "\n"
                            for i, q, g, r in rows), encoding="utf-8")
    freeze(path, corpus=str(corpus))
    rag = {"name": "rag", "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "auto"}}},
                                    "generate": {"type": "generate", "params": {"llm": {"backend": "extractive"},
                                                                                "evidence_from": "retrieved",
                                                                                "evidence_k": 1}}},
           "edges": {"start": "retrieve", "retrieve": "generate", "generate": "end"}}
    summary = _run(path, [rag], tmp_path / "qa_out.json", judge="test_grading")
    per_query = {r.query_id: r for r in read_results(tmp_path / "qa_out" / "rag" / "per_query.jsonl")}
    assert per_query["q1"].metrics["answer_correctness"] == 1.0
    assert per_query["q1"].generation["judgement"]["correctness"] == {"verdict": "correct", "reason": "test"}
    assert per_query["q2"].metrics["answer_correctness"] is None and per_query["q2"].metrics["correctness_failed"] == 1
    assert "answer_correctness" not in per_query["q3"].metrics  # no reference answer: nothing to grade against
    m = summary.variants["rag"].metrics
    assert m["answer_correctness"] == 1.0 and m["n_correctness_failed"] == 1


def test_resume_reruns_a_variant_whose_calibration_file_changed(evalset: Path, tmp_path: Path):
    """A relative guard's threshold comes from a file the config names; the config's text does not change
    when the file does, so --resume must compare the threshold too, or it keeps answers guarded at the old
    one beside new ones."""
    calib = tmp_path / "calibration.json"
    calib.write_text("[0.01, 0.02, 0.03]")
    cfg = {"name": "guarded",
           "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {}}},
                     "rerank": {"type": "rerank", "params": {"model": "e5", "top_k": 5}},
                     "guard": {"type": "guard", "params": {"mode": "relative", "percentile": 50,
                                                           "calibration": str(calib)}}},
           "edges": {"start": "retrieve", "retrieve": "rerank", "rerank": "guard", "guard": "end"}}
    out = tmp_path / "g.json"
    said: list[str] = []

    def run(resume: bool):
        said.clear()
        opts = RunOptions(output=out, progress=False, mlflow=False, resume=resume)
        run_eval(load_eval_set(str(evalset)), [config_from_dict(cfg)], opts, echo=said.append)
        rows = read_results(out.with_suffix("") / "guarded" / "per_query.jsonl")
        return {ev["wrote"]["guard_threshold"] for r in rows for ev in r.trace if ev["node"] == "guard"}

    assert run(False) == {0.02}
    assert run(True) == {0.02} and any("6 finished queries kept" in m for m in said)  # unchanged: all kept
    calib.write_text("[0.97, 0.98, 0.99]")
    assert run(True) == {0.98}  # every query guarded at the new threshold
    assert not any("kept" in m for m in said)
