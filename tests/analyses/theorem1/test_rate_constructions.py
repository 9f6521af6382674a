"""Theorem 1 (a)'s constructions with known answers (``analyses.theorem1.families``), registered
before the rule was tuned on them, and the rule's rates on them through its own code
(``describe_rate``): a floor reached anywhere in the run never reads a fall toward zero at or near
the bound's rate; 1/√T still does (docs/THEOREM1.md, the rate section)."""

from __future__ import annotations

import numpy as np
import pytest

from analyses.theorem1.families import (
    FLOOR,
    FLOOR_AT,
    PLATEAU,
    RATE_FAMILIES,
    RATE_TRUE,
    RATE_TRUTH,
    RATE_WRONG,
    SLOWER,
    TOWARD_ZERO,
    ZERO,
    rate_mean,
    rate_series,
)
from analyses.theorem1.rate import RATE_OUTCOMES, describe_rate

BOUND_WORDS = ("falls toward zero at the bound's rate or faster", "falls, rate not distinguished from the bound's")
EXPONENTIAL_FLOORS = ("1 + 16 exp(-T/100) (a floor)", "1 + 32 exp(-T/100) (a floor)")
LAST_TAIL = ("step drop at T=850 onto a plateau", "1/sqrt(T), flat from T=900", "late transient onto a plateau")


def _outcomes(family: str, noise: float, groups: int, seed: int, seeds: int = 5, horizon: int = 1000) -> list[str]:
    rng = np.random.default_rng(seed)
    return [describe_rate([rate_series(family, horizon, rng, noise) for _ in range(seeds)]).outcome
            for _ in range(groups)]


def test_every_family_has_a_truth_and_its_true_and_wrong_words_are_outcomes():
    assert set(RATE_TRUTH) == set(RATE_FAMILIES)
    for family in RATE_FAMILIES:
        assert set(RATE_TRUE[family]) <= set(RATE_OUTCOMES) and set(RATE_WRONG[family]) <= set(RATE_OUTCOMES)
        assert not set(RATE_TRUE[family]) & set(RATE_WRONG[family]), family
        if RATE_TRUTH[family] in (FLOOR, PLATEAU, SLOWER, ZERO):
            assert set(BOUND_WORDS) <= set(RATE_WRONG[family]), family


def test_the_truths_hold_of_the_levels():
    """A floor family's level at T = 1000 is within 10% of its level at T = 10^5 (it has stopped);
    a family falling toward zero has fallen by the bound's own ratio from T = 500 to 1000 (within 0.01:
    T^−0.378 has the bound's exponent at T = 1000, the bound's local exponent there is 0.384)."""
    bound = rate_mean("log(T+1)/sqrt(T) (the bound)", 1000)[1]
    for family, truth in RATE_TRUTH.items():
        t, level = rate_mean(family, 100_000)
        if truth == FLOOR:
            assert level[999] == pytest.approx(level[-1], rel=0.1), family
        elif truth == TOWARD_ZERO and "AR(1)" not in family and "peaks" not in family:
            assert level[999] / level[499] <= bound[999] / bound[499] + 0.01, family
        elif truth == PLATEAU:
            assert np.ptp(level) == 0
        elif truth == ZERO:
            assert not level.any()
    for knee in FLOOR_AT:
        t, level = rate_mean(f"1/sqrt(T), flat from T={knee}", 1000)
        assert np.all(level[t >= knee] == level[-1]) and level[knee - 2] > level[-1]


def test_each_construction_reads_its_truth_at_low_noise():
    """At noise 0.05 × the mean level (5 seeds, T = 1000) each construction whose truth the window
    can show reads a true outcome in at least 4 of 5 groups, and never a wrong one."""
    for family in RATE_TRUTH:
        if "AR(1)" in family or family in ("rise over the first third, then 1/sqrt(T)",
                                           "mean peaks at T=700, then 1/sqrt(T)"):
            continue  # warm-ups peaking inside the window read "not testable"; AR noise is tested below
        if family in LAST_TAIL:
            continue  # resolved only at lower noise (next test)
        outcomes = _outcomes(family, 0.05, 5, seed=48)
        assert sum(o in RATE_TRUE[family] for o in outcomes) >= 4, (family, outcomes)
        assert not any(o in RATE_WRONG[family] for o in outcomes), (family, outcomes)


@pytest.mark.xfail(strict=True, reason=(
    "against the slowest member of the bound's class the last tail's own fall is smaller (0.047 at T = 1000), so "
    "a floor from 0.9T shows a smaller shortfall: at noise 0.01 one group of 10 (seed 49) reads 'falls toward zero "
    "at the bound's rate or faster' with a caveat from T = 950, after the floor start 883: a wrong word"))
def test_a_floor_reached_in_the_last_tail_is_resolved_at_noise_001():
    """A step at 0.85T, a floor from 0.9T and a transient from 0.4T settling near 0.75T leave few flat
    steps: at noise 0.01 they never read a wrong word and most read a floor (at 0.05 the floor from 0.9T
    reads a bound's word: docs/THEOREM1.md)."""
    for family in LAST_TAIL:
        outcomes = _outcomes(family, 0.01, 10, seed=49)
        assert not any(o in RATE_WRONG[family] for o in outcomes), (family, outcomes)
        assert sum(o in RATE_TRUE[family] for o in outcomes) >= 5, (family, outcomes)


@pytest.mark.parametrize("family", EXPONENTIAL_FLOORS)
@pytest.mark.parametrize("noise", [0.5, 1.2])
def test_an_exponential_floor_never_reads_the_bounds_words(family, noise):
    """Issue 48: 40 groups at each end of the referee's noise range; the full sweep is the slow test."""
    outcomes = _outcomes(family, noise, 40, seed=480)
    assert sum(o in BOUND_WORDS for o in outcomes) <= 2, (family, noise, outcomes)


def test_one_over_root_t_still_reads_a_fall_toward_zero():
    outcomes = _outcomes("1/sqrt(T)", 1.0, 60, seed=481)
    assert sum(o in BOUND_WORDS for o in outcomes) >= 48, outcomes


@pytest.mark.slow
@pytest.mark.parametrize("family", EXPONENTIAL_FLOORS)
def test_done_when_exponential_floors_over_100_groups(family):
    """Issue 48's bar: no bound's word in at least 95% of 100 groups at noise 0.5, 1 and 1.2."""
    for noise in (0.5, 1.0, 1.2):
        outcomes = _outcomes(family, noise, 100, seed=482)
        assert sum(o in BOUND_WORDS for o in outcomes) <= 5, (family, noise)


@pytest.mark.slow
def test_done_when_one_over_root_t_over_100_groups():
    outcomes = _outcomes("1/sqrt(T)", 1.0, 100, seed=483)
    assert sum(o in BOUND_WORDS for o in outcomes) >= 80, outcomes


def test_slow_decay_does_not_read_no_decay_and_a_plateau_does():
    """T^−0.1 falls 26% over the window: "no decay" needs the fall bounded by a small stated amount."""
    slow = _outcomes("T^-0.1", 1.0, 30, seed=484)
    assert sum(o == "no decay" for o in slow) <= 2, slow
    flat = _outcomes("plateau", 0.5, 30, seed=485)
    assert sum(o == "no decay" for o in flat) >= 24, flat


def test_dependent_and_zero_mean_noise_never_read_a_fall_on_a_plateau_or_on_zero():
    for family in ("plateau, AR(1) noise 0.9", "zero mean (noise only)"):
        outcomes = _outcomes(family, 1.0, 30, seed=486)
        assert sum(o in RATE_WRONG[family] for o in outcomes) <= 3, (family, outcomes)
