"""Calibrating the guard: a threshold on the top-1 rerank score, read from a finished run.

The rule is "abstain when the top-1 rerank score < t". A query is *positive* when it
should be abstained on:

* ``unanswerable`` (default): the question has no gold document;
* ``unanswerable-or-miss``: also answerable questions whose gold is not in the final
  top 5 (answering them would rest on wrong evidence).

For every candidate t (the midpoints between consecutive distinct scores, plus one
below and one above all of them) the counts give abstention precision (share of the
abstained that are positive), recall (share of positives abstained), the false positive
rate and F1; from them the ROC and precision-recall curves. Objectives:

* ``f1``: the t with the highest F1 (ties: the lowest t);
* ``precision --target P``: the highest abstention recall whose precision is still >= P,
  at the lowest t that reaches it (a bare "lowest t with precision >= P" is degenerate:
  it abstains on a single query);
* ``recall --target R``: the lowest t whose recall >= R.

The interval on t is a seeded stratified bootstrap (positives and negatives resampled
separately, so every resample has both): the objective is re-optimised on each resample.
The expected precision/recall at t are in-sample (t was chosen on these queries); the
out-of-bag estimate scores each resample's t on the queries that resample left out.
The relative rule (the guard's ``mode: relative``) is t = the P-th percentile of the
answerable queries' scores. Thresholds belong to the reranker that produced the scores:
each result names it (``rerank_model`` in the rerank node's trace).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalkit.analysis import figures as fig
from evalkit.analysis import stats
from evalkit.analysis.guard_check import Refusals, warning
from evalkit.analysis.tables import Column, Layout, TableData, is_nan, render, wrap
from evalkit.errors import EvalkitError
from evalkit.graph.events import events_of, first_write, wrote
from evalkit.graph.schema import GUARD_THRESHOLD, RERANK_MODEL, Role
from evalkit.records import QueryResult

POSITIVES = {
    "unanswerable": "unanswerable questions (no gold document)",
    "unanswerable-or-miss": "unanswerable questions, and answerable ones whose gold is not in the final top 5",
}
OBJECTIVES = ("f1", "precision", "recall")
TOP_K = 5


@dataclass
class Scores:
    """One variant's top-1 scores with labels; queries without a score (failed, no rerank) are counted out."""

    variant: str
    query_ids: list[str]
    scores: np.ndarray
    positive: np.ndarray
    answerable: np.ndarray
    gold_in_top5: np.ndarray
    excluded: int
    rerankers: list[str]
    current_threshold: float | None


def collect(results: Sequence[QueryResult], variant: str, positive: str = "unanswerable") -> Scores:
    """Top-1 scores and labels of one variant, sorted by query id (see the module docstring for ``positive``)."""
    if positive not in POSITIVES:
        raise EvalkitError(f"unknown positive definition '{positive}'; valid: {', '.join(POSITIVES)}")
    rows = sorted((r for r in results if r.rerank_top1 is not None and r.error is None), key=lambda r: r.query_id)
    if not rows:
        raise EvalkitError(f"variant '{variant}' has no top-1 rerank scores (no rerank node, or every query failed); "
                           "calibrate needs a variant with a rerank node")
    answerable = np.array([bool(r.gold_doc_ids) for r in rows])
    top5 = np.array([bool(set(r.gold_doc_ids) & {d["doc_id"] for d in r.reranked[:TOP_K]}) for r in rows])
    pos = ~answerable if positive == "unanswerable" else ~answerable | ~top5
    rerankers: list[str] = []
    current = None
    for r in rows:
        for e in events_of(r.trace, Role.RERANKER):
            model = wrote(e).get(RERANK_MODEL)
            if model and model not in rerankers:
                rerankers.append(model)
    threshold = first_write(rows, Role.GUARD, GUARD_THRESHOLD)
    current = None if threshold is None else float(threshold)
    return Scores(variant, [r.query_id for r in rows], np.array([r.rerank_top1 for r in rows], dtype=float), pos,
                  answerable, top5, len(results) - len(rows), rerankers or ["(not recorded)"], current)


def candidates(scores: np.ndarray) -> np.ndarray:
    """Thresholds between every two consecutive distinct scores, plus one below and one above all."""
    u = np.unique(scores)
    top = u[-1] + max(1e-6, abs(u[-1]) * 1e-6)
    return np.concatenate([[u[0]], (u[:-1] + u[1:]) / 2.0, [top]])


