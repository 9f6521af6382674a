"""The power statement of Assumption 5 along the run: the analytic power equals the rule's own
frequency on simulated seeds, and the seed count is the fewest that reaches 80%."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analyses.assumption5.along_run import POWER_TARGET, SeedAlong, along_power, along_run, seeds_for_power
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


def test_headline_states_seeds_power_and_counts():
    rng = np.random.default_rng(0)
    found = along_run([SeedAlong(f"s{i}", float(g), 0.5, 20, False) for i, g in enumerate(rng.normal(0.3, 1.0, 10))])
    assert found.outcome == "not testable"
    grows, bounded = along_power(found.spread, 0.5, 10)
    need = seeds_for_power(found.spread, 0.5)
    assert _power(found) == (f"; power at 10 seeds and this sd: 'grows' if gamma = kappa {grows:.0%}, 'no growth' if "
                             f"gamma = 0 {bounded:.0%}; 80% needs {need[0]} and {need[1]} seeds")
