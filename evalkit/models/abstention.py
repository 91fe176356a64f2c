"""A learned second stage for abstention: a logistic regression on the reply's multilingual-e5 vector.

What it is for: the rules of :mod:`evalkit.text.abstention` find a refusal by its wording. On
replies written blind in wordings nobody had shown them, they found 0.77, 0.60 and then 0.35 of
the refusals (benchmarks/abstention.py, splits 7-9): a phrase list fits what it was written
from. This stage reads a reply the rules call a plain answer (no refusal wording found; not a
user pattern, a partial answer, an error message or an empty reply) and calls it a refusal when
the classifier's probability reaches the threshold shipped with its weights. It never turns a
refusal into an answer, so it can only add abstentions: its cost is precision, which is why the
threshold is chosen for a cross-validated precision of 0.98 (benchmarks/abstention_train.py).

Opt in per eval set (``eval_sets/NAME.abstention.yaml``: ``model: e5``) or per ``generate`` node
(``abstention: {model: e5}``). The finding's ``reason`` is then ``learned`` and ``matched`` gives
the probability. Weights are data (``evalkit/models/data/abstention_<name>.json``), fitted by
``benchmarks/abstention_train.py`` on the labelled splits the file names, with their sha256.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.errors import did_you_mean
from evalkit.text.abstention import Abstention, detect_abstention

__all__ = ["EMBEDDER", "LEARNED", "LearnedAbstention", "detect", "embed", "learned"]

EMBEDDER = "e5"
"""The embedder (``evalkit.models.embedders``) whose vectors the classifier reads."""

LEARNED: dict[str, str] = {"e5": "abstention_e5.json"}
"""The learned stages by the name configs give (``model: e5``), and their weights files."""

_DATA = Path(__file__).parent / "data"


def embed(texts: list[str], embedder: str = EMBEDDER) -> np.ndarray:
    """The unit passage vectors of ``texts`` by ``embedder`` (the process's shared model)."""
    from evalkit.models.embedders import ModelSpec, shared_embedder  # pydantic: loaded when a reply is read

    return shared_embedder(ModelSpec.of(embedder)).encode_passages(list(texts))


@dataclass(frozen=True)
class LearnedAbstention:
    """Weights of a fitted stage: ``P(abstained) = sigmoid(weights . vector + bias)``; abstained at ``threshold``."""

    name: str
    weights: np.ndarray
    bias: float
    threshold: float
    embedder: str

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
    return LearnedAbstention(name, np.asarray(data["weights"], dtype=np.float64), float(data["bias"]),
                             float(data["threshold"]), str(data["embedder"]))


@lru_cache(maxsize=65536)
def probability(name: str, text: str) -> float:
    """P(abstained) of one reply, memoised by content (a reply scored again costs nothing)."""
    return float(learned(name).probabilities([text])[0])


def detect(answer: str, *, model: str | None = None, finish_reason: str | None = None,
           extra_patterns: tuple[str, ...] | list[str] = (), not_patterns: tuple[str, ...] | list[str] = ()
           ) -> Abstention:
    """:func:`evalkit.text.abstention.detect_abstention`, then, with ``model``, the learned stage on a
    reply the rules call a plain answer (reason ``answer``); every other finding is the rules' own."""
    finding = detect_abstention(answer, finish_reason=finish_reason, extra_patterns=extra_patterns,
                                not_patterns=not_patterns)
    if model is None or finding.reason != "answer":
        return finding
    stage = learned(model)
    p = probability(model, answer)
    if p >= stage.threshold:
        return Abstention(True, "learned", f"{model} p={p:.3f} >= {stage.threshold}")
    return finding
