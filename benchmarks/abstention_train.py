#!/usr/bin/env python
"""Fit the learned abstention stage's weights (evalkit/models/data/abstention_e5.json) from labelled replies.

    python benchmarks/abstention_train.py            # fit, choose C and the threshold, write the file
    python benchmarks/abstention_train.py --check    # fit again and exit 1 if the shipped file differs

What it does: reads the labelled splits named in ``TRAIN`` (benchmarks/data/abstention_*.jsonl;
never a split written after the weights, whose figures are the reported ones), encodes every
non-empty reply with multilingual-e5-small (the ``e5`` embedder, "passage:" side) and fits a
logistic regression (scikit-learn, L2, lbfgs: deterministic) of "abstained" on the vector.

C and the thresholds are chosen without the reported splits, by leave-one-split-out
cross-validation over ``TRAIN``: for each split, a model fitted on the other splits scores it;
the out-of-split probabilities of every reply are pooled. C is the one of ``C_GRID`` with the
lowest pooled log-loss. The two thresholds (``threshold`` for a reply the rules call a plain
answer, ``threshold_partial`` for a partial answer; what :func:`evalkit.models.abstention.detect`
does) are the pair of ``THRESHOLDS`` (``threshold_partial`` also "never") with the highest pooled
recall at a pooled precision of ``PRECISION`` or more; a tie goes to the higher thresholds. The
final weights are fitted on every split of ``TRAIN`` with that C.
Prints the cross-validated precision and recall of the rules alone and of rules + model.

The file also records ``engine_probe``: the sha256 of the e5 vectors of the first ``PROBE`` training replies, bit for
bit. The engine's vectors differ in their last digits between CPUs (not between thread counts or batches), and a fit
on other vectors is another fit: ``--check`` compares weights only where the probe matches, and says so where not.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "data"
TRAIN = ("abstention_dev", "abstention_test", *(f"abstention_test{n}" for n in (*range(2, 19), *range(20, 29))))
C_GRID = (1.0, 3.0, 10.0, 30.0, 100.0)
THRESHOLDS = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))  # 0.50 .. 0.95
UNANSWERED_THRESHOLDS = tuple(round(0.5 + 0.05 * i, 2) for i in range(9))  # 0.50 .. 0.90: never below even odds
PRECISION = 0.98
OUT = REPO / "evalkit" / "models" / "data" / "abstention_e5.json"
PROBE = 16


def load(name: str) -> list[dict]:
    path = DATA / f"{name}.jsonl"
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def fit(x: np.ndarray, y: np.ndarray, c: float):  # -> LogisticRegression
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=5000, solver="lbfgs").fit(x, y)


def precision_recall(pred: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    tp = int((pred & y).sum())
    return (tp / int(pred.sum()) if pred.sum() else 1.0), tp / int(y.sum())


def staged(p: np.ndarray, rules: np.ndarray, reasons: np.ndarray, threshold: float,
           partial: float | None, unanswered: np.ndarray | None = None, threshold_unanswered: float | None = None
           ) -> np.ndarray:
    """What :func:`evalkit.models.abstention.detect` finds, given the stage's probabilities ``p``: the rules'
    refusals, plain answers at ``threshold`` and partial answers at ``partial`` (None: never); a reply that
    loops has the reason ``loop`` here and is never read. ``unanswered``: the plain answers that do not give
    what their question asks for (:func:`evalkit.text.asked_values.unanswered`), read at ``threshold_unanswered``
    (None: like the others)."""
    by_partial = (reasons == "partial") & (p >= partial) if partial is not None else np.zeros(len(p), dtype=bool)
    found = rules | ((reasons == "answer") & (p >= threshold)) | by_partial
    if unanswered is not None and threshold_unanswered is not None:
        found |= (reasons == "answer") & unanswered & (p >= threshold_unanswered)
    return found


def choose_thresholds(p: np.ndarray, rules: np.ndarray, reasons: np.ndarray, y: np.ndarray
                      ) -> tuple[float, float | None]:
    """The (answer, partial-answer) thresholds with the highest pooled recall at precision >= PRECISION; ties go
    to the higher thresholds (None, "never", is the highest for partial answers)."""
    best: tuple[float, float, float] | None = None  # (recall, threshold, partial as a number)
    chosen: tuple[float, float | None] = (THRESHOLDS[-1], None)
    for t in THRESHOLDS:
        for t_partial in (*THRESHOLDS, None):
            precision, recall = precision_recall(staged(p, rules, reasons, t, t_partial), y)
            key = (recall, t, 2.0 if t_partial is None else t_partial)
            if precision >= PRECISION and (best is None or key > best):
                best, chosen = key, (t, t_partial)
    return chosen


def choose_unanswered(p: np.ndarray, rules: np.ndarray, reasons: np.ndarray, y: np.ndarray, threshold: float,
                      partial: float | None, unanswered: np.ndarray) -> float | None:
    """The threshold for a plain answer that does not give what its question asks for, the other two
    chosen: the lowest of ``UNANSWERED_THRESHOLDS`` below ``threshold`` that keeps the pooled precision at
    ``PRECISION`` or more and finds more (None: none does). The question lowers the bar no further than even odds
    (0.5): a reply the stage reads as more likely an answer stays one, whatever the question asks."""
    base = precision_recall(staged(p, rules, reasons, threshold, partial), y)[1]
    for t in UNANSWERED_THRESHOLDS:
        if t >= threshold:
            break
        precision, recall = precision_recall(staged(p, rules, reasons, threshold, partial, unanswered, t), y)
        if precision >= PRECISION and recall > base:
            return t
    return None


def engine_probe(vectors: np.ndarray | None = None) -> str:
    """The sha256 of the float32 e5 vectors of the first :data:`PROBE` training replies (encoded here unless given)."""
    if vectors is None:
        from evalkit.models.abstention import embed

        replies = [r["answer"] for name in TRAIN for r in load(name) if (r.get("answer") or "").strip()][:PROBE]
        vectors = embed(replies)
    return hashlib.sha256(np.ascontiguousarray(vectors[:PROBE], dtype=np.float32).tobytes()).hexdigest()


def train() -> tuple[dict, list[str]]:
    """The weights file's content, and the lines of the cross-validation report."""
    from evalkit.models.abstention import EMBEDDER, embed, loops
    from evalkit.text.abstention import detect_abstention
    from evalkit.text.asked_values import unanswered as not_given

    rows, split_of, digests = [], [], {}
    for name in TRAIN:
        data = [r for r in load(name) if (r.get("answer") or "").strip()]
        rows += data
        split_of += [name] * len(data)
        digests[name] = hashlib.sha256((DATA / f"{name}.jsonl").read_bytes()).hexdigest()
    x = embed([r["answer"] for r in rows])
    y = np.array([r["label"] == "abstained" for r in rows])
    found = [detect_abstention(r["answer"], finish_reason=r.get("finish_reason")) for r in rows]
    rules = np.array([f.abstained for f in found])
    reasons = np.array(["loop" if loops(r["answer"]) else f.reason for r, f in zip(rows, found, strict=True)])
    splits = np.array(split_of)
    unanswered = np.array([not_given(r.get("question"), r["answer"]) for r in rows])  # False without a question
    report = [f"{len(rows)} labelled replies from {len(TRAIN)} splits, {int(y.sum())} abstained; embedder {EMBEDDER}"]
    out_of_split: dict[float, np.ndarray] = {}
    losses: dict[float, float] = {}
    for c in C_GRID:
        p = np.zeros(len(rows))
        for name in TRAIN:
            held = splits == name
            p[held] = fit(x[~held], y[~held], c).predict_proba(x[held])[:, 1]
        out_of_split[c] = p
        losses[c] = -float(np.mean(y * np.log(p + 1e-12) + (~y) * np.log(1 - p + 1e-12)))
        report.append(f"C={c}: pooled out-of-split log-loss {losses[c]:.4f}")
    best_c = min(C_GRID, key=lambda c: (losses[c], c))
    p = out_of_split[best_c]
    threshold, partial = choose_thresholds(p, rules, reasons, y)
    by_question = choose_unanswered(p, rules, reasons, y, threshold, partial, unanswered)
    detected = staged(p, rules, reasons, threshold, partial, unanswered, by_question)
    rp, rr = precision_recall(rules, y)
    cp, cr = precision_recall(detected, y)
    report += [f"chosen C={best_c}, threshold {threshold} for answers, {partial} for partial answers (the highest "
               f"pooled recall at pooled precision >= {PRECISION}); {by_question} for answers that do not give what "
               f"their question asks for ({int(((reasons == 'answer') & unanswered).sum())} of them)",
               f"out-of-split, pooled: rules alone precision {rp:.3f} recall {rr:.3f}; "
               f"rules + model precision {cp:.3f} recall {cr:.3f}"]
    for name in TRAIN:
        held = splits == name
        sp, sr = precision_recall(detected[held], y[held])
        report.append(f"  {name}: rules recall {precision_recall(rules[held], y[held])[1]:.3f}; "
                      f"rules + model (fitted without it) precision {sp:.3f} recall {sr:.3f}")
    model = fit(x, y, best_c)
    weights = {
        "what": "learned abstention stage: logistic regression of 'abstained' on the reply's e5 passage vector",
        "embedder": EMBEDDER, "C": best_c, "threshold": threshold, "threshold_partial": partial,
        "threshold_unanswered": by_question,
        "trained_on": {name: digests[name] for name in TRAIN},
        "engine_probe": engine_probe(x),
        "cross_validated": {"rules": {"precision": round(rp, 4), "recall": round(rr, 4)},
                            "rules_and_model": {"precision": round(cp, 4), "recall": round(cr, 4)}},
        "bias": round(float(model.intercept_[0]), 8),
        "weights": [round(float(w), 8) for w in model.coef_[0]],
    }
    return weights, report


