"""evalkit.analysis.stats against scipy where scipy has the same thing, and against hand cases."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from evalkit.analysis import stats
from evalkit.analysis.direction import LowerIsBetter, higher_is_better, sign

# ---------------------------------------------------------------------------- direction


@pytest.mark.parametrize("name,higher", [
    ("hit@5", True), ("ndcg@10", True), ("faithfulness", True), ("abstain_rate_unanswerable", True),
    ("hallucination_rate", False), ("abstain_rate_answerable", False), ("invalid_citation_rate", False), ("citations_invalid", False),
    ("latency_ms_p95", False),
])
def test_direction_rule(name, higher):
    assert higher_is_better(name) is higher
    assert sign(name) == (1 if higher else -1)
    assert (name in LowerIsBetter()) is (not higher)


# ---------------------------------------------------------------------------- sign-flip test


def _scipy_paired_p(d: np.ndarray) -> float:
    """scipy's paired permutation test of mean(x - y) with x - y = d (exact: every within-pair swap)."""
    x, y = d, np.zeros_like(d)
    res = sps.permutation_test((x, y), lambda a, b, axis: np.mean(a - b, axis=axis), permutation_type="samples",
                               alternative="two-sided", n_resamples=np.inf, vectorized=True)
    return float(res.pvalue)


@pytest.mark.parametrize("d", [
    [0.5, 0.2, -0.1, 0.4, 0.3, 0.25, 0.1, -0.05],
    [1.0, 1.0, 0.0, -1.0, 1.0, 1.0, 1.0, 0.0, 1.0],       # binary metric: ties and zeros
    [0.03, -0.02, 0.05, 0.01, -0.04, 0.02, 0.06, 0.0, 0.07, 0.02],
])
def test_sign_flip_exact_equals_scipy_permutation_test(d):
    d = np.array(d)
    assert stats.sign_flip_pvalue(d, n_resamples=10_000) == pytest.approx(_scipy_paired_p(d), abs=1e-12)


def test_sign_flip_hand_cases():
    # three equal positive differences: only all-plus and all-minus reach |sum| = 3 -> 2 of 8
    assert stats.sign_flip_pvalue([1.0, 1.0, 1.0]) == pytest.approx(0.25)
    assert stats.sign_flip_pvalue([0.0, 0.0, 0.0]) == 1.0        # no difference at all
    assert stats.sign_flip_pvalue([0.0, 2.0, 0.0]) == 1.0        # one non-zero: both signs reach it


def test_sign_flip_monte_carlo_close_to_exact_and_seeded():
    rng = np.random.default_rng(7)
    d = rng.normal(0.15, 1.0, size=40)
    # 2^40 sign assignments: compare with scipy's own Monte Carlo estimate
    p1 = stats.sign_flip_pvalue(d, n_resamples=20_000, seed=3)
    p2 = stats.sign_flip_pvalue(d, n_resamples=20_000, seed=3)
    ref = sps.permutation_test((d, np.zeros_like(d)), lambda a, b, axis: np.mean(a - b, axis=axis),
                               permutation_type="samples", n_resamples=50_000, vectorized=True,
                               rng=np.random.default_rng(11)).pvalue
    assert p1 == p2
    assert p1 == pytest.approx(ref, abs=0.02)
    assert p1 >= 1 / 20_001                                   # never 0 (Phipson & Smyth)


# ---------------------------------------------------------------------------- bootstrap


def test_bootstrap_ci_matches_scipy_percentile_bootstrap():
    rng = np.random.default_rng(0)
    x = rng.normal(0.1, 0.3, size=60)
    lo, hi = stats.bootstrap_ci(x, n_resamples=20_000, seed=1)
    ref = sps.bootstrap((x,), np.mean, method="percentile", n_resamples=20_000, rng=np.random.default_rng(2))
    assert lo == pytest.approx(ref.confidence_interval.low, abs=0.01)
    assert hi == pytest.approx(ref.confidence_interval.high, abs=0.01)
    assert lo < x.mean() < hi


