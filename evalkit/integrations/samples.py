"""One answer at a time through ``evalkit score --answers``'s code: what the integrations share.

A tool (ragas, MLflow) hands over one sample: a question, an answer and the passages the
answer was written from (texts, optionally with their document ids). :class:`SampleScorer`
makes it the one row of an in-memory answers file (:class:`~evalkit.scoring.answers.AnswersFile`,
the ``contexts`` and ``retrieved`` fields of docs/byo.md) and scores it with
:func:`evalkit.scoring.score_answers`, with one judge built once by
:func:`evalkit.judges.make_judge`. Nothing is re-implemented, so a value here is the value
``evalkit score`` prints for the same row, whatever the judge's verdicts come to mean.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.cachestore import default_cache_root
from evalkit.errors import EvalkitError
from evalkit.judges import make_judge
from evalkit.records import QueryResult
from evalkit.scoring import score_answers
from evalkit.scoring.answers import AnswerRow, AnswersFile

SOURCE_LABEL = "<sample>"


@dataclass
class Sample:
    """One answer to judge: the question, the answer, the passage texts shown, their document ids if known."""

    question: str
    answer: str
    contexts: list[str]
    context_ids: list[str] | None = None


@dataclass
class Verdicts:
    """A judged sample: evalkit's per-query metrics and the judge's claims with their verdicts."""

    metrics: dict[str, Any]
    claims: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    answered: bool = True

    def value(self, metric: str) -> float | None:
        v = self.metrics.get(metric)
        return None if v is None else float(v)


def check_sample(question: Any, answer: Any, contexts: Any, ids: Any = None, where: str = "sample") -> Sample:
    """A :class:`Sample` from a tool's fields, or an error naming the field and what it should be."""
    if not isinstance(question, str) or not question.strip():
        raise EvalkitError(f"{where}: the question must be a non-empty string, got {_short(question)}")
    if answer is None:
        answer = ""
    if not isinstance(answer, str):
        raise EvalkitError(f"{where}: the answer must be a string, got {_short(answer)}")
    if hasattr(contexts, "tolist"):
        contexts = contexts.tolist()
    if not isinstance(contexts, (list, tuple)) or not all(isinstance(c, str) for c in contexts):
        raise EvalkitError(f"{where}: the contexts must be a list of passage texts, got {_short(contexts)}")
    if ids is not None:
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        ids = [str(i) for i in ids] if isinstance(ids, (list, tuple)) else ids
        if not isinstance(ids, list) or len(ids) != len(contexts):
            raise EvalkitError(f"{where}: give one document id per context ({len(contexts)} contexts, ids "
                               f"{_short(ids)}), or none")
    return Sample(question, answer, list(contexts), ids)


class SampleScorer:
    """Scores samples one by one as ``evalkit score --answers`` scores rows (module docstring)."""

    def __init__(self, judge: str = "offline", judge_options: dict[str, Any] | None = None,
                 cache_root: Path | None = None) -> None:
        self.cache_root = cache_root or default_cache_root()
        self.judge = make_judge(judge, cache_root=self.cache_root, **(judge_options or {}))

    def score(self, sample: Sample) -> Verdicts:
        """The sample's metrics and verdicts, judged against its contexts only."""
        result = self.result(sample)
        generation = result.generation or {}
        judgement = generation.get("judgement") or {}
        return Verdicts(metrics=dict(result.metrics), claims=list(judgement.get("claims") or []),
                        error=judgement.get("error"), answered=bool(generation.get("answered")))

    def result(self, sample: Sample) -> QueryResult:
        """The full per-query record ``evalkit score`` writes for this sample."""
        row = AnswerRow(line=1, id=None, question=sample.question, answer=sample.answer,
                        contexts=[(None, t) for t in sample.contexts],
                        retrieved=None if sample.context_ids is None else [(d, 0.0) for d in sample.context_ids])
        file = AnswersFile(label=SOURCE_LABEL, path=Path(SOURCE_LABEL), sha256="", columns={}, rows=[row])
        return score_answers(file, "sample", judge=self.judge, cache_root=self.cache_root).results[0]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
