"""Theorem 1 (a), the rate described: estimator identities, the rule's outcomes, calibration."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analyses.rate import (
    MIN_HORIZON,
    RATE_OUTCOMES,
    WINDOWS,
    RateDescription,
    bound_beta,
    describe_rate,
    flips,
    level_exponent,
    rate_from_table,
    rate_outcome,
    seed_rate,
    window_sensitivity,
)
from analyses.rate_families import RATE_EXPECTED, RATE_FAMILIES, rate_mean, rate_series
from analyses.results import Interval, load_result

# Documented calibration (docs/THEOREM1.md, benchmarks/calibrate_rate.py): at 5 seeds, T = 1000,
# noise 0.5 x the run's mean level, the true outcome's share is at least this (minus a tolerance
# for the 40 repetitions here).
DOCUMENTED_CORRECT = {
    "1/sqrt(T)": 0.99,
    "log(T+1)/sqrt(T)": 0.95,
    "T^-0.2": 0.43,
    "plateau": 0.98,
    "plateau after transient": 0.90,
    "rise (first third), then 1/sqrt(T)": 0.95,
    "mean peaks at T=700, then 1/sqrt(T)": 0.99,
}
TOLERANCE = 0.15


def test_level_exponent_recovers_a_power_law_and_its_scale_is_free():
    t = np.arange(500.0, 1001.0)
    for beta in (-0.3, 0.0, 0.2, 0.5, 1.4):
        assert level_exponent(t, 3.7 * t**-beta) == pytest.approx(beta, abs=1e-3)
    assert math.isnan(level_exponent(t, -np.ones_like(t)))  # level not positive


def test_the_bound_threshold_is_the_fit_on_the_bound_curve():
    t, level = rate_mean("log(T+1)/sqrt(T)", 1000)
    win = t > 500
    assert bound_beta(t) == pytest.approx(level_exponent(t[win], level[win]), abs=1e-12)
    assert 0.35 < bound_beta(t) < 0.40  # between 1/2 - 1/log T and 1/2
    fit = seed_rate(t, level)
    assert fit.b == pytest.approx(0.0, abs=1e-12)  # b = 0 exactly on the bound's curve
    t2, level2 = rate_mean("1/sqrt(T)", 1000)
    assert seed_rate(t2, level2).beta == pytest.approx(0.5, abs=2e-3)


def test_running_mean_figures_match_their_definition():
    t, level = rate_mean("T^-0.2", 2000)
    fit = seed_rate(t, level)
    assert fit.beta_run == pytest.approx(0.2, abs=1e-6)
    win = t > 1000
    kappa = np.polyfit(np.log(t[win]), np.log(np.log(t[win] + 1)), 1)[0]
    assert fit.b_run == pytest.approx(0.5 - 0.2 - kappa, abs=1e-6)


def test_rule_returns_each_outcome_on_constructed_intervals():
    def iv(lo, hi):
        return Interval((lo + hi) / 2, lo, hi)
    assert rate_outcome(iv(0.3, 0.6), iv(-0.2, 0.1), 1000, 5)[0] == "at least the bound's rate"
    assert rate_outcome(iv(0.1, 0.3), iv(0.05, 0.3), 1000, 5)[0] == "slower than the bound"
    assert rate_outcome(iv(-0.1, 0.1), iv(0.2, 0.5), 1000, 5)[0] == "no decay"
    assert rate_outcome(iv(-0.5, 1.0), iv(-0.6, 0.9), 1000, 5) == ("not testable", "ambiguous")
    assert rate_outcome(iv(0.3, 0.6), iv(-0.2, 0.1), MIN_HORIZON - 1, 5) == ("not testable", "short_horizon")
    assert rate_outcome(None, None, 1000, 1) == ("not testable", "few_seeds")
    assert rate_outcome(None, None, 0, 0) == ("not testable", "no_seed")


@pytest.mark.parametrize("family", list(RATE_FAMILIES))
def test_each_family_gets_its_outcome_at_the_documented_rate(family):
    rng = np.random.default_rng(7)
    reps = 40
    hits = sum(describe_rate([rate_series(family, 1000, rng, 0.5) for _ in range(5)]).outcome
               == RATE_EXPECTED[family] for _ in range(reps))
    assert hits / reps >= DOCUMENTED_CORRECT[family] - TOLERANCE


def _table(family: str, seeds: int, steps: int, noise: float, rng) -> pd.DataFrame:
    parts = []
    for s in range(seeds):
        t, g = rate_series(family, steps, rng, noise)
        parts.append(pd.DataFrame({"step": t - 1, "g": g, "seed": s}))
    return pd.concat(parts, ignore_index=True)


def test_three_seeds_on_the_bound_never_say_no_decay_and_a_plateau_does():
    """Issue 23: Ā_T = c·log(T+1)/√T with noise over 2000 steps, 3 seeds, never "no decay"."""
    rng = np.random.default_rng(23)
    outcomes = [rate_from_table(_table("log(T+1)/sqrt(T)", 3, 2000, 0.5, rng), "g", seed_column="seed").outcome
                for _ in range(25)]
    assert "no decay" not in outcomes and outcomes.count("at least the bound's rate") >= 20
    plateau = [rate_from_table(_table("plateau", 3, 2000, 0.5, rng), "g", seed_column="seed").outcome
               for _ in range(10)]
    assert plateau.count("no decay") >= 9


def test_single_series_keeps_point_estimates_without_intervals():
    rng = np.random.default_rng(1)
    t, g = rate_series("1/sqrt(T)", 1000, rng, 0.1)
    result = describe_rate([(t, g)])
    assert result.outcome == "not testable" and result.reason == "few_seeds"
    assert result.beta is None and result.b is None
    assert result.beta_point == pytest.approx(0.5, abs=0.1)
    cli = result.to_cli()
    assert cli["beta"]["low"] is None and cli["beta"]["estimate"] == pytest.approx(result.beta_point)


def test_short_horizon_and_round_trip():
    rng = np.random.default_rng(2)
    short = describe_rate([rate_series("1/sqrt(T)", 300, rng, 0.1) for _ in range(5)])
    assert (short.outcome, short.reason) == ("not testable", "short_horizon")
    full = describe_rate([rate_series("plateau", 1000, rng, 0.3) for _ in range(5)], label="x")
    again = load_result(full.to_json())
    assert isinstance(again, RateDescription) and again == full
    assert full.outcome in RATE_OUTCOMES


def test_window_sensitivity_gives_both_windows():
    rng = np.random.default_rng(3)
    series = [rate_series("1/sqrt(T)", 1000, rng, 0.1) for _ in range(5)]
    both = window_sensitivity(series)
    assert set(both) == set(WINDOWS)
    assert both[WINDOWS[1]].per_seed[0].n_window == 334 and both[WINDOWS[0]].per_seed[0].n_window == 500
    assert all(r.outcome == "at least the bound's rate" for r in both.values()) and not flips(both)
    changed = {**both, WINDOWS[1]: describe_rate(series[:2])}
    assert flips(changed)
