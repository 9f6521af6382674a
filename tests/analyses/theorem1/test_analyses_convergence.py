"""Theorem 1's bound test (analyses.theorem1.convergence): known answers, every verdict, calibration."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analyses.io import RunDataError
from analyses.theorem1.controls import LogisticToy, logistic_control, logistic_table
from analyses.theorem1.convergence import (
    BOUND_VERDICTS,
    MIN_HORIZON,
    bound_from_table,
    bound_statistic,
    bound_test,
    default_t0,
    running_average,
    seed_fit,
    series_from_table,
)

CONTROL = LogisticToy(batch=256)


def _from_mean_path(a: np.ndarray) -> np.ndarray:
    """G_t whose running mean is exactly ``a`` (Ā_T for T = 1..n)."""
    t = np.arange(1, a.size + 1, dtype=float)
    return t * a - (t - 1) * np.concatenate([[0.0], a[:-1]])


def _power(n: int, beta: float, c: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(1, n + 1, dtype=float)
    return np.arange(1, n + 1), _from_mean_path(c * t**-beta)


def _exact_b(n: int, beta: float) -> float:
    """Slope of log B_T on log T over T > n/2 for Ā_T = c·T^{−β}, computed directly."""
    t = np.arange(n // 2 + 1, n + 1, dtype=float)
    return float(np.polyfit(np.log(t), 0.5 * np.log(t) - beta * np.log(t) - np.log(np.log(t + 1)), 1)[0])


def test_running_average_and_bound_statistic():
    assert np.allclose(running_average(np.array([4.0, 2.0, 0.0])), [4.0, 3.0, 2.0])
    assert bound_statistic(np.array([3.0]), np.array([2.0]))[0] == pytest.approx(2 * math.sqrt(3) / math.log(4))
    assert default_t0(50) == 10 and default_t0(1000) == 100


@pytest.mark.parametrize("beta", [0.2, 0.5, 0.8])
def test_exact_power_law_gives_its_slope_and_beta(beta):
    t, g = _power(1000, beta)
    fit = seed_fit(t, g)
    assert fit.beta == pytest.approx(beta, abs=1e-9)
    assert fit.b == pytest.approx(_exact_b(1000, beta), abs=1e-9)
    assert fit.horizon == 1000 and fit.n_fit == 500 == fit.n_positive


def test_orientation_of_b():
    """True 1/√T: b ≈ −1/log T < 0; the bound exactly: b ≈ 0; a noise floor: b ≈ +½ − 1/log T."""
    n = 4000
    t = np.arange(1, n + 1, dtype=float)
    rate = seed_fit(*_power(n, 0.5)).b
    bound = seed_fit(t, _from_mean_path(np.log(t + 1) / np.sqrt(t))).b
    floor = seed_fit(*_power(n, 0.0)).b
    assert -0.2 < rate < 0 and bound == pytest.approx(0, abs=1e-9) and 0.3 < floor < 0.5


def _seeds(n: int, betas, noise: float = 0.0, seed: int = 0):
    rng = np.random.default_rng(seed)
    out = []
    for beta in betas:
        t, g = _power(n, beta)
        out.append((t, g * (1 + noise * rng.standard_normal(n))))
    return out


def test_each_verdict_on_constructed_inputs():
    assert bound_test(_seeds(1000, [0.5, 0.52, 0.48])).verdict == "consistent"
    grows = bound_test(_seeds(1000, [0.2, 0.22, 0.18]))
    assert grows.verdict == "not consistent" and grows.slope.low > 0
    short = bound_test(_seeds(MIN_HORIZON - 1, [0.2, 0.22, 0.18]))
    assert short.verdict == "not testable" and short.reason == "short_horizon"
    two = bound_test(_seeds(1000, [0.2, 0.22]))
    assert two.verdict == "not testable" and two.reason == "few_seeds"
    t, g = _power(1000, 0.5)
    negative = [(t, -g)] * 3  # Ā_T < 0 everywhere: too few positive points
    flat = bound_test(negative)
    assert flat.verdict == "not testable" and flat.reason == "few_fitted" and flat.fitted == 0
    assert {r.verdict for r in (grows, short, flat)} | {"consistent"} == set(BOUND_VERDICTS)
    assert grows.reason == "growing" and bound_test(_seeds(1000, [0.5, 0.52, 0.48])).reason == "not_growing"
    assert bound_test([]).reason == "no_seed"


def test_logistic_control_is_consistent_and_the_biased_norm_is_not():
    table = logistic_table(2000, [0, 1, 2], CONTROL)
    unbiased = bound_from_table(table, "grad_sq_unbiased", seed_column="seed")
    assert unbiased.verdict == "consistent" and unbiased.seeds == 3 and unbiased.horizon == 2000
    assert bound_from_table(table, "full_grad_sq", seed_column="seed").verdict == "consistent"
    # the squared minibatch norm has a noise floor σ²/B: B_T grows like √T/log T
    assert bound_from_table(table, "grad_norm_sq", seed_column="seed").verdict == "not consistent"


def test_unbiased_estimate_of_the_toy_has_the_full_gradient_mean():
    frame = logistic_control(400, 0, LogisticToy(batch=8))
    diff = frame["grad_sq_unbiased"] - frame["full_grad_sq"]
    assert abs(diff.mean()) < 3 * diff.std() / math.sqrt(len(diff))
    assert (frame["grad_sq_unbiased"] < 0).any()  # it can be negative


def test_running_mean_like_t_minus_0_2_is_not_consistent_and_60_steps_not_testable():
    rows = []
    for s in range(3):
        t, g = _power(2000, 0.2)
        rows.append(pd.DataFrame({"step": t - 1, "g": g * (1 + 0.3 * np.random.default_rng(s).standard_normal(t.size)),
                                  "seed": s}))
    table = pd.concat(rows)
    assert bound_from_table(table, "g", seed_column="seed").verdict == "not consistent"
    short = bound_from_table(table[table["step"] < 60], "g", seed_column="seed")
    assert short.verdict == "not testable" and short.horizon == 60


def test_table_errors_and_negative_values_allowed():
    frame = pd.DataFrame({"step": [0, 1, 2, 3, 4, 5], "g": [1.0, -0.5, 0.2, None, 0.1, 0.3]})
    t, g, missing = series_from_table(frame, "g")
    assert t.tolist() == [1, 2, 3, 5, 6] and missing == 1 and g[1] == -0.5
    with pytest.raises(RunDataError, match="seed column"):
        bound_from_table(frame, "g", seed_column="seed")
    with pytest.raises(RunDataError, match="duplicated"):
        series_from_table(pd.DataFrame({"step": [0, 0, 1, 2, 3], "g": [1.0] * 5}), "g")


def _coverage(reps: int, seeds: int, spread: float, noise: float, phi: float = 0.9) -> tuple[float, float]:
    """Share of seed-level 95% intervals covering the known mean b and mean β.

    Each seed has its own exponent β_s ~ N(0.35, spread²) (the seed-level random effect whose
    mean the interval targets) and AR(1) multiplicative step noise (autocorrelated steps).
    """
    rng = np.random.default_rng(12345)
    n = 600
    t = np.arange(1, n + 1, dtype=float)
    true_beta = 0.35
    true_b = _exact_b(n, true_beta)
    hit_b = hit_beta = 0
    for _ in range(reps):
        series = []
        for beta_s in rng.normal(true_beta, spread, seeds):
            e = rng.standard_normal(n)
            z = np.empty(n)
            z[0] = e[0]
            for i in range(1, n):
                z[i] = phi * z[i - 1] + math.sqrt(1 - phi**2) * e[i]
            series.append((t.astype(int), _from_mean_path(2.0 * t**-beta_s) * (1 + noise * z)))
        result = bound_test(series, min_horizon=1)
        hit_b += result.slope.contains(true_b)
        hit_beta += result.beta.contains(true_beta)
    return hit_b / reps, hit_beta / reps


@pytest.mark.parametrize(("seeds", "spread", "noise"), [(3, 0.05, 0.02), (3, 0.0, 0.3), (5, 0.05, 0.3)])
def test_seed_level_intervals_cover_at_their_level(seeds, spread, noise):
    cover_b, cover_beta = _coverage(reps=200, seeds=seeds, spread=spread, noise=noise)
    assert 0.90 <= cover_b <= 0.98, cover_b
    assert 0.90 <= cover_beta <= 0.98, cover_beta


def test_t_interval_coverage_of_iid_normal_seed_statistics():
    """The seed interval itself: 400 repetitions of 3 normal per-seed statistics."""
    from analyses.stats.seeds import seed_interval

    rng = np.random.default_rng(7)
    hits = sum(seed_interval(rng.normal(0.3, 0.2, 3)).contains(0.3) for _ in range(400))
    assert 0.90 <= hits / 400 <= 0.98
    assert stats.binomtest(hits, 400, 0.95).pvalue > 0.001
