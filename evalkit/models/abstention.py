"""A learned second stage for abstention: a logistic regression on the reply's multilingual-e5 vector.

What it is for: the rules of :mod:`evalkit.text.abstention` find a refusal by its wording. On
replies written blind in wordings nobody had shown them, they found 0.77, 0.60 and then 0.35 of
the refusals (benchmarks/abstention.py, splits 7-9): a phrase list fits what it was written
from. This stage reads a reply the rules call a plain answer (no refusal wording found) or a
partial answer (a refusal wording and a clause the rules read as content: often a referral or an
"it depends" they did not know), never a user pattern, an error message or an empty reply, and
calls it a refusal when the classifier's probability reaches the threshold shipped with its weights
for that finding (``threshold``; ``threshold_partial``, higher: a partial answer is a refusal
*and* an answer, so it takes more to overrule the answer). It never turns a refusal into an
answer, so it can only add abstentions: its cost is precision, which is why the thresholds are
chosen for a cross-validated precision of 0.98 (benchmarks/abstention_train.py).

Opt in per eval set (``eval_sets/NAME.abstention.yaml``: ``model: e5``) or per ``generate`` node
(``abstention: {model: e5}``). The finding's ``reason`` is then ``learned`` and ``matched`` gives
the probability. A reply that :func:`loops` is left to the rules. Weights are data
(``evalkit/models/data/abstention_<name>.json``), fitted by ``benchmarks/abstention_train.py`` on the labelled
splits the file names, with their sha256.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.errors import did_you_mean
from evalkit.text.abstention import Abstention, detect_abstention

__all__ = ["EMBEDDER", "LEARNED", "LearnedAbstention", "detect", "embed", "learned", "loops"]

EMBEDDER = "e5"
"""The embedder (``evalkit.models.embedders``) whose vectors the classifier reads."""

LEARNED: dict[str, str] = {"e5": "abstention_e5.json"}
"""The learned stages by the name configs give (``model: e5``), and their weights files."""

LOOP_RATIO = 0.45
"""A reply of :data:`LOOP_MIN_BYTES` or more that zlib compresses below this share of its UTF-8 size loops."""

LOOP_MIN_BYTES = 150

_DATA = Path(__file__).parent / "data"


def embed(texts: list[str], embedder: str = EMBEDDER) -> np.ndarray:
    """The unit passage vectors of ``texts`` by ``embedder`` (the process's shared model)."""
    from evalkit.models.embedders import ModelSpec, shared_embedder  # pydantic: loaded when a reply is read

    return shared_embedder(ModelSpec.of(embedder)).encode_passages(list(texts))


@dataclass(frozen=True)
class LearnedAbstention:
    """Weights of a fitted stage: ``P(abstained) = sigmoid(weights . vector + bias)``; a plain answer is a refusal at
    ``threshold``, a partial answer at ``threshold_partial`` (None: never)."""

    name: str
    weights: np.ndarray
    bias: float
    threshold: float
    embedder: str
    threshold_partial: float | None = None

    def threshold_for(self, reason: str) -> float | None:
        """The threshold for a reply the rules found ``reason`` (answer, partial); None when the stage does not read it."""
        return {"answer": self.threshold, "partial": self.threshold_partial}.get(reason)

    def probabilities(self, texts: list[str]) -> np.ndarray:
        """P(abstained) of each reply."""
        if not texts:
            return np.zeros(0)
        z = embed(texts, self.embedder).astype(np.float64) @ self.weights + self.bias
        return 1.0 / (1.0 + np.exp(-z))


def check_name(name: str) -> str:
    """``name`` when it names a learned stage; else ValueError naming the choices (for config validation)."""
    if name not in LEARNED:
        raise ValueError(f"unknown abstention model '{name}'{did_you_mean(name, LEARNED)}; choices: "
                         f"{', '.join(sorted(LEARNED))}")
    return name


@cache
def learned(name: str) -> LearnedAbstention:
    """The stage ``name`` with its shipped weights."""
    data: dict[str, Any] = json.loads((_DATA / LEARNED[check_name(name)]).read_text(encoding="utf-8"))
    partial = data.get("threshold_partial")  # absent in a file fitted before partial answers were read
    return LearnedAbstention(name, np.asarray(data["weights"], dtype=np.float64), float(data["bias"]),
                             float(data["threshold"]), str(data["embedder"]),
                             None if partial is None else float(partial))


@lru_cache(maxsize=65536)
def probability(name: str, text: str) -> float:
    """P(abstained) of one reply, memoised by content (a reply scored again costs nothing)."""
    return float(learned(name).probabilities([text])[0])


def loops(answer: str) -> bool:
    """Whether a reply repeats itself as a broken generation does ("The answer is: [it-012] (score 0.840)" over
    and over): it compresses below :data:`LOOP_RATIO`. Natural replies of 150 bytes or more compress to 0.50 or
    more in every labelled set of benchmarks/data and tests/judges/data; loops to 0.06-0.40. The learned stage
    does not read such a reply: its vector is the loop's, and a loop is no refusal in words the rules missed
    (a loop that states a wrong value is a hallucination the judge should see)."""
    raw = answer.encode("utf-8")
    return len(raw) >= LOOP_MIN_BYTES and len(zlib.compress(raw, 9)) < LOOP_RATIO * len(raw)


def detect(answer: str, *, model: str | None = None, finish_reason: str | None = None,
           extra_patterns: tuple[str, ...] | list[str] = (), not_patterns: tuple[str, ...] | list[str] = ()
           ) -> Abstention:
    """:func:`evalkit.text.abstention.detect_abstention`, then, with ``model``, the learned stage on a
    reply the rules call a plain or a partial answer (reason ``answer``, ``partial``), each at its own
    threshold, unless the reply :func:`loops`; every other finding is the rules' own."""
    finding = detect_abstention(answer, finish_reason=finish_reason, extra_patterns=extra_patterns,
                                not_patterns=not_patterns)
    threshold = None if model is None else learned(model).threshold_for(finding.reason)
    if threshold is None or loops(answer):
        return finding
    p = probability(str(model), answer)
    if p >= threshold:
        return Abstention(True, "learned", f"{model} p={p:.3f} >= {threshold} ({finding.reason} by the rules)")
    return finding
