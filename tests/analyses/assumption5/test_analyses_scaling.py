"""Assumption 5 by step scaling and the drift check, on synthetic runs with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import FACTORS, laid_out, scaling_frame

from analyses.assumption5.scaling import (
    CHANCE_OUTCOMES,
    NONPOSITIVE,
    POSITIVE,
    UNIFORM_OUTCOMES,
    UNRESOLVED,
    DirectionCounts,
    StepScaling,
    chance_outcome,
    classify_steps,
    group_scaling,
    phi_prime,
    scaling_outcome,
    seed_scaling,
)
from analyses.descriptive.drift import drift_check, growth_exponent
from analyses.results import Interval, NotMeasured, load_result
from reports.wording import drift_line
from zerolock_theory.records import SCALING


def _group(order: str, seeds=range(5), **kw):
    return group_scaling([(f"s{s}", scaling_frame(order, s, **kw)) for s in seeds], "implemented")


def test_bounded_phi_holds_with_every_step_resolved():
    """φ(c) = c²·a (φ′ = 0, ρ(c) ≤ 2 at every c): "holds", although φ(c_min)/c_min > 0."""
    frame = scaling_frame("bounded", 0)
    assert (frame[SCALING.key("implemented", FACTORS[-1], "phi")] > 0).all()  # the naive φ′ is positive
    group = _group("bounded")
    assert (group.uniform, group.uniform_reason) == ("holds", "resolved")
    assert (group.outcome, group.reason) == ("not testable", "no_along")  # no train/lr: no trend along the run
    assert group.n_counted == 5 and group.n_resolved == 150 and group.n_positive == group.n_unresolved == 0
    # every φ′ zero: no step has a sign, so no share (shown or tested) against ½
    assert group.share_positive is None and group.n_zero == 150 and group.chance == "not testable"
    assert group.slope is None  # no positive step: no slope to show


def test_random_like_updates_are_not_distinguished_from_chance():
    """φ′ > 0 on a coin flip: the uniform form fails, the share is not distinguished from ½."""
    group = _group("first", share=0.5)
    assert (group.uniform, group.chance) == ("fails at some scaled steps", "not distinguished from chance")
    assert group.chance_p > 0.05
    assert group.difference.contains(0.0) and group.share_positive.low > 0.3
    assert group.slope.contains(-1.0)  # the smoothness check: −1 whenever φ′ > 0


def test_systematically_positive_phi_prime_is_more_often_than_chance():
    group = _group("first", share=1.0)
    assert group.chance == "more often than chance" and group.chance_p < 1e-6
    assert group.share_positive.estimate == 1.0 and group.difference.low > 0.3
    assert group.random_share.contains(0.5)


def test_share_below_chance_reads_less_often():
    group = _group("first", share=0.2)
    assert group.chance == "less often than chance" and group.difference.high < 0


def test_too_few_seeds_or_steps_or_no_baseline_are_not_testable():
    two = _group("first", seeds=(0, 1))
    assert (two.uniform, two.chance) == ("not testable", "not testable")
    short = _group("first", steps=20)
    assert (short.uniform, short.uniform_reason, short.n_counted) == ("not testable", "few_seeds", 0)
    assert _group("first", steps=20).seeds[0].actual.n_resolved == 20  # measured, but below MIN_STEPS
    alone = _group("first", share=1.0, random_share=None)  # ½ is exact: no baseline is needed
    assert (alone.uniform, alone.chance) == ("fails at some scaled steps", "more often than chance")
    assert _group("bounded", random_share=None).uniform == "holds"


def test_one_unresolved_step_prevents_holds():
    frames = [scaling_frame("bounded", s) for s in range(5)]
    frames[2].loc[4, SCALING.key("implemented", 0.25, "phi")] = np.nan  # one factor missing at one step
    group = group_scaling([(f"s{i}", f) for i, f in enumerate(frames)], "implemented")
    assert (group.uniform, group.uniform_reason, group.n_unresolved) == ("not testable", "unresolved", 1)


def test_classify_steps_of_known_curves():
    c = np.asarray(FACTORS)
    curves = np.stack([
        2e-3 * c + 5e-2 * c**2,  # tiny φ′ > 0 under a large curvature: still resolved positive
        -1e-3 * c + 1e-3 * c**2,  # φ′ < 0
        3e-3 * c**2 - 1e-3 * c**3,  # φ′ = 0
        1e-6 * (-1.0) ** np.arange(7),  # float noise only: the two extrapolations disagree
    ])
    assert classify_steps(c, curves).tolist() == [POSITIVE, NONPOSITIVE, NONPOSITIVE, UNRESOLVED]
    est, err, scale = phi_prime(c, curves[:1])
    assert est[0] == pytest.approx(2e-3, rel=1e-9) and err[0] < 1e-12 and scale[0] == pytest.approx(5.2e-2)
    with pytest.raises(ValueError, match="factors"):
        classify_steps(c[:3], curves[:, :3])


@pytest.mark.parametrize(
    ("seeds", "positive", "unresolved", "outcome"),
    [(2, 0, 0, "not testable"), (5, 0, 0, "holds"), (5, 0, 3, "not testable"), (5, 4, 0, "fails at some scaled steps")],
)
def test_every_uniform_outcome_is_reachable(seeds, positive, unresolved, outcome):
    assert scaling_outcome(seeds, positive, unresolved)[0] == outcome
    assert outcome in UNIFORM_OUTCOMES


@pytest.mark.parametrize(("share", "outcome"), [(None, "not testable"), ((0.7, 0.6, 0.8), "more often than chance"),
                                                ((0.3, 0.2, 0.4), "less often than chance"),
                                                ((0.55, 0.45, 0.65), "not distinguished from chance")])
def test_every_chance_outcome_is_reachable(share, outcome):
    assert chance_outcome(None if share is None else Interval(*share)) == outcome
    assert outcome in CHANCE_OUTCOMES


def test_seed_counts_and_pairs_of_one_run():
    seed = seed_scaling(scaling_frame("first", 0, share=1.0, noise=0.0), "implemented")
    assert seed.actual == DirectionCounts(30, 30, 30) and seed.factors == list(FACTORS) and seed.counted
    assert len(seed.paired_actual) == len(seed.paired_random) == seed.random.n_resolved == 30
    assert seed.slope == pytest.approx(-1.0, abs=0.05)  # φ = c·φ′ + c²·b: close to −1
    with pytest.raises(NotMeasured, match="scaling"):
        seed_scaling(laid_out(pd.DataFrame({"step": [0]}), 3), "implemented")


def test_result_round_trips_through_json():
    result = StepScaling("implemented", [_group("first", share=1.0), _group("bounded")], ["bad"])
    again = load_result(result.to_json())
    assert again == result and again.primary.chance == "more often than chance"


def test_drift_exponents_of_known_sums():
    t = np.arange(1, 401, dtype=float)
    assert growth_exponent(t, np.sqrt(t)) == pytest.approx(0.5, abs=1e-9)
    frames = []
    for s in range(3):
        rng = np.random.default_rng(s)
        phi = 1 / np.sqrt(t) * (1 + 0.1 * rng.normal(size=t.size))  # D_T ~ √T
        q = 1 / t  # Σ q ~ log T
        frames.append((f"s{s}", pd.DataFrame({"step": t - 1, "probe/stability/paper/total/phi": phi,
                                               "probe/stability/paper/total/q": q})))
    drift = drift_check(frames, "paper")
    assert drift.d_exponent.contains(0.5) or abs(drift.d_exponent.estimate - 0.5) < 0.02
    assert drift.q_exponent.estimate < 0.3
    assert drift.runs[0].s[-1] == pytest.approx(drift.runs[0].d[-1])  # φ > 0: signed sum = D_T
    assert "D_T ~ T^" in drift_line(len(drift.runs), drift.d_exponent, drift.q_exponent)
