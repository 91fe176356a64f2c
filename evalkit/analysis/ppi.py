r"""Prediction-powered inference: a judge's figure on every answer, corrected by a small labelled sample.

What it is for: no judge is perfect, so a hallucination rate measured by a judge is
biased by the judge's errors. With a random sample of answers labelled by a person,
prediction-powered inference (Angelopoulos et al., *Science* 2023; PPI++: Angelopoulos,
Duchi & Zrnic 2023; used by ARES) gives an unbiased estimate with a valid confidence
interval, and measures the judge's agreement on the way.

**One stratum.** Of the N answers of a population, n are labelled (true value
:math:`y`, judge value :math:`f`); the other :math:`N_u = N - n` have the judge only.
Labelled and unlabelled answers are disjoint random parts of one sample of queries, so
the two terms below are independent:

.. math::

    \hat\theta = \lambda\,\bar f_{u} - \overline{(\lambda f - y)}_{n},\qquad
    \widehat{\mathrm{Var}} = \lambda^2 \frac{s^2_{f,u}}{N_u} + \frac{s^2_{\lambda f - y}}{n}

with sample variances (``ddof=1``). :math:`\lambda = 1` is the original PPI;
PPI++ uses :math:`\hat\lambda = \widehat{\mathrm{Cov}}(y, f) / ((1 + n/N_u)\,\widehat{\mathrm{Var}}(f))`
(covariance on the labelled answers, variance of :math:`f` on all of them), clipped to
[0, 1]: a useless judge gets :math:`\lambda \approx 0` and the estimate falls back to the
labels alone, so it is never much wider than labels alone. With no unlabelled answer
(everything labelled), :math:`\lambda = 0`. ``lam="auto"`` **cross-fits** it: the labels
are split into two folds (alternating, in the given order) and each label's term uses the
:math:`\hat\lambda` of the *other* fold (pooled over strata: within-stratum covariances
and variances), so :math:`\hat\lambda` never depends on the label it weighs. Estimating
it on the same labels biased the estimate downwards by about 0.01 and under-covered
(0.908 at n = 30 in ``benchmarks/ppi_coverage.py``); cross-fitted, the bias is gone.

**Strata** (a stratified sample: labels drawn per question type, say). Each stratum h
has its own estimate :math:`\hat\theta_h` and variance as above; with weights
:math:`W_h = N_h / N` (each stratum's share of the population),

.. math::

    \hat\theta = \sum_h W_h \hat\theta_h,\qquad
    \widehat{\mathrm{Var}} = \sum_h W_h^2 \widehat{\mathrm{Var}}_h + \frac{1}{N} \sum_h W_h (\hat\theta_h - \hat\theta)^2,

the second term for the randomness of the stratum shares themselves (the queries are a
sample of all questions users could ask). A stratum with fewer than two labels borrows
the pooled variance of :math:`\lambda f - y`.

**Small strata of binary labels** (``pseudo_labels=True``, what ``evalkit`` reports). A
stratum whose few labels all agree (the 17 labels of the judge's ``supported`` answers all
"not hallucinated") has a residual variance of 0, and its interval claims a certainty the
labels cannot give: with verdict strata and 30 labels the 95% interval covered the truth
in only 92% of trials. When a stratum's labels are all 0 or 1, its residual variance is
computed with two pseudo-labels added, one 0 and one 1 at the labels' mean judge value,
each of weight :data:`PSEUDO_WEIGHT` = 1/4 (frequency weights, divided by the total weight
minus one; the estimate itself is unchanged). This is Agresti & Coull's "add successes
and failures" idea, lighter: with 1/4 the verdict-stratified intervals cover at 0.95-0.96
and stay narrower than a uniform sample's; with weight 1 they covered at 0.98 and lost
most of that gain (``benchmarks/ppi_coverage.py``).

The interval is normal: :math:`\hat\theta \pm z_{1-\alpha/2} \sqrt{\widehat{\mathrm{Var}}}`.
Two variants: each is estimated on its own labels and the variances add (conservative
when the two variants' errors are positively correlated across queries, as they nearly
always are). ``benchmarks/ppi_coverage.py`` checks the coverage by simulation.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

__all__ = ["Agreement", "Estimate", "Stratum", "agreement", "difference", "ppi_mean", "stratified_ppi", "z_value"]


def z_value(confidence: float) -> float:
    """The two-sided normal quantile for ``confidence`` (1.96 for 0.95)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)


@dataclass(frozen=True)
class Estimate:
    """A mean with its standard error and normal confidence interval."""

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    confidence: float
    n_labelled: int
    n_total: int
    lam: float | None = None  # the judge weight (one stratum); None for a combination

    def to_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