def test_bootstrap_is_seeded_and_constant_samples_give_a_point():
    x = [0.0, 1.0, 1.0, 0.0, 1.0]
    assert stats.bootstrap_ci(x, seed=5) == stats.bootstrap_ci(x, seed=5)
    assert not np.array_equal(stats.bootstrap_means(x, 50, seed=5), stats.bootstrap_means(x, 50, seed=6))
    assert stats.bootstrap_ci([0.25] * 9) == (0.25, 0.25)


def test_paired_bootstrap_is_bootstrap_of_differences():
    a, b = [0.1, 0.5, 0.3, 0.9], [0.2, 0.5, 0.6, 0.8]
    assert stats.paired_bootstrap_ci(a, b, seed=2) == stats.bootstrap_ci(np.subtract(b, a), seed=2)
    with pytest.raises(ValueError, match="differ in length"):
        stats.paired_differences([1.0], [1.0, 2.0])


def test_bootstrap_rejects_bad_input():
    with pytest.raises(ValueError, match="empty"):
        stats.bootstrap_ci([])
    with pytest.raises(ValueError, match="finite"):
        stats.bootstrap_ci([1.0, float("nan")])
    with pytest.raises(ValueError, match="confidence"):
        stats.bootstrap_ci([1.0, 2.0], confidence=1.5)


# ---------------------------------------------------------------------------- corrections


def test_holm_hand_case():
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> running max 0.02, 0.03, 0.06, 0.06
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_bh_equals_scipy_false_discovery_control():
    p = [0.01, 0.04, 0.03, 0.005, 0.2, 0.04]
    assert stats.benjamini_hochberg(p) == pytest.approx(list(sps.false_discovery_control(p, method="bh")))


def test_corrections_skip_nan_and_ignore_order():
    p = [0.02, float("nan"), 0.01, 0.02]
    h = stats.holm(p)
    assert math.isnan(h[1]) and h[0] == h[3]                   # ties -> equal adjusted values
    assert stats.holm([0.02, 0.01, 0.02]) == [h[0], h[2], h[3]]  # NaN not counted in m
    p3, perm = [0.03, 0.01, 0.02], [2, 0, 1]
    assert [stats.adjust(p3, "bh")[i] for i in perm] == stats.adjust([p3[i] for i in perm], "bh")
    assert stats.adjust([0.2], "none") == [0.2]
    with pytest.raises(ValueError, match="valid: holm, bh, none"):
        stats.adjust([0.1], "bonferroni")


def test_win_tie_loss_respects_direction_and_seed_derivation_is_stable():
    d = [0.5, 0.0, -0.5, 1e-15]
    assert stats.win_tie_loss(d) == (1, 2, 1)
    assert stats.win_tie_loss([0.5, -0.2, -0.1], direction=-1) == (2, 0, 1)
    assert stats.derive_seed(0, "hit@5") == stats.derive_seed(0, "hit@5") != stats.derive_seed(0, "ndcg@10")
    assert stats.derive_seed(0, "hit@5") == 261785456430777061  # independent of PYTHONHASHSEED and process


def test_a_sample_of_zeros_is_not_resampled_and_gives_what_resampling_gives():
    """Two variants alike on a metric: every difference +0.0, so every resample's mean is +0.0 (no index drawn);
    the same array, bit for bit, as drawing the resamples. -0.0 values are still drawn (numpy's mean of them is
    +0.0 here, but that rests on how it sums)."""
    import numpy as np

    from evalkit.analysis import stats

    zeros = np.zeros(3_000)
    quick = stats.bootstrap_means(zeros, 500, seed=4)
    drawn = stats._drawn_means(zeros, 500, 4)
    assert quick.tobytes() == drawn.tobytes() and not np.signbit(quick).any()
    assert stats.bootstrap_ci(zeros, 500, 0.95, 4) == (0.0, 0.0)
    negative = np.full(50, -0.0)
    assert stats.bootstrap_means(negative, 20, seed=1).tobytes() == stats._drawn_means(negative, 20, 1).tobytes()
