"""The model-free parts of the ``nli`` judge: which output is which label, evidence windows, the verdict rule.

What it is for: :mod:`evalkit.judges.nli` runs a sequence-classification model from a
local folder on (evidence window, claim) pairs; everything that turns the folder's
``config.json`` into label positions, evidence into windows, and per-window
probabilities into a :class:`~evalkit.judges.base.ClaimVerdict` lives here, as pure
functions that tests can check without a model.

Three kinds of model (:data:`KINDS`), told apart by ``config.json`` (``kind`` overrides):

| kind | outputs | the probability used |
|---|---|---|
| ``three_way`` (MNLI-style) | 3+ logits | softmax: entailment, contradiction (labels from ``id2label``) |
| ``binary`` (MiniCheck-style) | 2 logits | softmax: the "supported" label |
| ``score`` (HHEM-style) | 1 logit, or the model's own ``predict()`` | sigmoid of the logit: a consistency score |

Verdict rule, per claim, over every window of every passage (ties: the first window in
evidence order):

- ``three_way``: let E be the window with the highest entailment probability and C the one
  with the highest contradiction probability. ``unsupported`` when C's contradiction is at
  least ``contradiction_threshold`` and higher than E's entailment (the more confident
  window decides); else ``supported`` when E's entailment is at least
  ``entailment_threshold``; else ``unverified`` (neither entailed nor contradicted).
- ``binary`` / ``score``: let S be the window with the highest probability p. ``supported``
  when p >= ``support_threshold``; ``unverified`` otherwise. A binary checker cannot tell
  "contradicted" from "not stated", so a low p is ``unsupported`` only when the user says
  so (``binary_low_is_unsupported: true``) and p <= ``low_threshold``.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.judges.base import ClaimVerdict, JudgeSetupError
from evalkit.text.sentences import split_sentences

__all__ = ["KINDS", "Labels", "Scores", "Thresholds", "Window", "decide", "evidence_windows", "read_labels"]

KINDS = ("three_way", "binary", "score")

_ENTAIL = {"entailment", "entailed", "entails", "entail"}
_CONTRA = {"contradiction", "contradicted", "contradicts", "contradict"}
_NEUTRAL = {"neutral"}
_SUPPORTED = {"supported", "support", "entailment", "entailed", "consistent", "factual", "faithful", "grounded",
              "true", "yes"}
_UNSUPPORTED = {"unsupported", "not_supported", "not_entailment", "non_entailment", "not_entailed",
                "inconsistent", "hallucinated", "hallucination", "unfaithful", "false", "no"}
_GENERIC = re.compile(r"^label_?\d+$")


def _norm(label: str) -> str:
    return re.sub(r"[\s\-]+", "_", str(label).strip().casefold())


@dataclass(frozen=True)
class Labels:
    """Where each probability sits in the model's output, and what kind of model it is."""

    kind: str
    n_outputs: int
    entailment: int | None = None     # three_way
    contradiction: int | None = None  # three_way
    supported: int | None = None      # binary

    def describe(self) -> str:
        """A short stable text for the judge's identity (``three_way:e0c2``, ``binary:s1``, ``score``)."""
        if self.kind == "three_way":
            return f"three_way:e{self.entailment}c{self.contradiction}"
        if self.kind == "binary":
            return f"binary:s{self.supported}"
        return "score"


def _id2label(config: Mapping[str, Any]) -> dict[int, str]:
    raw = config.get("id2label") or {}
    try:
        return {int(k): str(v) for k, v in raw.items()}
    except (TypeError, ValueError, AttributeError):
        return {}


def _n_outputs(config: Mapping[str, Any]) -> int:
    names = _id2label(config)
    if names:
        return len(names)
    return int(config.get("num_labels") or 2)  # transformers' default when config.json names none


def _find(names: dict[int, str], wanted: set[str]) -> int | None:
    hits = [i for i, name in sorted(names.items()) if _norm(name) in wanted]
    return hits[0] if len(hits) == 1 else None


