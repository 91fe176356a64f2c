r"""Pure statistics for paired comparisons: bootstrap intervals, sign-flip tests, p-value corrections.

Everything here is a function of arrays and a seed; nothing reads files or global state (the
threads :func:`start` runs calls on are only where a call runs: each call keeps its own generator).
All randomness comes from ``numpy.random.default_rng(seed)``; :func:`derive_seed` turns
a seed plus names (a metric, a variant) into a per-test seed, so a test's result does
not depend on which other tests run or in what order.

Paired data are per-query differences :math:`d_i = b_i - a_i` of two variants on the
same queries.

* :func:`bootstrap_ci`: percentile bootstrap interval of the mean (Efron & Tibshirani
  1993, ch. 13): resample the :math:`d_i` with replacement ``n_resamples`` times, take
  the :math:`\alpha/2` and :math:`1-\alpha/2` quantiles of the resampled means. Resampling
  the differences is the paired bootstrap (each query keeps both of its values).
* :func:`sign_flip_pvalue`: two-sided paired randomisation test of "no difference"
  (Fisher's sign-flip test): under the null each :math:`d_i` is as likely to be
  :math:`-d_i`; p is the share of sign assignments whose :math:`|\sum d_i|` is at least
  the observed one. Exact (all :math:`2^m` assignments of the :math:`m` non-zero
  differences) when :math:`2^m \le` ``n_resamples``, else Monte Carlo with the
  :math:`(1 + \#) / (1 + B)` estimate (never 0; Phipson & Smyth 2010).
* :func:`holm` (Holm 1979, family-wise error) and :func:`benjamini_hochberg`
  (Benjamini & Hochberg 1995, false discovery rate): adjusted p-values for several
  tests at once; ``NaN`` entries (tests that could not run) are left out of the family.
"""
from __future__ import annotations

import hashlib
import itertools
import math
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

import numpy as np

CORRECTIONS = ("holm", "bh", "none")
_CHUNK = 2_000_000  # resamples x sample size handled per numpy block (bounded memory)
POOL_THREADS = 2
"""Threads :func:`start` uses at most: resampling is numpy's random fill, gather and mean, which release the GIL."""

T = TypeVar("T")


def derive_seed(seed: int, *keys: str) -> int:
    """A 63-bit seed from ``seed`` and names, stable across processes (no Python ``hash``)."""
    digest = hashlib.sha256("\x1f".join([str(int(seed)), *map(str, keys)]).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _as_1d(values: Sequence[float] | np.ndarray) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"expected a 1-d sequence of numbers, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite (no NaN or inf)")
    return x


