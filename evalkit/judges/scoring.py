"""Measuring a judge on labelled cases: metrics, and grouped cross-validation of thresholds.

What it is for: ``benchmarks/judges.py`` and the regression test in ``tests/judges/``
report the same numbers the same way. A *case* is a question, evidence passages, an
answer and a label (``supported`` or ``unsupported``, with the planted ``error_type``).
The judge's answer-level call is "unsupported" when any claim is unsupported; claims it
calls ``not_checkable`` are counted separately, never as supported or unsupported.

Metrics (the positive class is "unsupported"):

- recall = TP / (TP + FN); per error type, the recall on that type's cases;
- false-alarm rate = FP / (FP + TN), on the supported answers;
- precision = TP / (TP + FP);
- balanced accuracy = (recall + (1 - false-alarm rate)) / 2.

Cross-validation: cases are grouped by scenario (a supported answer and its planted-error
twin share evidence and a group), groups are split into ``k`` folds with a fixed seed,
thresholds are chosen on the other folds, and each case is judged with thresholds it
never helped choose. The out-of-fold numbers are the honest estimate.
"""
from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

from evalkit.errors import LocatedError
from evalkit.judges.base import Judge, JudgeResult
from evalkit.judges.offline import Thresholds

__all__ = [
    "ERROR_TYPES",
    "THRESHOLD_GRID",
    "JudgeCase",
    "Metrics",
    "Prediction",
    "cross_validate",
    "fit_thresholds",
    "load_cases",
    "metrics",
    "predict",
    "report_rows",
]

ERROR_TYPES = ("changed_number", "changed_date", "entity_absent", "entity_present", "negation", "extra_sentence")


@dataclass(frozen=True)
class JudgeCase:
    """One labelled judge case (a line of ``benchmarks/data/judge_cases.jsonl``).

    ``kind`` stratifies cases beyond the error type (e.g. ``multi_doc`` for an answer that
    combines documents, ``rescaled`` for a correct answer that rewrites a number's scale,
    or the eval-set question type); ``group`` keeps a scenario's cases in one CV fold.
    """

    id: str
    lang: str
    question: str
    evidence: tuple[tuple[str, str], ...]
    answer: str
    label: str
    error_type: str | None = None
    kind: str | None = None
    scenario: str | None = None

    @property
    def group(self) -> str:
        """The scenario this case belongs to (``en-001-s`` and ``en-001-u`` share ``en-001``)."""
        return self.scenario or self.id.rsplit("-", 1)[0]

    @classmethod
    def from_dict(cls, d: dict[str, Any], texts: dict[str, str] | None = None) -> JudgeCase:
        """One case; an evidence entry without ``text`` is a document id looked up in ``texts``."""
        if d.get("label") not in ("supported", "unsupported"):
            raise ValueError(f"case {d.get('id')}: label must be 'supported' or 'unsupported'")
        if d.get("error_type") not in (None, *ERROR_TYPES):
            raise ValueError(f"case {d.get('id')}: unknown error_type '{d.get('error_type')}'")
        if (d["label"] == "supported") != (d.get("error_type") is None):
            raise ValueError(f"case {d.get('id')}: a supported case has no error_type, an unsupported one has one")
        ev = []
        for e in d["evidence"]:
            if "text" in e:
                ev.append((str(e["id"]), str(e["text"])))
            elif texts is not None and e["id"] in texts:
                ev.append((str(e["id"]), texts[e["id"]]))
            else:
                raise ValueError(f"case {d.get('id')}: evidence '{e['id']}' has no text and is not in the corpus")
        return cls(d["id"], d["lang"], d["question"], tuple(ev), d["answer"], d["label"], d.get("error_type"),
                   d.get("kind"), d.get("scenario"))


def load_cases(path: str | Path, corpus: str | Path | None = None) -> list[JudgeCase]:
    """Read labelled cases from a JSON Lines file; ``corpus`` (a corpus JSONL) resolves evidence
    given by document id only. A bad line raises ``LocatedError`` naming the file and line."""
    texts = None
    if corpus is not None:
        with open(corpus, encoding="utf-8") as f:
            texts = {d["id"]: d["text"] for d in map(json.loads, filter(str.strip, f))}
    out = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                out.append(JudgeCase.from_dict(json.loads(line), texts))
            except (ValueError, KeyError, TypeError) as exc:
                raise LocatedError(str(path), "", str(exc).strip("'\""), line=lineno) from exc
    return out


@dataclass
class Prediction:
    """A judge's result on one case, with the time it took."""

    case: JudgeCase
    result: JudgeResult
    seconds: float = 0.0

    @property
    def flagged(self) -> bool | None:
        return self.result.unsupported


def predict(judge: Judge, cases: Iterable[JudgeCase]) -> list[Prediction]:
    """Run ``judge`` over ``cases`` (timed per case)."""
    out = []
    for c in cases:
        t0 = time.perf_counter()
        r = judge.judge(c.question, c.answer, c.evidence)
        out.append(Prediction(c, r, time.perf_counter() - t0))
    return out


@dataclass
class Metrics:
    """Answer-level metrics of one slice of cases (see the module docstring)."""

    n: int = 0
    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0
    errors: int = 0            # judge failures (excluded from the counts above)
    not_checkable: int = 0     # claims judged not_checkable
    all_not_checkable: int = 0  # answers with no checkable claim at all
    seconds: float = 0.0

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def false_alarm(self) -> float | None:
        return self.fp / (self.fp + self.tn) if self.fp + self.tn else None

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def balanced_accuracy(self) -> float | None:
        if self.recall is None or self.false_alarm is None:
            return None
        return (self.recall + 1 - self.false_alarm) / 2

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "balanced_accuracy": self.balanced_accuracy, "precision": self.precision,
                "recall": self.recall, "false_alarm": self.false_alarm, "errors": self.errors,
                "not_checkable_claims": self.not_checkable, "all_not_checkable": self.all_not_checkable}