def _explicit(labels: Mapping[str, Any], names: dict[int, str], n: int, where: str) -> dict[str, int]:
    """The ``labels`` option: {role: output index or label name} -> {role: index}, checked."""
    out: dict[str, int] = {}
    by_name = {_norm(v): k for k, v in names.items()}
    for role, value in labels.items():
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise JudgeSetupError(f"{where}: option labels.{role} must be an output index or a label name; "
                                  f"got {value!r}")
        index = value if isinstance(value, int) else by_name.get(_norm(value))
        if index is None and isinstance(value, str) and value.strip().isdigit():
            index = int(value)
        if index is None or not 0 <= index < n:
            raise JudgeSetupError(f"{where}: option labels.{role} = {value!r} is not one of the model's {n} outputs "
                                  f"(id2label: {names or 'none'})")
        out[_norm(role)] = index
    if len(set(out.values())) != len(out):
        raise JudgeSetupError(f"{where}: option labels gives two roles the same output: {dict(labels)}")
    return out


def read_labels(config: Mapping[str, Any], *, kind: str | None = None, labels: Mapping[str, Any] | None = None,
                where: str = "NLI model", has_predict: bool = False) -> Labels:
    """The kind and label positions of a model from its ``config.json`` (as a dict).

    ``kind`` forces the kind; ``labels`` maps roles (``entailment``, ``contradiction``,
    ``neutral``, ``supported``) to output indexes or label names, for folders whose
    ``id2label`` says only ``LABEL_0``, ``LABEL_1``... ``has_predict``: the model (its own
    code) has a ``predict()`` giving one score per pair. ``where`` names the folder in errors.
    """
    names, n = _id2label(config), _n_outputs(config)
    if kind is None:
        kind = "score" if has_predict or n == 1 else "binary" if n == 2 else "three_way"
    if kind not in KINDS:
        raise JudgeSetupError(f"{where}: unknown kind '{kind}'; valid: {', '.join(KINDS)}")
    given = _explicit(labels or {}, names, n, where)
    roles = {"three_way": {"entailment", "contradiction", "neutral"}, "binary": {"supported"}, "score": set()}[kind]
    if set(given) - roles:
        raise JudgeSetupError(f"{where}: option labels names {', '.join(sorted(set(given) - roles))}, which a "
                              f"{kind} model has not; valid: {', '.join(sorted(roles)) or 'none'}")
    if kind == "score":
        if n != 1 and not has_predict:
            raise JudgeSetupError(f"{where}: kind 'score' needs a model with one output (num_labels 1) or its own "
                                  f"predict(); this one has {n} outputs: use kind 'binary' or 'three_way'")
        return Labels("score", n)
    if kind == "binary":
        if n != 2:
            raise JudgeSetupError(f"{where}: kind 'binary' needs 2 outputs; this model has {n}")
        return Labels("binary", 2, supported=_binary_supported(names, given, where))
    if n < 3:
        raise JudgeSetupError(f"{where}: kind 'three_way' needs 3 outputs (entailment, neutral, contradiction); "
                              f"this model has {n}")
    entail = given.get("entailment", _find(names, _ENTAIL))
    contra = given.get("contradiction", _find(names, _CONTRA))
    if entail is None or contra is None or entail == contra:
        raise JudgeSetupError(
            f"{where}: cannot tell which output is entailment and which contradiction from config.json id2label "
            f"({names or 'none'}); name them with the option labels, e.g. "
            "{entailment: 0, neutral: 1, contradiction: 2} (the model card says the order)")
    return Labels("three_way", n, entailment=entail, contradiction=contra)


def _binary_supported(names: dict[int, str], given: dict[str, int], where: str) -> int:
    if "supported" in given:
        return given["supported"]
    yes, no = _find(names, _SUPPORTED), _find(names, _UNSUPPORTED)
    if yes is not None:
        return yes
    if no is not None:
        return 1 - no
    if not names or all(_GENERIC.match(_norm(v)) for v in names.values()):
        return 1  # LABEL_0 / LABEL_1: the MiniCheck convention, 1 = supported
    raise JudgeSetupError(f"{where}: cannot tell which of the labels {names} means 'supported'; name it with the "
                          "option labels, e.g. {supported: 1}")


@dataclass(frozen=True)
class Window:
    """Consecutive sentences ``first``..``last`` (1-based) of one evidence passage: one NLI premise."""

    passage_id: str
    first: int
    last: int
    text: str

    def where(self) -> str:
        """``doc-3 sentence 2`` or ``doc-3 sentences 2-4``."""
        if self.first == self.last:
            return f"{self.passage_id} sentence {self.first}"
        return f"{self.passage_id} sentences {self.first}-{self.last}"


