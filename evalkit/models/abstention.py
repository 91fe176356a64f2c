"""A learned second stage for abstention: a logistic regression on the reply's multilingual-e5 vector.

What it is for: the rules of :mod:`evalkit.text.abstention` find a refusal by its wording. On
replies written blind in wordings nobody had shown them, they found 0.77, 0.60 and then 0.35 of
the refusals (benchmarks/abstention.py, splits 7-9): a phrase list fits what it was written
from. This stage reads a reply the rules call a plain answer (no refusal wording found) or a
partial answer (a refusal wording and a clause the rules read as content: often a referral or an
"it depends" they did not know), never a user pattern, an error message or an empty reply, and
calls it a refusal when the classifier's probability reaches the threshold shipped with its weights
for that finding (``threshold``; ``threshold_partial``, chosen apart: a partial answer is a refusal
*and* an answer, and may take more to overrule the answer). It never turns a refusal into an
answer, so it can only add abstentions: its cost is precision, which is why the thresholds are
chosen for a cross-validated precision of 0.98 (benchmarks/abstention_train.py).

On by default (:data:`DEFAULT`) wherever a reply is read: the ``generate`` and ``answer_each``
nodes, an external system's outputs, ``evalkit score``. Turn it off per eval set
(``eval_sets/NAME.abstention.yaml``: ``model: none``) or per ``generate`` node (``abstention:
{model: none}``). The finding's ``reason`` is then ``learned`` and ``matched`` gives the
probability. A reply that :func:`loops`, or that only :func:`quotes` the evidence shown with it,
is left to the rules. Weights are data
(``evalkit/models/data/abstention_<name>.json``), fitted by ``benchmarks/abstention_train.py`` on the labelled
splits the file names, with their sha256.
"""
from __future__ import annotations

import hashlib
import json
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.errors import did_you_mean
from evalkit.text.abstention import Abstention, detect_abstention

__all__ = ["DEFAULT", "EMBEDDER", "LEARNED", "OFF", "LearnedAbstention", "config_name", "detect", "embed", "identity",
           "learned", "loops", "quotes", "read_at", "resolve"]

EMBEDDER = "e5"
"""The embedder (``evalkit.models.embedders``) whose vectors the classifier reads."""

LEARNED: dict[str, str] = {"e5": "abstention_e5.json"}
"""The learned stages by the name configs give (``model: e5``), and their weights files."""

DEFAULT = "e5"
"""The stage read when no config names one."""

OFF = "none"
"""The name that turns the stage off (``model: none``; YAML's ``off`` and ``false`` mean the same)."""

LOOP_RATIO = 0.45
"""A reply of :data:`LOOP_MIN_BYTES` or more that zlib compresses below this share of its UTF-8 size loops."""

LOOP_MIN_BYTES = 150

_DATA = Path(__file__).parent / "data"


def embed(texts: list[str], embedder: str = EMBEDDER) -> np.ndarray:
    """The unit passage vectors of ``texts`` by ``embedder``, through the embedding cache (a reply read again, in
    this run or the next, is not encoded again; the vectors are the model's own either way)."""
    from evalkit.models.embedders import ModelSpec, cached_embedder  # pydantic: loaded when a reply is read

    return cached_embedder(ModelSpec.of(embedder)).encode_passages(list(texts))


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
    threshold_unanswered: float | None = None

    def threshold_for(self, reason: str, unanswered: bool = False) -> float | None:
        """The threshold for a reply the rules found ``reason`` (answer, partial); None when the stage does not read
        it. ``unanswered``: a plain answer that does not give what its question asks for
        (:func:`evalkit.text.asked_values.unanswered`), read at ``threshold_unanswered`` when that is lower."""
        if reason == "answer" and unanswered and self.threshold_unanswered is not None:
            return min(self.threshold, self.threshold_unanswered)
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
                         f"{', '.join(sorted(LEARNED))}, or {OFF} to turn the learned stage off")
    return name


def config_name(value: Any) -> str:
    """A config's ``model`` value as a stage name: one of :data:`LEARNED`, or :data:`OFF` for ``none``, ``off`` and
    ``false`` (YAML reads a bare ``off`` as False); else ValueError naming the choices."""
    if value is False or (isinstance(value, str) and value.strip().lower() in (OFF, "off", "false")):
        return OFF
    return check_name(value if isinstance(value, str) else repr(value))


def resolve(name: str | None) -> str | None:
    """The stage to read with a config's ``model`` (None: not set): :data:`DEFAULT` when unset, None when off."""
    if name is None:
        return DEFAULT
    return None if name == OFF else name


