"""The power statement of Assumption 5 along the run: the analytic power equals the rule's own
frequency on simulated seeds, and the seed count is the fewest that reaches 80%."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analyses.assumption5.along_run import (
    POWER_TARGET,
    SeedAlong,
    along_power,
    along_run,
    sd_upper,
    seed_along,
    seeds_for_power,
)
from analyses.assumption5.claim import _power


def _frequency(outcome: str, gamma: float, sd: float, kappa: float, n: int, reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        seeds = [SeedAlong(f"s{i}", float(g), kappa, 20, False) for i, g in enumerate(rng.normal(gamma, sd, n))]
        hits += along_run(seeds).outcome == outcome
    return hits / reps


@pytest.mark.parametrize(("n", "sd"), [(5, 0.4), (10, 0.6), (20, 1.1)])
def test_power_equals_the_rules_frequency_on_normal_seeds(n, sd):
    kappa, reps = 0.5, 3000
    grows, bounded = along_power(sd, kappa, n)
    for outcome, gamma, power, seed in (("grows", kappa, grows, 1), ("no growth", 0.0, bounded, 2)):
        measured = _frequency(outcome, gamma, sd, kappa, n, reps, seed)
        se = math.sqrt(power * (1 - power) / reps)
        assert abs(measured - power) <= 4 * se + 1e-3, (outcome, measured, power)


@pytest.mark.parametrize("sd", [0.3, 0.95, 1.1])
def test_seed_count_is_the_fewest_reaching_the_target(sd):
    kappa = 0.5
    for which, n in enumerate(seeds_for_power(sd, kappa)):
        assert n is not None
        assert along_power(sd, kappa, n)[which] >= POWER_TARGET
        if n > 3:
            assert along_power(sd, kappa, n - 1)[which] < POWER_TARGET


def test_no_statement_without_a_spread_or_a_shrinking_step():
    assert all(math.isnan(p) for p in along_power(math.nan, 0.5, 10))
    assert all(math.isnan(p) for p in along_power(0.5, 0.0, 10))
    assert seeds_for_power(0.0, 0.5) == (None, None)
    two = along_run([SeedAlong("a", 0.1, 0.5, 20, False), SeedAlong("b", 0.2, 0.5, 20, False)])
    assert _power(two) == ""


def test_headline_states_power_at_the_sd_and_counts_at_its_upper_bound():
    rng = np.random.default_rng(0)
    seeds = [SeedAlong(f"s{i}", float(g), 0.5, 20, False) for i, g in enumerate(rng.normal(0.3, 1.0, 10))]
    found = along_run([*seeds, SeedAlong("none", math.nan, 0.5, 2, False)])
    assert found.outcome == "not testable"
    grows, bounded = along_power(found.spread, 0.5, 10)
    upper = sd_upper(found.spread, 10)
    need = seeds_for_power(upper, 0.5)
    assert upper > found.spread
    assert _power(found) == (
        f"; if this run's fitted gamma is normal over independent seeds with sd {found.spread:.2g}, the power at 10 "
        f"seeds with a gamma (of 11) is {grows:.0%} for 'grows' if gamma = kappa and {bounded:.0%} for 'no growth' if "
        f"gamma = 0; at the sd's 80% upper bound {upper:.2g}, 80% needs {need[0]} and {need[1]} seeds with a gamma")


def test_sd_upper_bound_covers_the_true_sd_at_its_confidence():
    rng = np.random.default_rng(3)
    for n in (3, 5, 10):
        sds = rng.normal(0.0, 1.0, (20000, n)).std(axis=1, ddof=1)
        covered = np.mean([sd_upper(float(s), n) >= 1.0 for s in sds])
        assert abs(covered - 0.8) < 0.015, (n, covered)
    assert math.isnan(sd_upper(0.5, 1)) and math.isnan(sd_upper(math.nan, 5))


@pytest.mark.parametrize("n", [3, 5, 10])
def test_the_stated_count_reaches_the_target_power_in_most_suites(n):
    """A researcher who runs the count a suite of n normal seeds states gets at least 80% power in
    most suites (with the measured sd itself, in about half: docs/breaks/a5_power.md)."""
    rng = np.random.default_rng(n)
    kappa, true_sd = 0.5, 0.5
    reached = {0: [], 1: []}
    for sd in rng.normal(0.0, true_sd, (300, n)).std(axis=1, ddof=1):
        for which, count in enumerate(seeds_for_power(sd_upper(float(sd), n), kappa)):
            reached[which].append(count is not None and along_power(true_sd, kappa, count)[which] >= POWER_TARGET)
    for which in (0, 1):
        assert np.mean(reached[which]) >= 0.75, (which, np.mean(reached[which]))


def test_a_warm_up_is_left_out_of_kappa_and_gamma():
    t = np.arange(0, 1000, 10)
    peak = 100
    eta = np.where(t < peak, 0.05 + 0.05 * t / peak, 0.1 / np.sqrt(np.maximum(t - peak, 0) / peak + 1))
    rho = np.where(t < peak, 5.0, 1.0 + 0.0 * t)
    seed = seed_along("warm", t, rho, eta)
    after = seed_along("after", t[t >= peak], rho[t >= peak], eta[t >= peak])
    assert seed.kappa == after.kappa and seed.gamma == after.gamma and seed.n_steps == after.n_steps
    plain = seed_along("plain", t, rho, 0.1 / np.sqrt(t + 1))
    assert plain.n_steps == t.size  # η_0/√(t+1): the peak is the first step, nothing is left out
