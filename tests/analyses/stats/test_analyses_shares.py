"""Seed-respecting share intervals: exact values in known cases and coverage on simulated seeds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from analyses.stats.shares import cluster_share_interval, paired_difference_interval


def _df(total: int, seeds: int) -> float:
    return (stats.t.ppf(0.975, total - 1) / stats.t.ppf(0.975, seeds - 1)) ** 2


def test_zero_share_has_an_upper_end_from_the_effective_sample_size():
    iv = cluster_share_interval([0] * 5, [30] * 5)
    n_eff = 150 * _df(150, 5)
    assert (iv.estimate, iv.low) == (0.0, 0.0)
    assert iv.high == pytest.approx(1 - 0.025 ** (1 / n_eff), rel=1e-9) and 0.04 < iv.high < 0.05


def test_equal_seeds_give_the_binomial_interval_on_the_df_corrected_size():
    iv = cluster_share_interval([15] * 5, [30] * 5)  # no between-seed spread: deff = 1
    n = 150 * _df(150, 5)
    low, high = stats.beta.ppf([0.025, 0.975], [0.5 * n, 0.5 * n + 1], [0.5 * n + 1, 0.5 * n])
    assert iv.estimate == 0.5 and iv.low == pytest.approx(low) and iv.high == pytest.approx(high)


def test_between_seed_spread_widens_the_interval_and_few_seeds_give_none():
    same = cluster_share_interval([15] * 5, [30] * 5)
    spread = cluster_share_interval([3, 27, 5, 25, 15], [30] * 5)
    assert spread.estimate == same.estimate and spread.high - spread.low > 2 * (same.high - same.low)
    assert cluster_share_interval([1, 2], [30, 30]) is None
    assert cluster_share_interval([1, 2, 0], [30, 30, 0]) is None  # a seed without events does not count
    with pytest.raises(ValueError, match="between 0 and trials"):
        cluster_share_interval([31, 0, 0], [30, 30, 30])


def test_paired_difference_of_known_pairs():
    a = [[1, 1, 1, 0]] * 3
    b = [[0, 1, 0, 0]] * 3
    iv = paired_difference_interval(a, b)
    assert iv.estimate == pytest.approx(0.5)
    plain = np.sqrt(12 * 0.25 / 144)  # unclustered SE: the seeds agree exactly, so CR1 is 0
    assert iv.high - iv.estimate == pytest.approx(stats.t.ppf(0.975, 2) * plain)
    assert paired_difference_interval(a[:2], b[:2]) is None


def test_coverage_on_heterogeneous_autocorrelated_seeds():
    """5 seeds × 30 events, seed shares Beta around p with sd 0.1, lag-1 correlation 0.3."""
    rng = np.random.default_rng(0)
    p, reps, hits, diff_hits = 0.3, 300, 0, 0
    total = p * (1 - p) / 0.1**2 - 1
    for _ in range(reps):
        x, a, b = [], [], []
        for share in rng.beta(p * total, (1 - p) * total, size=5):
            signs = rng.random(30) < share
            keep = rng.random(30) < 0.3
            for t in range(1, 30):
                signs[t] = signs[t - 1] if keep[t] else signs[t]
            x.append(int(signs.sum()))
            a.append(signs.astype(int))
            b.append((rng.random(30) < 0.5).astype(int))
        hits += cluster_share_interval(x, [30] * 5).contains(p)
        diff_hits += paired_difference_interval(a, b).contains(p - 0.5)
    assert hits / reps >= 0.92 and diff_hits / reps >= 0.92