def same_fit(shipped: dict, fresh: dict, tolerance: float = 1e-4) -> bool:
    """Whether two fits agree: the same data, C, threshold and cross-validated figures, and weights within
    ``tolerance`` of the largest weight's size (lbfgs stops at its own tolerance, so BLAS builds and thread
    counts move the weights of a C=30 fit, whose largest is ~14, by up to ~1.4e-4: ~1e-5 of it; the
    bound is ~1.4e-3, so a move of 0.01 is caught)."""
    keys = ("embedder", "C", "threshold", "threshold_partial", "threshold_unanswered", "trained_on", "cross_validated")
    if not all(shipped.get(k) == fresh.get(k) for k in keys) or len(shipped["weights"]) != len(fresh["weights"]):
        return False
    a = np.array(shipped["weights"] + [shipped["bias"]])
    b = np.array(fresh["weights"] + [fresh["bias"]])
    return bool(np.allclose(a, b, rtol=0, atol=tolerance * max(1.0, float(np.abs(a).max()))))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="Exit 1 when a fresh fit differs from the shipped file.")
    args = ap.parse_args(argv)
    weights, report = train()
    print("\n".join(report))
    text = json.dumps(weights, indent=1, ensure_ascii=False) + "\n"
    if args.check:
        shipped = json.loads(OUT.read_text(encoding="utf-8")) if OUT.is_file() else {}
        if shipped.get("engine_probe") not in (None, weights["engine_probe"]):
            print(f"{OUT.relative_to(REPO)}: not comparable here: this machine's e5 vectors differ from those it was "
                  "fitted on (engine_probe), so a fit here is another fit")
            return 2
        same = bool(shipped) and same_fit(shipped, weights)
        print(f"{OUT.relative_to(REPO)}: {'reproduced' if same else 'DIFFERS from a fresh fit'}")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
