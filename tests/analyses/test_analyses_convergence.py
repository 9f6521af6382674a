"""Theorem 1 fit on synthetic power laws with known β (analyses.convergence)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import power_law_series

from analyses.convergence import default_t0, rate_fit, rate_from_table, running_average
from analyses.io import RunDataError


def _exact(n: int, beta: float, c: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(1, n + 1, dtype=float)
    return np.arange(1, n + 1), c * (t ** (1 - beta) - (t - 1) ** (1 - beta))


def test_running_average_is_the_mean_so_far():
    assert np.allclose(running_average(np.array([4.0, 2.0, 0.0])), [4.0, 3.0, 2.0])


def test_default_t0():
    assert default_t0(50) == 10 and default_t0(1000) == 100 and default_t0(1001) == 101


@pytest.mark.parametrize("beta", [0.2, 0.5, 0.8])
def test_exact_power_law_recovers_beta_with_a_narrow_interval(beta):
    fit = rate_fit([_exact(300, beta)], n_boot=50)
    assert fit.beta.estimate == pytest.approx(beta, abs=1e-9)
    # No noise: only the smoother's curvature residuals remain, so the interval is tiny.
    assert fit.beta.high - fit.beta.low < 0.01 and fit.beta.contains(beta)
    assert fit.t0 == 30 and fit.t_max == 300 and fit.n_points == 271
    assert fit.holds == (beta >= 0.5 - 1e-9)
    assert np.exp(fit.log_c) == pytest.approx(2.0)


def test_polylog_gamma_is_recovered():
    t = np.arange(1, 2001, dtype=float)
    a = 3.0 * t**-0.5 * np.log(t + 1.0) ** 1.5  # Ā_T given directly: G = T·Ā_T − (T−1)·Ā_{T−1}
    s = t * a
    g = np.diff(np.concatenate([[0.0], s]))
    fit = rate_fit([(t.astype(int), g)], n_boot=20)
    assert fit.gamma.estimate == pytest.approx(1.5, abs=0.1)


def test_noisy_interval_covers_beta_in_most_repetitions():
    beta, covered = 0.5, 0
    for rep in range(20):
        rng = np.random.default_rng(rep)
        g = power_law_series(rng, 400, beta)
        fit = rate_fit([(np.arange(1, 401), g)], n_boot=200, seed=rep)
        assert fit.beta.low <= fit.beta.estimate <= fit.beta.high
        covered += fit.beta.contains(beta)
    assert covered >= 16


def test_seed_pooling_narrows_the_interval_and_keeps_per_seed_betas():
    rng = np.random.default_rng(7)
    series = [(np.arange(1, 401), power_law_series(rng, 400, 0.5)) for _ in range(4)]
    single = rate_fit(series[:1], n_boot=300)
    pooled = rate_fit(series, n_boot=300)
    assert pooled.n_series == 4 and len(pooled.per_series_beta) == 4
    assert pooled.beta.high - pooled.beta.low < single.beta.high - single.beta.low
    assert pooled.beta.contains(0.5)


def test_slow_rate_fails_the_claim():
    rng = np.random.default_rng(3)
    fit = rate_fit([(np.arange(1, 1001), power_law_series(rng, 1000, 0.2))], n_boot=200)
    assert fit.beta.high < 0.5 and not fit.holds


def test_sparse_column_from_a_table():
    rng = np.random.default_rng(5)
    g = power_law_series(rng, 600, 0.5)
    values = [float(v) if i % 5 == 0 else None for i, v in enumerate(g)]
    frame = pd.DataFrame({"step": range(600), "probe/gradient/global_sq": values})
    fit = rate_from_table(frame, "probe/gradient/global_sq", n_boot=200)
    assert fit.n_missing == 480 and fit.beta.contains(0.5)


def test_same_seed_same_result():
    rng = np.random.default_rng(1)
    series = [(np.arange(1, 201), power_law_series(rng, 200, 0.5))]
    assert rate_fit(series, n_boot=100, seed=4) == rate_fit(series, n_boot=100, seed=4)


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (pd.DataFrame({"step": range(30), "g": [1.0] * 29 + [float("inf")]}), "infinite"),
        (pd.DataFrame({"step": range(30), "g": [1.0] * 29 + [-1.0]}), "negative"),
        (pd.DataFrame({"step": range(30), "g": ["x"] * 30}), "not numeric"),
        (pd.DataFrame({"step": [0, 1, 1, 2, 3, 4], "g": [1.0] * 6}), "duplicated"),
        (pd.DataFrame({"step": range(3), "g": [1.0] * 3}), "too few rows"),
        (pd.DataFrame({"step": range(12), "g": [1.0] * 12}), "too few points"),
        (pd.DataFrame({"step": range(30), "h": [1.0] * 30}), "missing column 'g'"),
    ],
)
def test_bad_tables_raise_clear_errors(frame, message):
    with pytest.raises(RunDataError, match=message):
        rate_from_table(frame, "g", n_boot=10)