def metrics(preds: Iterable[Prediction]) -> Metrics:
    """Count TP/FP/TN/FN, failures and not-checkable claims over predictions."""
    m = Metrics()
    for p in preds:
        m.n += 1
        m.seconds += p.seconds
        if p.result.error is not None:
            m.errors += 1
            continue
        m.not_checkable += p.result.n_not_checkable
        m.all_not_checkable += int(bool(p.result.claims) and p.result.n_checkable == 0)
        pos, flag = p.case.label == "unsupported", bool(p.flagged)
        m.tp += pos and flag
        m.fn += pos and not flag
        m.fp += (not pos) and flag
        m.tn += (not pos) and not flag
    return m


def report_rows(preds: Sequence[Prediction]) -> dict[str, Metrics]:
    """Metrics overall, per language, per kind (its supported and unsupported cases) and per
    error type (an error type's slice is its own cases plus all supported cases of the same
    languages, so its false alarms are shared)."""
    rows = {"overall": metrics(preds)}
    if any(p.case.error_type == "entity_present" for p in preds):  # the known blind spot, left out
        rows["overall without entity_present"] = metrics(p for p in preds if p.case.error_type != "entity_present")
    for lang in sorted({p.case.lang for p in preds}):
        rows[f"lang={lang}"] = metrics(p for p in preds if p.case.lang == lang)
    for kind in sorted({p.case.kind for p in preds if p.case.kind}):
        rows[f"kind={kind}"] = metrics(p for p in preds if p.case.kind == kind)
    for et in ERROR_TYPES:
        sub = [p for p in preds if p.case.error_type == et]
        if sub:
            rows[f"type={et}"] = metrics(sub + [p for p in preds if p.case.label == "supported"])
            for lang in sorted({p.case.lang for p in sub}):
                rows[f"type={et},lang={lang}"] = metrics(
                    [p for p in sub if p.case.lang == lang]
                    + [p for p in preds if p.case.label == "supported" and p.case.lang == lang])
    return rows


# --- cross-validation of the offline judge's thresholds -----------------------------------------
THRESHOLD_GRID: dict[str, tuple[Any, ...]] = {
    "min_coverage": (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8),
    "flip_overlap": (0.5, 0.6, 0.67, 0.75, 0.8, 0.9, 1.0, 1.01),
    "min_content": (1, 2, 3),
    "min_novel": (1, 2),
}


@dataclass
class CVResult:
    """Out-of-fold predictions and the thresholds each fold chose."""

    predictions: list[Prediction]
    fold_thresholds: list[dict[str, Any]] = field(default_factory=list)


def _score(m: Metrics, max_false_alarm: float) -> tuple[float, ...]:
    fa = m.false_alarm or 0.0
    return (float(fa <= max_false_alarm), m.balanced_accuracy or 0.0, -fa)


def fit_thresholds(signals: Sequence[tuple[JudgeCase, list[Any]]], decide: Callable[[Any, Any], Any],
                   make: Callable[..., Any], grid: dict[str, tuple[Any, ...]] = THRESHOLD_GRID,
                   max_false_alarm: float = 0.05) -> dict[str, Any]:
    """The grid point with the best balanced accuracy (false alarms <= ``max_false_alarm``
    first); among ties, the middle one of the tied points in grid order (a stable choice)."""
    names = list(grid)
    best: list[tuple[tuple[float, ...], dict[str, Any]]] = []
    for values in product(*(grid[n] for n in names)):
        params = dict(zip(names, values))
        th = make(**params)
        preds = [Prediction(c, JudgeResult([decide(s, th) for s in sig])) for c, sig in signals]
        sc = _score(metrics(preds), max_false_alarm)
        if not best or sc > best[0][0]:
            best = [(sc, params)]
        elif sc == best[0][0]:
            best.append((sc, params))
    return best[len(best) // 2][1]


def cross_validate(judge: Any, cases: Sequence[JudgeCase], folds: int = 5, seed: int = 13,
                   grid: dict[str, tuple[Any, ...]] = THRESHOLD_GRID) -> CVResult:
    """Grouped k-fold CV of an offline judge's thresholds (``judge.analyse`` / ``judge.decide``)."""
    signals = [(c, judge.analyse(c.question, c.answer, c.evidence)) for c in cases]
    groups = sorted({c.group for c in cases})
    random.Random(seed).shuffle(groups)
    fold_of = {g: i % folds for i, g in enumerate(groups)}
    out: list[Prediction] = []
    chosen = []
    for k in range(folds):
        train = [(c, s) for c, s in signals if fold_of[c.group] != k]
        params = fit_thresholds(train, judge.decide, Thresholds, grid)
        chosen.append(params)
        th = Thresholds(**params)
        out += [Prediction(c, JudgeResult([judge.decide(x, th) for x in s]))
                for c, s in signals if fold_of[c.group] == k]
    order = {c.id: i for i, c in enumerate(cases)}
    out.sort(key=lambda p: order[p.case.id])
    return CVResult(out, chosen)


def median_thresholds(chosen: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The per-parameter median of the folds' choices (a summary of how stable they are)."""
    return {k: statistics.median(c[k] for c in chosen) for k in chosen[0]} if chosen else {}