def _check_level(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def bootstrap_means(values: Sequence[float] | np.ndarray, n_resamples: int = 10_000, seed: int = 0) -> np.ndarray:
    """Means of ``n_resamples`` bootstrap resamples of ``values`` (with replacement)."""
    x = _as_1d(values)
    if len(x) == 0:
        raise ValueError("cannot bootstrap an empty sample")
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    if not x.any() and not np.signbit(x).any():  # every value +0.0 (two variants alike on a metric): so is every
        return np.zeros(n_resamples)             # resample's mean, without drawing 10,000 x n indices
    return _drawn_means(x, n_resamples, seed)


def _drawn_means(x: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """:func:`bootstrap_means` by drawing every resample (``x`` checked)."""
    rng = np.random.default_rng(seed)
    out = np.empty(n_resamples, dtype=np.float64)
    step = max(1, _CHUNK // len(x))
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        idx = rng.integers(0, len(x), size=(stop - start, len(x)))
        out[start:stop] = x[idx].mean(axis=1)
    return out


class Started(Generic[T]):
    """Calls started on the resampling threads (:func:`start`); :meth:`results` waits for them, in order."""

    def __init__(self, calls: Sequence[Callable[[], T]], threads: int | None = None) -> None:
        n = min(threads or POOL_THREADS, os.cpu_count() or 1)
        self._later: Sequence[Callable[[], T]] | None = calls if n <= 1 else None  # one thread: run in results()
        self._futures: list[Future[T]] = [] if self._later is not None else [_pool(n).submit(c) for c in calls]

    def result(self, i: int) -> T:
        """The result of call ``i`` (waiting for it); its exception is raised here."""
        return self._later[i]() if self._later is not None else self._futures[i].result()

    def results(self) -> list[T]:
        """Each call's result in the order of the calls."""
        return [self.result(i) for i in range(len(self._later if self._later is not None else self._futures))]

    def cancel(self) -> None:
        """Drop the calls no thread has begun (the caller no longer needs them: another error is on its way)."""
        for f in self._futures:
            f.cancel()


def start(calls: Sequence[Callable[[], T]], threads: int | None = None) -> Started[T]:
    """Start ``calls`` on up to ``threads`` threads (default :data:`POOL_THREADS`, at most the machine's cores)
    and return at once, so the caller goes on (reading the next variant) while they run.

    For the independent resampling calls of one command (one bootstrap interval or sign-flip test per
    metric and pair): each has its own seed and generator, so its numbers do not depend on which thread
    runs it or when (tests/analysis/test_fast_paths.py compares them with the calls run one by one).
    With one thread they run one after another when their results are asked for (never, for calls whose
    results are not: as if they had not been made).
    """
    return Started(calls, threads)


def run_all(calls: Sequence[Callable[[], T]], threads: int | None = None) -> list[T]:
    """``[call() for call in calls]``, computed as :func:`start` does; results in the order of ``calls``."""
    return start(calls, threads).results()


_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _pool(threads: int) -> ThreadPoolExecutor:
    """The process's resampling threads (made on first use, idle until the next command's calls)."""
    with _POOLS_LOCK:
        if threads not in _POOLS:
            _POOLS[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="evalkit-resample")
        return _POOLS[threads]


def percentile_interval(samples: Sequence[float] | np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The central ``confidence`` interval of ``samples`` (linear-interpolated quantiles)."""
    _check_level(confidence)
    s = np.asarray(samples, dtype=np.float64)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(s, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


def bootstrap_ci(values: Sequence[float] | np.ndarray, n_resamples: int = 10_000, confidence: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean of ``values``.

    Args:
        values: one number per query (for a paired comparison: the differences b - a).
        n_resamples: bootstrap resamples.
        confidence: two-sided level, e.g. 0.95.
        seed: the generator seed; equal inputs and seed give equal intervals.

    Returns:
        ``(low, high)``. A constant sample gives ``(c, c)``.
    """
    _check_level(confidence)
    return percentile_interval(bootstrap_means(values, n_resamples, seed), confidence)


def paired_bootstrap_ci(a: Sequence[float], b: Sequence[float], n_resamples: int = 10_000,
                        confidence: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Interval of mean(b - a) over paired samples: :func:`bootstrap_ci` of the differences."""
    return bootstrap_ci(paired_differences(a, b), n_resamples, confidence, seed)


def paired_differences(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    """``b - a`` element-wise; the two samples must be the same length (one value per query each)."""
    xa, xb = _as_1d(a), _as_1d(b)
    if len(xa) != len(xb):
        raise ValueError(f"paired samples differ in length: {len(xa)} vs {len(xb)}")
    return xb - xa


def _at_least(stats: np.ndarray, observed: float) -> np.ndarray:
    # a relative tolerance so that float noise in sums does not split ties (as scipy does)
    return stats >= observed - max(abs(observed) * 1e-12, 1e-15)


def sign_flip_pvalue(diffs: Sequence[float] | np.ndarray, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided paired randomisation (sign-flip) test p-value of mean(diffs) = 0.

    Zero differences carry no sign information and are dropped from the enumeration
    (flipping them changes nothing). With every difference zero, p = 1.
    """
    d = _as_1d(diffs)
    nz = d[d != 0.0]
    m = len(nz)
    if m == 0:
        return 1.0
    observed = abs(math.fsum(nz))
    if 2 ** m <= n_resamples:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=m)))
        stats = np.abs(signs @ nz)
        return float(np.count_nonzero(_at_least(stats, observed)) / len(stats))
    rng = np.random.default_rng(seed)
    count = 0
    step = max(1, _CHUNK // m)
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        signs = rng.choice(np.array([1.0, -1.0]), size=(stop - start, m))
        count += int(np.count_nonzero(_at_least(np.abs(signs @ nz), observed)))
    return (1.0 + count) / (1.0 + n_resamples)


def _family(pvalues: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(pvalues, dtype=np.float64)
    if np.any((p[~np.isnan(p)] < 0) | (p[~np.isnan(p)] > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    return p, np.flatnonzero(~np.isnan(p))


def holm(pvalues: Sequence[float]) -> list[float]:
    r"""Holm step-down adjusted p-values (controls the family-wise error rate).

    .. math:: \tilde p_{(i)} = \max_{j \le i} \min\left(1, (m - j + 1)\, p_{(j)}\right)

    ``NaN`` inputs stay ``NaN`` and do not count in :math:`m`. Ties get equal adjusted
    values, so the result does not depend on the input order.
    """
    p, keep = _family(pvalues)
    out = np.full(len(p), np.nan)
    m = len(keep)
    if m:
        order = keep[np.argsort(p[keep], kind="stable")]
        adjusted = np.minimum(1.0, (m - np.arange(m)) * p[order])
        out[order] = np.maximum.accumulate(adjusted)
    return [float(x) for x in out]


def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    r"""Benjamini-Hochberg step-up adjusted p-values (controls the false discovery rate).

    .. math:: \tilde p_{(i)} = \min_{j \ge i} \min\left(1, \frac{m}{j}\, p_{(j)}\right)

    Equals ``scipy.stats.false_discovery_control(p, method="bh")``; ``NaN`` as in :func:`holm`.
    """
    p, keep = _family(pvalues)
    out = np.full(len(p), np.nan)
    m = len(keep)
    if m:
        order = keep[np.argsort(p[keep], kind="stable")]
        scaled = np.minimum(1.0, p[order] * m / np.arange(1, m + 1))
        out[order] = np.minimum.accumulate(scaled[::-1])[::-1]
    return [float(x) for x in out]


ADJUSTERS: dict[str, Callable[[Sequence[float]], list[float]]] = {
    "holm": holm,
    "bh": benjamini_hochberg,
    "none": lambda p: [float(x) for x in p],
}


def adjust(pvalues: Sequence[float], method: str = "holm") -> list[float]:
    """Adjusted p-values by ``method``: ``holm`` (default), ``bh`` or ``none``."""
    if method not in ADJUSTERS:
        raise ValueError(f"unknown correction '{method}'; valid: {', '.join(CORRECTIONS)}")
    return ADJUSTERS[method](pvalues)


def win_tie_loss(diffs: Sequence[float] | np.ndarray, direction: int = 1, tol: float = 1e-12) -> tuple[int, int, int]:
    """Counts of queries where b is better, equal (within ``tol``), worse; ``direction`` -1 for lower-is-better."""
    d = _as_1d(diffs) * direction
    return int(np.sum(d > tol)), int(np.sum(np.abs(d) <= tol)), int(np.sum(d < -tol))


def win_tie_loss_ids(ids: Sequence[str], diffs: Sequence[float] | np.ndarray, direction: int = 1,
                     tol: float = 1e-12) -> tuple[list[str], list[str], list[str]]:
    """The ids behind :func:`win_tie_loss`: (b better, equal within ``tol``, b worse), in the given order."""
    d = _as_1d(diffs) * direction
    if len(ids) != len(d):
        raise ValueError(f"{len(ids)} ids for {len(d)} differences")
    return ([q for q, x in zip(ids, d) if x > tol], [q for q, x in zip(ids, d) if abs(x) <= tol],
            [q for q, x in zip(ids, d) if x < -tol])

