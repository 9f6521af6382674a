"""Theorem 1 (a), the rate described: block identities, the late test in linear time, the rule's
outcomes, the families that try to fool it, its power under dependence, and its words
(docs/THEOREM1.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analyses.results import Interval, load_result
from analyses.theorem1.families import (
    PLATEAU_FAMILIES,
    RATE_FAMILIES,
    RATE_TRUE,
    RATE_WRONG,
    floor_start,
    rate_mean,
    rate_series,
    states_floor,
)
from analyses.theorem1.rate import (
    BEND_MARGIN,
    BLOCKS,
    BOUND_FORMS,
    BOUND_WORDS,
    DECAYS,
    FALLS_AT,
    FALLS_SLOWER,
    FALLS_UNDISTINGUISHED,
    FLATTENS,
    LATE_MARGIN,
    MIN_HORIZON,
    NO_DECAY,
    NOT_TESTABLE,
    RATE_OUTCOMES,
    WINDOW,
    RateDescription,
    RateFigures,
    block_edges,
    bound_beta,
    bound_late_fall,
    bound_level,
    bound_step_level,
    bound_tail_falls,
    describe_rate,
    late_starts,
    noise_dependence,
    noise_ratio,
    rate_from_table,
    rate_outcome,
    seed_rate,
)
from analyses.theorem1.rate_power import rate_power


def _group(family: str, rng, noise: float, seeds: int = 5, horizon: int = 1000) -> RateDescription:
    return describe_rate([rate_series(family, horizon, rng, noise) for _ in range(seeds)])


def test_blocks_are_geometric_and_a_power_law_gives_its_exponent_whatever_its_scale():
    edges = block_edges(1000)
    assert edges[0] == pytest.approx((1 - WINDOW) * 1000) and edges[-1] == pytest.approx(1000)
    assert np.allclose(edges[1:] / edges[:-1], (1 / (1 - WINDOW)) ** (1 / BLOCKS))
    t = np.arange(1.0, 20001.0)
    for beta in (0.2, 0.5, 0.9):
        for scale in (1e-3, 7.0):
            fit = seed_rate(t, scale * t**-beta)
            assert fit.beta == pytest.approx(beta, abs=5e-3) and fit.beta_early == pytest.approx(beta, abs=5e-3)
            assert fit.slowing == pytest.approx(0.0, abs=5e-3) and fit.decline_late > 0


def test_b_is_zero_on_the_slowest_member_of_the_bounds_class_and_its_sign_tells_faster_from_slower():
    """The comparator is the slowest-decaying standard form of C·log T/√T: the per-step level log(T+1)/√T
    (late-pair exponent 0.338 at T = 1000) reads b = 0 and tail excesses 0; the increments of
    T·log(T+1)/√T (0.378) read b < 0 and positive excesses, at the bound's rate or faster."""
    t, level = rate_mean("log(T+1)/sqrt(T) (the bound)", 1000)
    assert np.allclose(level, bound_level(t))
    step = seed_rate(t, bound_step_level(t))
    assert step.b == pytest.approx(0.0, abs=1e-12) and np.allclose(step.tail_excess, 0.0, atol=1e-12)
    increments = seed_rate(t, level)
    assert increments.b == pytest.approx(0.338 - 0.378, abs=2e-3) and min(increments.tail_excess) > 0
    assert bound_beta(1000) == pytest.approx(min(seed_rate(t, f(t)).beta for f in BOUND_FORMS))
    assert bound_beta(1000) == pytest.approx(0.338, abs=5e-4)
    for k, fall in enumerate(bound_tail_falls(1000)):
        assert fall == pytest.approx(min(seed_rate(t, f(t)).tail_falls[k] for f in BOUND_FORMS))
    assert seed_rate(*rate_mean("1/sqrt(T)", 1000)).b < 0 < seed_rate(*rate_mean("T^-0.2", 1000)).b
    assert seed_rate(t, t**-0.3).b > 0  # slower than every member of the class


def test_a_plateau_has_no_fall_and_a_step_leaves_one_pair_flat():
    t, flat = rate_mean("plateau", 1000)
    fit = seed_rate(t, flat)
    assert fit.decline_early == 0 and fit.decline_late == 0 and fit.beta == 0
    for family in ("step drop at T=300 onto a plateau", "step drop at T=600 onto a plateau",
                   "step drop at T=850 onto a plateau"):
        fit = seed_rate(*rate_mean(family, 1000))
        assert min(fit.decline_early, fit.decline_late) == 0, family


