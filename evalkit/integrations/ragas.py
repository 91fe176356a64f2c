"""evalkit's judge as a ragas metric: ``ragas.evaluate(dataset, metrics=[EvalkitFaithfulness()])`` with no LLM.

    from ragas import EvaluationDataset, evaluate
    from evalkit.integrations.ragas import EvalkitFaithfulness

    dataset = EvaluationDataset.from_jsonl("results/demo_kb.ragas/rag_extractive.jsonl")
    result = evaluate(dataset, metrics=[EvalkitFaithfulness()], show_progress=False)
    result.to_pandas()["evalkit_faithfulness"]

``EvalkitFaithfulness`` is a ragas ``SingleTurnMetric`` (ragas 0.4's custom-metric base in
``ragas.metrics.base``) reading ``user_input``, ``response`` and ``retrieved_contexts``. It
is not a ``MetricWithLLM``, so ``ragas.evaluate`` neither asks for an LLM nor builds one:
nothing leaves the machine with the default ``offline`` judge (``judge="llm"`` with
``judge_options`` uses evalkit's LLM judge, the cascade when configured).

Each sample is scored by :class:`~evalkit.integrations.samples.SampleScorer`, i.e. by
``evalkit score --answers``'s code, so the value is the ``faithfulness`` that ``evalkit
score`` gives that row: NaN (ragas' "no score") where evalkit has none, an answer that
abstains or has no checkable claim. A judge that fails (an LLM judge whose server is down)
raises, so ragas records an error, never a score. ragas hands a metric only the columns it may declare,
so the contexts arrive as texts without ids; faithfulness does not depend on ids.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ragas.dataset_schema import SingleTurnSample
from ragas.metrics.base import MetricOutputType, MetricType, SingleTurnMetric
from ragas.run_config import RunConfig

from evalkit.errors import EvalkitError
from evalkit.integrations.samples import SampleScorer, check_sample

__all__ = ["EvalkitFaithfulness"]


@dataclass
class EvalkitFaithfulness(SingleTurnMetric):
    """Share of an answer's claims that its contexts support, by evalkit's judge (evalkit's ``faithfulness``)."""

    name: str = "evalkit_faithfulness"
    judge: str = "offline"
    judge_options: dict[str, Any] = field(default_factory=dict)
    output_type: MetricOutputType = MetricOutputType.CONTINUOUS
    _required_columns: dict[MetricType, set[str]] = field(
        default_factory=lambda: {MetricType.SINGLE_TURN: {"user_input", "response", "retrieved_contexts"}})
    _scorer: SampleScorer | None = field(default=None, init=False, repr=False)

    def init(self, run_config: RunConfig) -> None:
        """Build the judge once (ragas calls this before scoring)."""
        self.scorer()

    def scorer(self) -> SampleScorer:
        if self._scorer is None:
            self._scorer = SampleScorer(self.judge, self.judge_options)
        return self._scorer

    async def _single_turn_ascore(self, sample: SingleTurnSample, callbacks: Any) -> float:
        checked = check_sample(sample.user_input, sample.response, sample.retrieved_contexts or [],
                               where=f"ragas sample {sample.user_input[:40]!r}" if sample.user_input else "ragas sample")
        verdicts = self.scorer().score(checked)
        if verdicts.error:  # a failed judge is never a score: ragas records the error (NaN) or raises it
            raise EvalkitError(f"evalkit's judge failed on ragas sample {checked.question[:40]!r}: {verdicts.error}")
        value = verdicts.value("faithfulness")
        return math.nan if value is None else value

    async def _ascore(self, row: dict[str, Any], callbacks: Any) -> float:
        return await self._single_turn_ascore(SingleTurnSample(**row), callbacks)