@dataclass(frozen=True)
class Stratum:
    """One stratum's judge values: on the labelled answers (with their labels) and on the rest."""

    y: Sequence[float]          # labels of the labelled answers
    f_labelled: Sequence[float]  # the judge on the same answers
    f_unlabelled: Sequence[float]  # the judge on the stratum's other answers


def _var(x: np.ndarray) -> float:
    return float(np.var(x, ddof=1)) if len(x) > 1 else 0.0


PSEUDO_WEIGHT = 0.25
"""Weight of each of the two pseudo-labels (0 and 1) in the variance of a stratum of binary labels."""


def _weighted_var(x: np.ndarray, w: np.ndarray) -> float:
    """Variance of ``x`` with frequency weights ``w``, divided by ``sum(w) - 1`` (ddof 1)."""
    m = float(np.average(x, weights=w))
    return float(np.sum(w * (x - m) ** 2) / (np.sum(w) - 1.0))


def _lambda(y: np.ndarray, f: np.ndarray, f_u: np.ndarray) -> float:
    if len(f_u) == 0 or len(y) < 2:
        return 0.0
    var_f = _var(np.concatenate([f, f_u]))
    if var_f <= 0.0:
        return 0.0  # a constant judge carries no information within the stratum
    cov = float(np.cov(y, f, ddof=1)[0, 1])
    return min(1.0, max(0.0, cov / ((1.0 + len(y) / len(f_u)) * var_f)))


def _one(s: Stratum, lam: float | str | np.ndarray, pseudo: bool = False) -> tuple[float, float, float, np.ndarray]:
    """(estimate, variance, mean lambda, residuals lambda*f - y) of one stratum; variance NaN below two labels.

    ``lam`` may be one value per label (cross-fitted): the estimate is then the mean of
    the per-label terms ``lambda_i * mean(f_u) - (lambda_i * f_i - y_i)``. ``pseudo``: binary
    labels get the two pseudo-labels of the module docstring in their variance.
    """
    y, f, f_u = (np.asarray(v, dtype=np.float64) for v in (s.y, s.f_labelled, s.f_unlabelled))
    if len(y) != len(f):
        raise ValueError(f"{len(y)} labels but {len(f)} judge values on the labelled answers")
    if len(y) == 0:
        raise ValueError("a stratum has no labelled answer: its estimate is undefined")
    if isinstance(lam, np.ndarray):
        lam_i = lam if len(f_u) else np.zeros(len(y))
    else:
        lam_i = np.full(len(y), _lambda(y, f, f_u) if lam == "auto" else (float(lam) if len(f_u) else 0.0))
    resid = lam_i * f - y
    lam_v = float(lam_i.mean())
    est = (lam_v * float(f_u.mean()) if len(f_u) else 0.0) - float(resid.mean())
    var_u = lam_v ** 2 * _var(f_u) / len(f_u) if len(f_u) else 0.0
    if pseudo and np.isin(y, (0.0, 1.0)).all():  # pseudo-labels 0 and 1, at the labels' mean judge value
        var = var_u + _weighted_var(np.concatenate([resid, lam_v * float(f.mean()) - np.array([0.0, 1.0])]),
                                    np.r_[np.ones(len(y)), PSEUDO_WEIGHT, PSEUDO_WEIGHT]) / len(y)
    else:
        var = var_u + (_var(resid) / len(y) if len(y) > 1 else math.nan)
    return est, var, lam_v, resid


def ppi_mean(y: Sequence[float], f_labelled: Sequence[float], f_unlabelled: Sequence[float], *,
             lam: float | str = "auto", confidence: float = 0.95, pseudo_labels: bool = False) -> Estimate:
    """The PPI++ estimate of a mean from one stratum (see the module docstring); ``lam=1`` is plain PPI."""
    return stratified_ppi({"all": Stratum(y, f_labelled, f_unlabelled)}, lam=lam, confidence=confidence,
                          pseudo_labels=pseudo_labels)


FOLDS = 2


def _pooled_lambda(strata: Mapping[str, Stratum], keep: Mapping[str, np.ndarray] | None = None) -> float:
    """One PPI++ lambda for all strata (within-stratum covariance and variance, pooled), from the
    labels ``keep`` selects per stratum (all of them by default)."""
    cov = var = 0.0
    n = n_u = 0
    for k, s in strata.items():
        y, f, f_u = (np.asarray(v, dtype=np.float64) for v in (s.y, s.f_labelled, s.f_unlabelled))
        if keep is not None:
            y, f = y[keep[k]], f[keep[k]]
        if len(y) >= 2:
            cov += float(np.cov(y, f, ddof=1)[0, 1]) * (len(y) - 1)
        both = np.concatenate([f, f_u])
        if len(both) >= 2:
            var += _var(both) * (len(both) - 1)
        n, n_u = n + len(y), n_u + len(f_u)
    if n_u == 0 or var <= 0.0 or n < 2:
        return 0.0
    cov /= max(1, n - len(strata))
    var /= max(1, n + n_u - len(strata))
    return min(1.0, max(0.0, cov / ((1.0 + n / n_u) * var)))