def test_noise_ratio_measures_the_families_convention():
    rng = np.random.default_rng(0)
    for noise in (0.5, 3.0):
        ratios = [noise_ratio(*rate_series("1/sqrt(T)", 1000, rng, noise)) for _ in range(20)]
        assert np.median(ratios) == pytest.approx(noise, rel=0.05)


def test_noise_dependence_measures_the_size_and_the_autocorrelation():
    rng = np.random.default_rng(4)
    for family, phi in (("1/sqrt(T)", 0.0), ("1/sqrt(T), AR(1) noise 0.9", 0.9)):
        found = [noise_dependence(*rate_series(family, 1000, rng, 1.0)) for _ in range(20)]
        assert np.median([n for n, _ in found]) == pytest.approx(1.0, abs=0.1), family
        assert np.median([p for _, p in found]) == pytest.approx(phi, abs=0.05), family


def test_the_late_test_reads_the_bound_and_a_floor_in_linear_time():
    """On the slowest member of the bound's class every tail's excess is 0; a power law faster than the
    bound has a positive late excess, T^−0.338 (the class's slowest exponent) one within the margin; a level
    flat from T = 500 has no fall over the last half and the bound's whole fall as its shortfall."""
    t = np.arange(1.0, 1001.0)
    assert np.allclose(seed_rate(t, bound_step_level(t)).tail_excess, 0.0, atol=1e-12)
    assert seed_rate(*rate_mean("1/sqrt(T)", 1000)).late_excess > 0.05
    assert seed_rate(*rate_mean("T^-0.378 (the bound's exponent at T = 1000)", 1000)).late_excess > 0
    assert abs(seed_rate(t, t**-0.338).late_excess) < LATE_MARGIN
    flat = seed_rate(*rate_mean("1/sqrt(T), flat from T=500", 1000))
    assert flat.late_fall == pytest.approx(0.0, abs=1e-9) and flat.late_excess == pytest.approx(-bound_late_fall(1000))
    assert np.allclose(late_starts(1000), [500, 625, 750, 875])
    for beta in (0.2, 0.5, 0.9):
        fit = seed_rate(*(lambda t: (t, 3.0 * t**-beta))(np.arange(1.0, 1001.0)))
        assert fit.late_shortfall == pytest.approx(0.0, abs=1e-3) and abs(fit.bend) < BEND_MARGIN


def _iv(lo: float, hi: float) -> Interval:
    return Interval((lo + hi) / 2, lo, hi, 0.95)


def test_the_words_follow_the_intervals():
    up, flat, down, zero = _iv(0.1, 0.5), _iv(-0.2, 0.3), _iv(-0.5, -0.1), _iv(-0.05, 0.05)
    beta, starts = _iv(0.2, 0.8), [500.0, 625.0, 750.0, 875.0]
    tails, holds, short = [up, up, flat, flat], _iv(-0.4, 0.2), (zero, zero, _iv(-0.2, -0.01), zero)

    def rule(early=up, late=up, b=holds, bend=zero, excess=zero, window=up, tails=tails, horizon=1000,
             seeds=5, beta=beta, tail_excess=short):
        figures = RateFigures(early, late, beta, b, None, excess, window, tails, None, bend, tail_excess)
        return rate_outcome(figures, starts, horizon, seeds)

    assert rule(b=_iv(-0.4, -0.01)) == (FALLS_AT, "faster", None)
    assert rule() == (FALLS_UNDISTINGUISHED, "undistinguished", None)
    assert rule(b=_iv(0.05, 0.3)) == (FALLS_SLOWER, "slower", None)
    assert rule(bend=_iv(0.1, 0.6)) == (FLATTENS, "slowing", 750)
    assert rule(excess=_iv(-0.4, -0.1)) == (FLATTENS, "late_flat", 750)
    assert rule(tail_excess=(zero, zero, zero, _iv(-0.3, -0.05))) == (FLATTENS, "late_flat", 875)
    assert rule(excess=_iv(-0.4, -0.1), tails=[up] * 4) == (FALLS_SLOWER, "still_falling", None)
    assert rule(bend=_iv(0.1, 0.6), tails=[up] * 4) == (NOT_TESTABLE, "ambiguous", None)
    assert rule(b=_iv(-0.9, -0.5), beta=_iv(1.2, 2.0)) == (NOT_TESTABLE, "transient", None)
    assert rule(early=flat, late=flat, window=_iv(-0.05, 0.05)) == (NO_DECAY, "flat", None)
    assert rule(early=flat, late=flat, window=_iv(-0.05, 0.2)) == (NOT_TESTABLE, "ambiguous", None)
    assert rule(late=down) == (NOT_TESTABLE, "rising", None)
    assert rule(horizon=MIN_HORIZON - 1) == (NOT_TESTABLE, "short_horizon", None)
    assert rule(early=None, seeds=1) == (NOT_TESTABLE, "few_seeds", None)
    assert rule(seeds=0, horizon=0) == (NOT_TESTABLE, "no_seed", None)


