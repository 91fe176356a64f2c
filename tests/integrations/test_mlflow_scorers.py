"""evalkit's scorers in ``mlflow.genai.evaluate``: no LLM, and per row the numbers of ``evalkit score``.

The demo's answers (rag_extractive on the 12-question demo slice) are exported as ragas
samples; an app instrumented with ``mlflow.trace`` replays them (a RETRIEVER span returning
the passages as ``mlflow.entities.Document`` with their document ids, then the answer), and
``mlflow.genai.evaluate`` runs it with the four scorers on a local sqlite tracking store.
``evalkit score --answers`` scores the same file through the CLI. Every row must agree:
groundedness = ``faithfulness``, and recall@20 / hit@5 / ndcg@10 over the retrieved ids.
Plain rows (``inputs["context"]``, no trace) give the same groundedness.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import EvalkitError

pytest.importorskip("mlflow")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
METRICS = {"recall_at_20": "recall@20", "hit_at_5": "hit@5", "ndcg_at_10": "ndcg@10",
           "evalkit_groundedness": "faithfulness"}


@pytest.fixture(scope="module")
def samples(demo_slice_answers: Path, tmp_path_factory) -> tuple[Path, list[dict]]:
    out = tmp_path_factory.mktemp("mlflow_scorers")
    res = CliRunner().invoke(cli, ["export", str(demo_slice_answers), "--format", "ragas", "-o", str(out)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    path = out / "rag_extractive.jsonl"
    return path, [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def evalkit_rows(samples, demo_slice_answers: Path, tmp_path_factory) -> dict[str, dict]:
    """``evalkit score``'s per-query metrics of the exported file, by question."""
    path, _ = samples
    out = tmp_path_factory.mktemp("scored") / "scored.json"
    es = demo_slice_answers.parent.parent / "slice.jsonl"
    res = CliRunner().invoke(cli, ["score", "--answers", str(path), "--eval-set", f"{es}@v1", "--name", "mine",
                                   "--evidence-k", "3", "--output", str(out),
                                   "--no-mlflow"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in (out.with_suffix("") / "mine" / "per_query.jsonl").read_text().splitlines()]
    return {r["question"]: r for r in rows}


@pytest.fixture
def tracking(tmp_path: Path):
    import mlflow

    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    mlflow.set_experiment("evalkit-scorers")
    yield mlflow
    mlflow.set_tracking_uri(before)


def _values(df, column: str) -> dict[str, float | None]:
    out = {}
    for request, value in zip(df["request"], df[f"{column}/value"], strict=True):
        q = (request if isinstance(request, dict) else json.loads(request))["question"]
        out[q] = None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
    return out


def test_scorers_on_traced_app_equal_evalkit_score_per_row(samples, evalkit_rows, tracking):
    from mlflow.entities import Document, SpanType

    from evalkit.integrations.mlflow import EvalkitGroundedness, HitAtK, NDCGAtK, RecallAtK

    _, rows = samples
    by_q = {s["user_input"]: s for s in rows}

    @tracking.trace(span_type=SpanType.RETRIEVER)
    def retrieve(question: str) -> list[Document]:
        s = by_q[question]
        return [Document(page_content=t, id=d) for t, d in zip(s["retrieved_contexts"], s["retrieved_context_ids"],
                                                                strict=True)]

    @tracking.trace
    def app(question: str) -> str:
        retrieve(question)
        return by_q[question]["response"]

    data = [{"inputs": {"question": s["user_input"]},
             "expectations": {"expected_document_ids": s.get("reference_context_ids", [])}} for s in rows]
    result = tracking.genai.evaluate(data=data, predict_fn=app,
                                     scorers=[EvalkitGroundedness(), RecallAtK(20), HitAtK(5), NDCGAtK(10)])
    df = result.result_df
    assert len(df) == 12
    compared = 0
    for column, metric in METRICS.items():
        got = _values(df, column)
        want = {q: r["metrics"].get(metric) for q, r in evalkit_rows.items()}
        assert got == want, column
        compared += sum(v is not None for v in want.values())
    assert compared >= 12 * 3  # most rows have every value: the comparison is not of empties
    # the rationale names every claim with its verdict; the metadata counts them
    one = next(q for q, r in evalkit_rows.items() if (r["generation"]["judgement"] or {}).get("claims"))
    questions = [(r if isinstance(r, dict) else json.loads(r))["question"] for r in df["request"]]
    trace = tracking.get_trace(df["trace_id"][questions.index(one)])
    feedback = {a.name: a for a in trace.info.assessments}
    claims = evalkit_rows[one]["generation"]["judgement"]["claims"]
    grounded = feedback["evalkit_groundedness"]
    assert grounded.rationale == "\n".join(f"{c['verdict']}: {c['claim']}" for c in claims)
    assert grounded.metadata["claims"] == str(len(claims))
    assert grounded.metadata["unverified_share"] == str(sum(c["verdict"] == "unverified" for c in claims)
                                                        / len(claims))
    assert feedback["recall_at_20"].value == evalkit_rows[one]["metrics"]["recall@20"]


def test_plain_rows_read_the_context_and_question_from_inputs(samples, evalkit_rows, tracking):
    from evalkit.integrations.mlflow import EvalkitGroundedness

    _, rows = samples
    data = [{"inputs": {"question": s["user_input"], "context": s["retrieved_contexts"]}, "outputs": s["response"]}
            for s in rows]
    df = tracking.genai.evaluate(data=data, scorers=[EvalkitGroundedness()]).result_df
    assert _values(df, "evalkit_groundedness") == {q: r["metrics"].get("faithfulness") for q, r in evalkit_rows.items()}


def test_bad_rows_say_what_is_missing():
    from evalkit.integrations.mlflow import EvalkitGroundedness, RecallAtK

    with pytest.raises(EvalkitError, match=r"no evidence: .* inputs\['context'\]"):
        EvalkitGroundedness()(inputs={"question": "q"}, outputs="a")
    with pytest.raises(EvalkitError, match=r"mlflow row: the question must be a non-empty string"):
        EvalkitGroundedness()(inputs={"context": ["x"]}, outputs="a")
    with pytest.raises(EvalkitError, match=r"no expectations\['expected_document_ids'\]"):
        RecallAtK(5)(expectations={}, trace=None)
    with pytest.raises(EvalkitError, match=r"no ranking: the row needs a trace with a RETRIEVER span"):
        RecallAtK(5)(expectations={"expected_document_ids": ["d"]}, trace=None)
    with pytest.raises(EvalkitError, match=r"RecallAtK\(k\): k must be a positive integer, got 0"):
        RecallAtK(0)


def test_a_judge_that_is_down_gives_an_error_feedback_not_a_value(closed_port: int):
    from evalkit.integrations.mlflow import EvalkitGroundedness
    from evalkit.llm.base import LLMSpec

    down = {"llm": LLMSpec(backend="openai", model="m", base_url=f"http://127.0.0.1:{closed_port}/v1",
                           max_retries=0, timeout_s=5, cache="off")}
    feedback = EvalkitGroundedness(judge="llm", judge_options=down)(
        inputs={"question": "How long is parental leave?", "context": ["Parents get ten days of leave."]},
        outputs="Ten days.")
    assert feedback.value is None and feedback.error is not None
    assert feedback.rationale.startswith("the judge failed:")


@pytest.fixture(scope="module")
def own_traces(demo_slice_answers: Path, tmp_path_factory):
    """rag_extractive run again on the demo slice with MLflow on (every query traced): its traces and per-query rows."""
    import mlflow

    from evalkit.evalsets import load_eval_set
    from evalkit.graph.sweep import load_variants
    from evalkit.run.runner import RunOptions, run_eval

    folder = tmp_path_factory.mktemp("own_traces")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    configs = load_variants(Path(__file__).resolve().parents[2] / "graph_configs" / "rag_extractive.yaml")
    es = demo_slice_answers.parent.parent / "slice.jsonl"
    summary = run_eval(load_eval_set(str(es)), configs,
                       RunOptions(output=folder / "r.json", progress=False, tracking_uri=uri, trace_policy="all",
                                  mlflow_background=False), echo=lambda m: None)
    run_id = summary.variants["rag_extractive"].mlflow_run_id
    rows = [json.loads(x) for x in (folder / "r" / "rag_extractive" / "per_query.jsonl").read_text().splitlines()]
    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        traces = mlflow.search_traces(run_id=run_id)
        yield mlflow, traces, {r["question"]: r for r in rows}
    finally:
        mlflow.set_tracking_uri(before)


def test_scorers_on_traces_evalkit_logged_equal_evalkit_score_per_row(own_traces, evalkit_rows):
    from evalkit.integrations.mlflow import EvalkitGroundedness, HitAtK, NDCGAtK, RecallAtK

    mlflow, traces, run_rows = own_traces
    assert len(traces) == 12
    df = mlflow.genai.evaluate(data=traces, scorers=[EvalkitGroundedness(), RecallAtK(20), HitAtK(5),
                                                     NDCGAtK(10)]).result_df
    assert len(df) == 12
    compared = 0
    for column, metric in METRICS.items():
        got = _values(df, column)
        want = {q: r["metrics"].get(metric) for q, r in evalkit_rows.items()}   # evalkit score on the ragas export
        assert got == want, column
        compared += sum(v is not None for v in want.values())
    assert compared >= 12 * 3
    # the run itself judged the same question, answer and evidence: the same faithfulness
    assert _values(df, "evalkit_groundedness") == {q: r["metrics"].get("faithfulness") for q, r in run_rows.items()}


def test_an_evalkit_trace_carries_question_answer_evidence_and_gold(own_traces):
    from evalkit.track.traces import PASSAGE_CHARS

    mlflow, traces, run_rows = own_traces
    checked = 0
    for trace_id in traces["trace_id"]:
        trace = mlflow.get_trace(trace_id)
        request = json.loads(trace.data.request)
        row = run_rows[request["question"]]
        assert json.loads(trace.data.response)["answer"] == row["generation"]["answer"]
        retrievers = trace.search_spans(span_type="RETRIEVER")
        assert [s.name for s in retrievers] == ["documents"]
        docs = retrievers[0].outputs
        evidence = row["generation"]["evidence"]
        assert [d["id"] for d in docs] == [e[1] for e in evidence]
        assert [d["page_content"] for d in docs] == [t[:PASSAGE_CHARS] for t in row["generation"]["evidence_text"]]
        expected = {a.name: a.value for a in trace.info.assessments if a.name == "expected_document_ids"}
        assert expected == {"expected_document_ids": row["gold_doc_ids"]}
        checked += bool(docs)
    assert checked >= 10


def test_a_retrieval_only_evalkit_trace_gives_its_ranking_metrics(tiny_trace):
    from evalkit.integrations.mlflow import HitAtK, RecallAtK

    docs = tiny_trace.search_spans(span_type="RETRIEVER")[0].outputs
    assert docs and all("page_content" not in d for d in docs)   # retrieval only: ids, no text
    gold = {a.name: a.value for a in tiny_trace.info.assessments}
    expected = {"expected_document_ids": gold["expected_document_ids"]}
    assert RecallAtK(20)(expectations=expected, trace=tiny_trace).value == gold["recall_at_20"]
    assert HitAtK(5)(expectations=expected, trace=tiny_trace).value == gold["hit_at_5"]


def test_a_trace_from_an_older_evalkit_is_refused_with_where_its_metrics_are():
    from mlflow.entities import SpanType

    from evalkit.integrations.mlflow import RecallAtK

    class Old:  # a trace as evalkit logged it before its documents span: a retriever node span holding "wrote"
        info = type("I", (), {"trace_id": "tr-old"})()
        data = type("D", (), {"spans": []})()

        @staticmethod
        def search_spans(span_type=None):
            span = type("S", (), {"span_id": "s", "parent_id": None, "span_type": SpanType.RETRIEVER, "name": "r",
                                  "start_time_ns": 0, "outputs": {"wrote": {"retrieved": []}}})()
            return [span]

    with pytest.raises(EvalkitError, match=r"logged by an evalkit older than its 'documents' span"):
        RecallAtK(5)(expectations={"expected_document_ids": ["doc-a"]}, trace=Old())


@pytest.fixture
def tiny_trace(tmp_path: Path):
    """A trace evalkit logged: a BM25 run of the tiny eval set, logged to a sqlite MLflow store."""
    import mlflow
    from fakes import DOCS, QUESTIONS

    from evalkit.evalsets import freeze, load_eval_set
    from evalkit.graph import config_from_dict
    from evalkit.run.runner import RunOptions, run_eval

    (tmp_path / "corpora").mkdir()
    corpus = tmp_path / "corpora" / "tiny.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in DOCS))
    es = tmp_path / "tiny.jsonl"
    es.write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": g, "type": t, "lang": "en"}) + "\n"
                          for i, q, g, t in QUESTIONS))
    freeze(es, corpus=str(corpus))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    bm25 = {"name": "bm25", "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}}}},
            "edges": {"start": "retrieve", "retrieve": "end"}}
    summary = run_eval(load_eval_set(str(es)), [config_from_dict(bm25)],
                       RunOptions(output=tmp_path / "r.json", progress=False, tracking_uri=uri), echo=lambda m: None)
    from evalkit.track.traces import mlflow_trace_id

    return mlflow.MlflowClient(tracking_uri=uri).get_trace(mlflow_trace_id(summary.variants["bm25"].mlflow_run_id,
                                                                           "q1"))