def curve(scores: np.ndarray, positive: np.ndarray, thresholds: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Counts and rates of "abstain when score < t" at each threshold (NaN precision when nothing is abstained)."""
    t = candidates(scores) if thresholds is None else np.asarray(thresholds, dtype=float)
    pos, neg = np.sort(scores[positive]), np.sort(scores[~positive])
    tp = np.searchsorted(pos, t, side="left").astype(float)
    fp = np.searchsorted(neg, t, side="left").astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), np.nan)
        recall = tp / len(pos) if len(pos) else np.full(len(t), np.nan)
        fpr = fp / len(neg) if len(neg) else np.full(len(t), np.nan)
        f1 = np.where(tp > 0, 2 * tp / (2 * tp + fp + (len(pos) - tp)), 0.0)
    return {"threshold": t, "tp": tp, "fp": fp, "precision": precision, "recall": recall, "fpr": fpr, "f1": f1}


def choose(c: dict[str, np.ndarray], objective: str, target: float | None = None) -> int | None:
    """Index of the threshold the objective picks, or None when no threshold meets the target."""
    if objective == "f1":
        return int(np.argmax(c["f1"]))  # first maximum = lowest t
    if target is None:
        raise EvalkitError(f"--objective {objective} needs --target (e.g. 0.9)")
    if objective == "precision":
        ok = np.flatnonzero((c["tp"] + c["fp"] > 0) & (np.nan_to_num(c["precision"], nan=-1.0) >= target - 1e-12))
        if not len(ok):
            return None
        best = c["recall"][ok].max()       # recall grows with t: the lowest t reaching the best feasible recall
        return int(ok[np.flatnonzero(c["recall"][ok] >= best - 1e-12)[0]])
    if objective == "recall":
        ok = np.flatnonzero(np.nan_to_num(c["recall"], nan=-1.0) >= target - 1e-12)
        return int(ok[0]) if len(ok) else None
    raise EvalkitError(f"unknown objective '{objective}'; valid: {', '.join(OBJECTIVES)}")


def roc_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve of "lower score = positive" (Mann-Whitney, ties count 1/2)."""
    pos, neg = scores[positive], scores[~positive]
    if not len(pos) or not len(neg):
        return float("nan")
    return float(((pos[:, None] < neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum())
                 / (len(pos) * len(neg)))


def _at(scores: np.ndarray, positive: np.ndarray, t: float) -> dict[str, float]:
    c = curve(scores, positive, np.array([t]))
    return {"threshold": float(t), "abstained": int(c["tp"][0] + c["fp"][0]), "precision": float(c["precision"][0]),
            "recall": float(c["recall"][0]), "fpr": float(c["fpr"][0]), "f1": float(c["f1"][0])}


@dataclass
class Calibration:
    """The recommendation for one variant, with its curves and uncertainty."""

    variant: str
    reranker: list[str]
    positive: str
    objective: str
    target: float | None
    n: int
    n_positive: int
    excluded: int
    score_range: tuple[float, float, float]
    auc: float
    chosen: dict[str, float] | None
    threshold_ci: tuple[float, float] | None
    precision_ci: tuple[float, float] | None
    recall_ci: tuple[float, float] | None
    out_of_bag: dict[str, float]
    undefined_resamples: int
    relative: dict[str, float]
    current: dict[str, float] | None
    curve: dict[str, list[float]] = field(repr=False, default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # rules refusing more answerable than unanswerable (guard_check)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


def calibrate(s: Scores, objective: str = "f1", target: float | None = None, positive: str = "unanswerable",
              percentile: float = 10.0, n_resamples: int = 2000, confidence: float = 0.95,
              seed: int = 0) -> Calibration:
    """Recommend a threshold for one variant's scores (see the module docstring)."""
    n_pos = int(s.positive.sum())
    if n_pos == 0 or n_pos == len(s.scores):
        what = "no positive" if n_pos == 0 else "no negative"
        raise EvalkitError(f"variant '{s.variant}': {what} query under '{positive}' ({POSITIVES[positive]}); "
                           "a threshold needs both kinds (try --positive unanswerable-or-miss, or an eval set with "
                           "unanswerable questions)")
    c = curve(s.scores, s.positive)
    idx = choose(c, objective, target)
    chosen = None if idx is None else _at(s.scores, s.positive, float(c["threshold"][idx]))
    rng = np.random.default_rng(stats.derive_seed(seed, "calibrate", s.variant, objective, positive))
    pos_i, neg_i = np.flatnonzero(s.positive), np.flatnonzero(~s.positive)
    ts, precs, recs, oob_p, oob_r = [], [], [], [], []
    undefined = 0
    for _ in range(n_resamples):
        sample = np.concatenate([rng.choice(pos_i, len(pos_i)), rng.choice(neg_i, len(neg_i))])
        bs, by = s.scores[sample], s.positive[sample]
        bc = curve(bs, by)
        j = choose(bc, objective, target)
        if j is None:
            undefined += 1
            continue
        tb = float(bc["threshold"][j])
        ts.append(tb)
        if chosen is not None:
            at = _at(bs, by, chosen["threshold"])
            precs.append(at["precision"])
            recs.append(at["recall"])
        out = np.setdiff1d(np.arange(len(s.scores)), sample)
        if len(out) and s.positive[out].any():
            at = _at(s.scores[out], s.positive[out], tb)
            oob_r.append(at["recall"])
            if at["abstained"]:
                oob_p.append(at["precision"])

    def ci(xs: list[float]) -> tuple[float, float] | None:
        defined = [x for x in xs if not is_nan(x)]
        return stats.percentile_interval(defined, confidence) if defined else None

    t_rel = float(np.percentile(s.scores[s.answerable], percentile)) if s.answerable.any() else float("nan")
    return Calibration(
        variant=s.variant, reranker=s.rerankers, positive=positive, objective=objective, target=target,
        n=len(s.scores), n_positive=n_pos, excluded=s.excluded,
        score_range=(float(s.scores.min()), float(np.median(s.scores)), float(s.scores.max())),
        auc=roc_auc(s.scores, s.positive), chosen=chosen, threshold_ci=ci(ts), precision_ci=ci(precs),
        recall_ci=ci(recs), undefined_resamples=undefined,
        out_of_bag={"precision": float(np.mean(oob_p)) if oob_p else float("nan"),
                    "recall": float(np.mean(oob_r)) if oob_r else float("nan")},
        relative={"percentile": percentile, **_at(s.scores, s.positive, t_rel)},
        current=None if s.current_threshold is None else _at(s.scores, s.positive, s.current_threshold),
        curve={k: [float(x) for x in v] for k, v in c.items()},
        settings={"n_resamples": n_resamples, "confidence": confidence, "seed": seed},
        warnings=inverted_rules(s, {"the recommended t": None if chosen is None else chosen["threshold"],
                                    f"the relative rule (P{percentile:g})": t_rel,
                                    "the current guard": s.current_threshold}))


def refusals(s: Scores, t: float) -> Refusals:
    """Answerable and unanswerable questions "abstain when score < t" refuses."""
    refused = s.scores < t
    return Refusals(int((refused & s.answerable).sum()), int(s.answerable.sum()),
                    int((refused & ~s.answerable).sum()), int((~s.answerable).sum()))


def inverted_rules(s: Scores, rules: dict[str, float | None]) -> list[str]:
    """A warning for each rule (label -> t) that refuses a larger share of answerable than unanswerable questions."""
    out = []
    for label, t in rules.items():
        if t is None or is_nan(t):
            continue
        msg = warning(f"{label} (t = {t:.4f})", refusals(s, t),
                      "a guard there stops answerable questions more readily than unanswerable ones: lower t, "
                      "or take another rule of the table")
        if msg:
            out.append(msg)
    return out


def _rule(label: str, at: dict[str, float] | None) -> list[str]:
    if at is None:
        return [label, "-", "-", "-", "-", "-"]
    return [label, f"{at['threshold']:.4f}", str(at["abstained"]), _f(at["precision"]), _f(at["recall"]), _f(at["f1"])]


def threshold_table(c: Calibration) -> TableData:
    """The thresholds of one variant: recommended, relative rule, current guard (rows)."""
    rows = [] if c.chosen is None else [_rule("recommended", c.chosen)]
    rows.append(_rule(f"relative rule (P{c.relative['percentile']:g} of answerable scores)", c.relative))
    if c.current is not None:
        rows.append(_rule("current guard", c.current))
    cols = [Column("rule", numeric=False), Column("t"), Column("abstains on"), Column("precision"), Column("recall"),
            Column("F1")]
    return TableData("", cols, rows)


def _f(x: float) -> str:
    return "n/a" if is_nan(x) else f"{x:.3f}"


def format_calibration(cals: Sequence[Calibration], layout: Layout | None = None) -> str:
    """Plain-text report: one block per variant (prose and a threshold table), then a note when rerankers differ."""
    layout = layout or Layout()
    width = 100_000 if layout.wide else layout.width
    out: list[str] = []
    for c in cals:
        goal = {"f1": "maximise F1 of abstention",
                "precision": f"the highest abstention recall with precision >= {c.target} (lowest such t)",
                "recall": f"the lowest t whose recall >= {c.target}"}[c.objective]
        lo, mid, hi = c.score_range
        lines = [f"variant {c.variant}", f"  reranker: {', '.join(c.reranker)}",
                 (f"  rule: abstain when top-1 rerank score < t; positive (should abstain) = "
                  f"{POSITIVES[c.positive]} [--positive {c.positive}]"),
                 (f"  queries: {c.n} with a score ({c.n_positive} positive), {c.excluded} without a score (failed, "
                  f"or nothing to rerank); scores min {lo:.4f} median {mid:.4f} max {hi:.4f}; ROC AUC {_f(c.auc)}"),
                 f"  objective: {goal}"]
        if c.chosen is None:
            best = max((p for p in c.curve.get(c.objective, []) if not is_nan(p)), default=float("nan"))
            lines.append(f"  no threshold reaches {c.objective} >= {c.target} on this data (the best any t reaches: "
                         f"{_f(best)})")
        else:
            level = f"{c.settings['confidence']:.0%}"
            t_lo, t_hi = c.threshold_ci or (float("nan"), float("nan"))
            lines.append(f"  recommended t = {c.chosen['threshold']:.4f}; {level} bootstrap CI of t: [{t_lo:.4f}, "
                         f"{t_hi:.4f}] ({c.settings['n_resamples']} stratified resamples, seed {c.settings['seed']}"
                         + (f"; target unreachable in {c.undefined_resamples}" if c.undefined_resamples else "") + ")")
            p_ci, r_ci = c.precision_ci, c.recall_ci
            if p_ci and r_ci:
                lines.append(f"  expected at t (in-sample): precision {_f(c.chosen['precision'])} [{p_ci[0]:.3f}, "
                             f"{p_ci[1]:.3f}], recall {_f(c.chosen['recall'])} [{r_ci[0]:.3f}, {r_ci[1]:.3f}]; "
                             f"out-of-bag: precision {_f(c.out_of_bag['precision'])}, "
                             f"recall {_f(c.out_of_bag['recall'])}")
        out += [wrap(line, width, "      ") for line in lines]
        out += [render([threshold_table(c)], layout)]
        out += [wrap("  " + w, width, "      ") for w in c.warnings] + [""]
    models = {", ".join(c.reranker) for c in cals}
    if len(models) > 1:
        out.append(wrap("rerankers differ: " + "; ".join(
            f"{c.variant} ({', '.join(c.reranker)}): t = {c.chosen['threshold']:.4f}" if c.chosen else
            f"{c.variant} ({', '.join(c.reranker)}): no t" for c in cals), width))
        out.append(wrap("their scores live on different scales: each threshold is valid for its own reranker only; "
                        "recalibrate whenever the reranker changes (or use the relative rule)", width))
    return "\n".join(out).rstrip()


def figures(c: Calibration, s: Scores) -> dict[str, bytes]:
    """The calibration figures of one variant: overlaid histograms, ROC and precision-recall curves."""
    lines = [(f"recommended t ({c.objective})", c.chosen["threshold"])] if c.chosen else []
    if not is_nan(c.relative["threshold"]):
        lines.append((f"relative P{c.relative['percentile']:g}", c.relative["threshold"]))
    if c.current is not None:
        lines.append(("current guard", c.current["threshold"]))
    groups = [("answerable, gold in top 5", s.scores[s.answerable & s.gold_in_top5]),
              ("answerable, gold not in top 5", s.scores[s.answerable & ~s.gold_in_top5]),
              ("unanswerable", s.scores[~s.answerable])]
    model = c.reranker[0] if len(c.reranker) == 1 else "several rerankers"
    title = f"{c.variant}: top-1 rerank score\n{model}"
    point = None if c.chosen is None else (c.chosen["fpr"], c.chosen["recall"])
    pr_point = None if c.chosen is None else (c.chosen["recall"], c.chosen["precision"])
    has = [i for i, p in enumerate(c.curve["precision"]) if not is_nan(p)]
    return {
        "histogram.png": fig.score_histogram(groups, title, lines),
        "roc.png": fig.roc_figure(c.curve["fpr"], c.curve["recall"], c.auc, point,
                                  f"{c.variant}: ROC of abstention\npositive = {c.positive}"),
        "pr.png": fig.pr_figure([c.curve["recall"][i] for i in has], [c.curve["precision"][i] for i in has],
                                c.n_positive / c.n, pr_point,
                                f"{c.variant}: precision-recall of abstention\npositive = {c.positive}"),
    }