@cache
def learned(name: str) -> LearnedAbstention:
    """The stage ``name`` with its shipped weights."""
    data: dict[str, Any] = json.loads((_DATA / LEARNED[check_name(name)]).read_text(encoding="utf-8"))
    partial = data.get("threshold_partial")  # absent in a file fitted before partial answers were read
    unanswered = data.get("threshold_unanswered")  # absent in a file fitted before questions were read
    return LearnedAbstention(name, np.asarray(data["weights"], dtype=np.float64), float(data["bias"]),
                             float(data["threshold"]), str(data["embedder"]),
                             None if partial is None else float(partial),
                             None if unanswered is None else float(unanswered))


@cache
def identity() -> dict[str, str]:
    """Each learned stage's name and the sha256 of its weights file (12 hex digits): what a run's resume fingerprint
    records, so results read with other weights are never mixed into a resumed run."""
    return {name: hashlib.sha256((_DATA / file).read_bytes()).hexdigest()[:12] for name, file in sorted(LEARNED.items())}


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


_MARKER = re.compile(r"\[[^\[\]\n]{1,80}\]")
"""A citation marker (``[sales-007]``, ``[2]``): not part of the words a reply quotes."""

QUOTE_MIN_CHARS = 20
"""A reply shorter than this (markers and spaces aside) is never read as a quote: "No." is in any passage."""


def _flat(text: str) -> str:
    return " ".join(text.split()).casefold()


def quotes(answer: str, evidence: Sequence[str]) -> bool:
    """Whether every line of a reply, its citation markers removed, is a piece of one of the ``evidence`` texts
    shown with it (spaces and case aside): an extractive system's reply, such as a list of the passages' titles
    ("Q1 2025 Sales Report - North China [sales-007]"). Those are the documents' words, not the system's: the
    learned stage, fitted on replies systems wrote, does not read them (a passage title is no refusal in words the
    rules missed; a wrong one is the judge's to see)."""
    lines = [_flat(_MARKER.sub(" ", line)) for line in answer.splitlines()]
    lines = [line for line in lines if line]
    if not evidence or sum(len(line) for line in lines) < QUOTE_MIN_CHARS:
        return False
    shown = [_flat(text) for text in evidence]
    return all(any(line in text for text in shown) for line in lines)


def read_at(stage: LearnedAbstention, finding: Abstention, answer: str, *, evidence: Sequence[str] = (),
            question: str | None = None) -> float | None:
    """The threshold ``stage`` reads ``answer`` at, given the rules' ``finding`` (see :func:`detect`), or None where
    the finding stays the rules' own."""
    if finding.reason not in ("answer", "partial") or loops(answer) or quotes(answer, evidence):
        return None
    from evalkit.text.asked_values import unanswered as not_given  # the rules' regexes: loaded when a reply is read

    unanswered = finding.reason == "answer" and stage.threshold_unanswered is not None and not_given(question, answer)
    return stage.threshold_for(finding.reason, unanswered)


def detect(answer: str, *, model: str | None = None, finish_reason: str | None = None,
           extra_patterns: tuple[str, ...] | list[str] = (), not_patterns: tuple[str, ...] | list[str] = (),
           evidence: Sequence[str] = (), question: str | None = None) -> Abstention:
    """:func:`evalkit.text.abstention.detect_abstention`, then, with ``model`` (None or :data:`OFF`: the rules
    alone), the learned stage on a reply the rules call a plain or a partial answer (reason ``answer``,
    ``partial``), each at its own threshold, unless the reply :func:`loops` or :func:`quotes` the ``evidence``
    shown with it; every other finding is the rules' own. With the ``question``, a plain answer that does not give
    what it asks for (:func:`evalkit.text.asked_values.unanswered`: "How much can I borrow?" answered with a
    hotline's number, a ticket logged in reply to anything but whom to contact) is read at the stage's
    ``threshold_unanswered``."""
    finding = detect_abstention(answer, finish_reason=finish_reason, extra_patterns=extra_patterns,
                                not_patterns=not_patterns)
    if model in (None, OFF):
        return finding
    stage = learned(str(model))  # an unknown name is refused whatever the reply
    threshold = read_at(stage, finding, answer, evidence=evidence, question=question)
    if threshold is None:
        return finding
    p = probability(str(model), answer)
    if p >= threshold:
        why = ", not what its question asks for" if p < stage.threshold else ""
        return Abstention(True, "learned", f"{model} p={p:.3f} >= {threshold} ({finding.reason} by the rules{why})")
    return finding