EXPONENTIAL_FLOORS = ("1 + 16 exp(-T/100) (a floor)", "1 + 32 exp(-T/100) (a floor)")
SHOWN = tuple(f for f in PLATEAU_FAMILIES if f not in ("1/sqrt(T), flat from T=750", "1/sqrt(T), flat from T=900",
                                                        "1 + 4 exp(-T/150) (a floor)"))
"""The floor families the rule is documented to keep off the bound's words at every noise level
(the floors reached at 3T/4 and 0.9T, and 1 + 4e^−T/150, are documented with their rates)."""


@pytest.mark.parametrize("family", SHOWN)
def test_no_floor_family_reads_the_bounds_words(family):
    """Issues 38 and 48: a fall onto a floor never reads a fall toward zero at or near the bound's
    rate (40 groups at each noise level; 6 of 40 would be a failure at a documented rate ≤ 0.05). The
    exponential floors of issue 48 at the noise it names, 0.5 to 1.2 (at 3 see docs/THEOREM1.md)."""
    rng = np.random.default_rng(38)
    for noise in (0.5, 1.0, 1.2) if family in EXPONENTIAL_FLOORS else (0.5, 1.0, 3.0):
        groups = [_group(family, rng, noise) for _ in range(40)]
        if family in EXPONENTIAL_FLOORS:  # issue 48's bar is on the words themselves, caveat or not
            wrong = sum(d.outcome in BOUND_WORDS for d in groups)
        else:  # a bound's word whose caveat starts at or before the floor states the floor
            wrong = sum(d.outcome in BOUND_WORDS and not states_floor(family, d) for d in groups)
        assert wrong <= 5, (family, noise, wrong)


def test_a_late_floor_is_read_at_low_noise_and_the_slow_exponential_mostly():
    rng = np.random.default_rng(39)
    outcomes = [_group("1/sqrt(T), flat from T=750", rng, 0.05).outcome for _ in range(10)]
    assert sum(o == FLATTENS for o in outcomes) >= 9, outcomes
    family = "1 + 4 exp(-T/150) (a floor)"
    groups = [_group(family, rng, 1.0) for _ in range(40)]
    assert floor_start(family) == pytest.approx(150 * np.log(400), abs=1)
    wrong = [d.sentence for d in groups if d.outcome in BOUND_WORDS and not states_floor(family, d)]
    assert len(wrong) <= 2, wrong  # a bound's word carries a caveat from at or before T = 899


def test_decaying_families_read_a_fall_toward_zero_at_noise_one():
    """≥ 80% of 1/√T and of the bound decided correctly at noise 1 (documented in docs/THEOREM1.md)."""
    power = rate_power(1.0, 5, 1000, reps=100, seed=7)
    assert min(power.correct.values()) >= 0.8, power
    assert power.phi == 0.0 and "AR(1)" in power.method