def evidence_windows(evidence: Sequence[tuple[str, str]], size: int = 3, stride: int = 2) -> list[Window]:
    """Windows of up to ``size`` sentences of each passage, starting every ``stride`` sentences.

    Sentences are those of :func:`evalkit.text.sentences.split_sentences` (Chinese and
    English, one per line of a list). A passage of at most ``size`` sentences is one window;
    the last window of a longer one ends at its last sentence, so every sentence is in a
    window. ``stride`` must be between 1 and ``size`` (a larger one would skip sentences).
    """
    if size < 1 or not 1 <= stride <= size:
        raise JudgeSetupError(f"NLI windows: need window_sentences >= 1 and 1 <= window_stride <= window_sentences; "
                              f"got {size} and {stride}")
    out: list[Window] = []
    for pid, text in evidence:
        sents = split_sentences(str(text or ""))
        if not sents:
            continue
        starts = list(range(0, max(1, len(sents) - size + 1), stride))
        if starts[-1] + size < len(sents):
            starts.append(len(sents) - size)
        for s in starts:
            part = sents[s:s + size]
            out.append(Window(str(pid), s + 1, s + len(part), " ".join(part)))
    return out


@dataclass(frozen=True)
class Scores:
    """One window's probabilities: ``entailment`` (or the supported probability / consistency
    score for binary and score models) and ``contradiction`` (three-way models only)."""

    entailment: float
    contradiction: float | None = None


@dataclass(frozen=True)
class Thresholds:
    """Where probabilities become verdicts (see the module docstring)."""

    entailment: float = 0.5
    contradiction: float = 0.5
    support: float = 0.5
    low: float = 0.5
    low_is_unsupported: bool = False

    def describe(self) -> str:
        return (f"e{self.entailment:g}/c{self.contradiction:g}/s{self.support:g}/l{self.low:g}"
                f"{'/low=unsupported' if self.low_is_unsupported else ''}")


_SCORE_NAME = {"binary": "supported probability", "score": "consistency score"}


def _best(values: Sequence[float]) -> int:
    """Index of the highest value; the first one on ties."""
    return max(range(len(values)), key=lambda i: (values[i], -i))


def decide(claim: str, windows: Sequence[Window], scores: Sequence[Scores], kind: str,
           t: Thresholds) -> ClaimVerdict:
    """The verdict on ``claim`` from its ``scores`` against each of ``windows`` (same order)."""
    if not windows:
        return ClaimVerdict(claim, "unverified", "no evidence text to check the claim against")
    if kind == "three_way":
        return _three_way(claim, windows, scores, t)
    name = _SCORE_NAME[kind]
    i = _best([s.entailment for s in scores])
    p, w = scores[i].entailment, windows[i]
    at: dict[str, Any] = {"evidence_id": w.passage_id, "evidence_ids": [w.passage_id]}
    if p >= t.support:
        return ClaimVerdict(claim, "supported", f"{name} {p:.2f} in {w.where()}", **at)
    if p <= t.low and t.low_is_unsupported:
        return ClaimVerdict(claim, "unsupported", f"{name} {p:.2f} at best (in {w.where()}), at or below "
                            f"{t.low:g}; binary_low_is_unsupported is on", **at)
    if p <= t.low:
        return ClaimVerdict(claim, "unverified", f"{name} {p:.2f} at best (in {w.where()}): not stated in the "
                            "evidence, or contradicted (this kind of model cannot tell which)", **at)
    return ClaimVerdict(claim, "unverified", f"{name} {p:.2f} at best (in {w.where()}), between {t.low:g} and "
                        f"{t.support:g}", **at)


def _three_way(claim: str, windows: Sequence[Window], scores: Sequence[Scores], t: Thresholds) -> ClaimVerdict:
    ie = _best([s.entailment for s in scores])
    ic = _best([s.contradiction or 0.0 for s in scores])
    e, we = scores[ie].entailment, windows[ie]
    c, wc = scores[ic].contradiction or 0.0, windows[ic]
    if c >= t.contradiction and c > e:
        return ClaimVerdict(claim, "unsupported", f"contradiction {c:.2f} in {wc.where()} (best entailment {e:.2f} "
                            f"in {we.where()})", evidence_id=wc.passage_id, evidence_ids=[wc.passage_id])
    if e >= t.entailment:
        return ClaimVerdict(claim, "supported", f"entailment {e:.2f} in {we.where()}", evidence_id=we.passage_id,
                            evidence_ids=[we.passage_id])
    return ClaimVerdict(claim, "unverified", f"neither entailed nor contradicted: best entailment {e:.2f} in "
                        f"{we.where()}, best contradiction {c:.2f} in {wc.where()}", evidence_id=we.passage_id)
