"""``EvalkitFaithfulness`` in ``ragas.evaluate``: no LLM, and per row the ``faithfulness`` of ``evalkit score``.

The demo's answers (rag_extractive on the 12-question demo slice, ``demo_slice_answers``) are
exported as a ragas dataset; the installed ragas evaluates it with evalkit's metric while any
OpenAI client would fail (no key, no network), and ``evalkit score --answers`` scores the same
file through the CLI. Every row must agree (NaN where evalkit has no value), and agree with
the run's own per-query faithfulness.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
pytest.importorskip("ragas", reason="the ragas extra: pip install 'evalkit-ragraph[ragas]'")


@pytest.fixture(scope="module")
def exported(demo_slice_answers: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ragas_metric")
    res = CliRunner().invoke(cli, ["export", str(demo_slice_answers), "--format", "ragas", "-o", str(out)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return out / "rag_extractive.jsonl"


def _per_query(summary: Path, variant: str) -> list[dict]:
    path = summary.with_suffix("") / variant / "per_query.jsonl"
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def _same(a: float, b: float | None) -> bool:
    return math.isnan(a) if b is None else a == b


def test_ragas_evaluate_with_evalkit_faithfulness_equals_evalkit_score_per_row(exported: Path, tmp_path: Path,
                                                                              demo_slice_answers: Path,
                                                                              monkeypatch: pytest.MonkeyPatch):
    from ragas import EvaluationDataset, evaluate
    from ragas.metrics.base import MetricWithLLM

    from evalkit.integrations.ragas import EvalkitFaithfulness

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # an LLM built by ragas would fail here
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    metric = EvalkitFaithfulness()
    assert not isinstance(metric, MetricWithLLM)
    result = evaluate(EvaluationDataset.from_jsonl(str(exported)), metrics=[metric], show_progress=False,
                      raise_exceptions=True)
    values = result.to_pandas()["evalkit_faithfulness"].tolist()

    out = tmp_path / "results" / "scored.json"
    res = CliRunner().invoke(cli, ["score", "--answers", str(exported), "--name", "mine", "--output", str(out),
                                   "--no-mlflow"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    scored = [r["metrics"].get("faithfulness") for r in _per_query(out, "mine")]
    native = [r["metrics"].get("faithfulness") for r in _per_query(demo_slice_answers, "rag_extractive")]
    assert len(values) == len(scored) == len(native) == 12
    assert all(_same(a, b) for a, b in zip(values, scored, strict=True)), (values, scored)
    assert scored == native
    assert sum(v is not None for v in scored) >= 6  # most answers have claims: the comparison is not all-NaN


def test_a_sample_the_judge_cannot_read_is_a_clear_error():
    from ragas.dataset_schema import SingleTurnSample

    from evalkit.errors import EvalkitError
    from evalkit.integrations.ragas import EvalkitFaithfulness

    with pytest.raises(EvalkitError, match=r"ragas sample: the question must be a non-empty string"):
        EvalkitFaithfulness().single_turn_score(SingleTurnSample(user_input="", response="x",
                                                                 retrieved_contexts=["y"]))


def test_a_judge_that_is_down_is_an_error_never_a_score(closed_port: int):
    from ragas.dataset_schema import SingleTurnSample

    from evalkit.errors import EvalkitError
    from evalkit.integrations.ragas import EvalkitFaithfulness
    from evalkit.llm.base import LLMSpec

    down = {"llm": LLMSpec(backend="openai", model="m", base_url=f"http://127.0.0.1:{closed_port}/v1",
                           max_retries=0, timeout_s=5, cache="off")}
    sample = SingleTurnSample(user_input="How long is parental leave?", response="Ten days.",
                              retrieved_contexts=["Parents get ten days of leave."])
    with pytest.raises(EvalkitError, match=r"evalkit's judge failed on ragas sample 'How long is parental leave\?'"):
        EvalkitFaithfulness(judge="llm", judge_options=down).single_turn_score(sample)