def test_power_under_dependent_noise_uses_the_measured_autocorrelation():
    """AR(1) φ = 0.9: re-simulated with the measured φ the power is low, as it is; with i.i.d. noise of
    the same size it would read high."""
    rng = np.random.default_rng(8)
    groups = [_group("1/sqrt(T), AR(1) noise 0.9", rng, 1.0) for _ in range(40)]
    actual = np.mean([g.outcome in RATE_TRUE["1/sqrt(T)"] for g in groups])
    first = groups[0]
    assert first.phi == pytest.approx(0.9, abs=0.05)
    dependent = rate_power(first.noise, 5, 1000, reps=60, seed=1, phi=first.phi)
    independent = rate_power(first.noise, 5, 1000, reps=60, seed=1)
    assert actual <= 0.25 and dependent.correct["1/sqrt(T)"] <= 0.35, (actual, dependent)
    assert independent.correct["1/sqrt(T)"] >= 0.7, independent


def test_outcomes_never_contradict_the_decaying_families():
    rng = np.random.default_rng(11)
    for family in ("1/sqrt(T)", "log(T+1)/sqrt(T) (the bound)", "T^-0.2", "rise over the first third, then 1/sqrt(T)"):
        for noise in (0.5, 3.0):
            outcomes = [_group(family, rng, noise).outcome for _ in range(20)]
            assert sum(o in RATE_WRONG[family] for o in outcomes) <= 4, (family, noise, outcomes)


def test_low_noise_decides_every_power_law_and_each_outcome_is_reachable():
    rng = np.random.default_rng(5)
    seen = {_group(family, rng, 0.1).outcome for family in RATE_FAMILIES}
    t = np.arange(1.0, 1001.0)
    step = bound_step_level(t)  # the comparator itself: b = 0, its rate not distinguished from the bound's
    draw = np.random.default_rng(1)
    slowest = describe_rate([(t, step + 0.1 * step.mean() * draw.standard_normal(t.size)) for _ in range(5)])
    assert slowest.outcome == FALLS_UNDISTINGUISHED
    assert set(RATE_OUTCOMES) <= seen | {slowest.outcome}
    for family in ("1/sqrt(T)", "T^-0.2", "plateau", "1 + 16 exp(-T/100) (a floor)"):
        assert _group(family, rng, 0.1).outcome in RATE_TRUE[family], family


def test_the_p_value_is_the_decisive_tests():
    rng = np.random.default_rng(2)
    decays = _group("1/sqrt(T)", rng, 0.5)
    assert decays.outcome in DECAYS and 0 <= decays.p_value < 0.05
    floor = _group("1 + 16 exp(-T/100) (a floor)", rng, 0.5)
    assert floor.outcome == FLATTENS and 0 <= floor.p_value < 0.3 and floor.floor_from in late_starts(1000)
    assert floor.sentence == f"flattens: a floor is not excluded from T = {floor.floor_from}"
    flat = _group("plateau", rng, 0.5)
    assert flat.outcome == NO_DECAY and 0 <= flat.p_value < 0.05
    undecided = _group("plateau", rng, 30.0)
    assert undecided.outcome == NOT_TESTABLE and undecided.p_value is None


def test_single_series_keeps_point_estimates_without_intervals():
    rng = np.random.default_rng(1)
    result = describe_rate([rate_series("1/sqrt(T)", 1000, rng, 0.1)])
    assert (result.outcome, result.reason) == (NOT_TESTABLE, "few_seeds")
    assert result.beta is None and result.b is None
    assert result.beta_point == pytest.approx(0.5, abs=0.1)
    cli = result.to_cli()
    assert cli["beta"]["low"] is None and cli["beta"]["estimate"] == pytest.approx(result.beta_point)


def test_short_horizon_table_form_and_round_trip():
    rng = np.random.default_rng(2)
    short = describe_rate([rate_series("1/sqrt(T)", 300, rng, 0.1) for _ in range(5)])
    assert (short.outcome, short.reason) == ("not testable", "short_horizon") and not short.per_seed
    assert load_result(short.to_json()) == short  # no NaN: undefined figures are None
    parts = [pd.DataFrame({"step": t - 1, "g": g, "seed": s})
             for s, (t, g) in enumerate(rate_series("plateau", 1000, rng, 0.3) for _ in range(5))]
    full = rate_from_table(pd.concat(parts), "g", seed_column="seed")
    assert full.seeds == 5 and full.label == "g" and full.outcome in RATE_OUTCOMES
    again = load_result(full.to_json())
    assert isinstance(again, RateDescription) and again.to_cli() == full.to_cli()