def stratified_ppi(strata: Mapping[str, Stratum], *, lam: float | str = "auto", confidence: float = 0.95,
                   pseudo_labels: bool = False) -> Estimate:
    """The stratified PPI++ estimate with stratum weights N_h / N (see the module docstring);
    ``pseudo_labels``: the small-stratum variance guard for binary labels (what evalkit reports)."""
    if not strata:
        raise ValueError("no stratum: nothing to estimate")
    for s in strata.values():
        if len(s.y) != len(s.f_labelled):
            raise ValueError(f"{len(s.y)} labels but {len(s.f_labelled)} judge values on the labelled answers")
        if len(s.y) == 0:
            raise ValueError("a stratum has no labelled answer: its estimate is undefined")
    lams: dict[str, Any] = {k: lam for k in strata}
    if lam == "auto":  # cross-fitted: each label's lambda comes from the other fold's labels, pooled over strata
        folds = {k: np.arange(len(s.y)) % FOLDS for k, s in strata.items()}
        per_fold = [_pooled_lambda(strata, {k: folds[k] != j for k in strata}) for j in range(FOLDS)]
        lams = {k: np.array([per_fold[j] for j in folds[k]], dtype=np.float64) for k in strata}
    parts = {k: _one(s, lams[k], pseudo_labels) for k, s in strata.items()}
    sizes = {k: len(s.y) + len(s.f_unlabelled) for k, s in strata.items()}
    total = sum(sizes.values())
    pooled = np.concatenate([r for *_, r in parts.values()])
    pooled_var = _var(pooled)
    est = sum(sizes[k] / total * p[0] for k, p in parts.items())
    var = 0.0
    for k, (_, v, lam_v, _resid) in parts.items():
        w = sizes[k] / total
        if math.isnan(v):  # fewer than two labels: the pooled residual variance stands in
            s = strata[k]
            v = (lam_v ** 2 * _var(np.asarray(s.f_unlabelled, dtype=np.float64)) / len(s.f_unlabelled)
                 if len(s.f_unlabelled) else 0.0) + pooled_var / len(s.y)
        var += w * w * v
    if len(parts) > 1:
        var += sum(sizes[k] / total * (p[0] - est) ** 2 for k, p in parts.items()) / total
    se = math.sqrt(max(var, 0.0))
    z = z_value(confidence)
    lam_out = next(iter(parts.values()))[2] if len(parts) == 1 else None
    return Estimate(float(est), se, float(est - z * se), float(est + z * se), confidence,
                    sum(len(s.y) for s in strata.values()), total, lam_out)


def difference(a: Estimate, b: Estimate) -> tuple[float, float, float, float, float]:
    """``b - a`` of two independently corrected estimates: (difference, se, low, high, two-sided p)."""
    if a.confidence != b.confidence:
        raise ValueError("the two estimates have different confidence levels")
    d = b.estimate - a.estimate
    se = math.sqrt(a.se ** 2 + b.se ** 2)
    z = z_value(a.confidence)
    p = 1.0 if se == 0 else 2.0 * (1.0 - NormalDist().cdf(abs(d) / se))
    return d, se, d - z * se, d + z * se, p


@dataclass(frozen=True)
class Agreement:
    """How a binary judge agrees with the labels (positive class: hallucinated)."""

    n: int
    tp: int
    fp: int
    tn: int
    fn: int

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def balanced_accuracy(self) -> float | None:
        pos, neg = self.tp + self.fn, self.tn + self.fp
        if not pos or not neg:
            return None
        return (self.tp / pos + self.tn / neg) / 2

    def to_dict(self) -> dict[str, float | int | None]:
        return {"n": self.n, "tp": self.tp, "fp": self.fp, "tn": self.tn, "fn": self.fn,
                "precision": self.precision, "recall": self.recall, "balanced_accuracy": self.balanced_accuracy}


def agreement(y: Sequence[float], f: Sequence[float]) -> Agreement:
    """Counts of a binary judge ``f`` against labels ``y`` (1 = hallucinated)."""
    pairs = [(bool(a), bool(b)) for a, b in zip(y, f, strict=True)]
    return Agreement(len(pairs), sum(a and b for a, b in pairs), sum(b and not a for a, b in pairs),
                     sum(not a and not b for a, b in pairs), sum(a and not b for a, b in pairs))
