"""Assumption 5 by step scaling and the drift check, on synthetic runs with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import FACTORS, scaling_frame

from analyses.claims.text import group_statement
from analyses.drift import drift_check, growth_exponent
from analyses.results import Interval, NotMeasured
from analyses.scaling import group_scaling, scaling_verdict, seed_scaling
from reports.wording import drift_line


def _group(order: str, seeds=(0, 1, 2), **kw):
    return group_scaling([(f"s{s}", scaling_frame(order, s, **kw)) for s in seeds], "implemented")


def test_bounded_ratio_at_every_step_is_not_called_first_order():
    """ρ(c) ≤ C at every step and factor (φ second order): the rule must NOT say "no uniform C_fo"."""
    frame = scaling_frame("bounded", 0)
    rho = frame[[c for c in frame.columns if c.endswith("/ratio")]].to_numpy()
    assert np.nanmax(rho) <= 2.0  # the synthetic C
    group = _group("bounded")
    assert group.verdict == "bounded" and "no step-size-uniform" not in group_statement(group.figures())
    # ρ is constant in c: every seed's slope is 0 up to float rounding (~1e-18, platform-dependent)
    assert group.slope.low <= 1e-12 and group.slope.high >= -1e-12
    assert group_statement(group.figures()).startswith("consistent")


def test_first_order_phi_is_called_first_order():
    group = _group("first")
    assert group.verdict == "first order"
    assert group.slope.high < -0.5 and group.slope.contains(-1.0)
    assert group.share_positive.low > 0
    assert group_statement(group.figures()).startswith("no step-size-uniform C_fo: phi_t is first order (slope -1")


def test_nonpositive_phi_prime_everywhere_is_bounded():
    group = _group("first", share=0.0)
    assert group.share_positive == Interval(0.0, 0.0, 0.0, 0.95) and group.slope is None
    assert group.verdict == "bounded"


def test_two_seeds_are_not_testable():
    group = _group("first", seeds=(0, 1))
    assert group.verdict == "not testable" and group.share_positive is None
    assert "3 needed" in group_statement(group.figures())


def _interval(v):
    return None if v is None else Interval(*v)


@pytest.mark.parametrize(
    ("share", "slope", "verdict"),
    [
        (None, None, "not testable"),
        ((0.0, 0.0, 0.0), None, "bounded"),
        ((0.5, 0.3, 0.7), (-1.0, -1.1, -0.9), "first order"),
        ((0.5, 0.3, 0.7), (0.0, -0.2, 0.2), "bounded"),
        ((0.5, -0.1, 0.9), (-1.0, -1.1, -0.9), "inconclusive"),
        ((0.5, 0.3, 0.7), (-0.5, -1.0, 0.0), "inconclusive"),
        ((0.5, 0.3, 0.7), None, "inconclusive"),
    ],
)
def test_every_verdict_is_reachable(share, slope, verdict):
    assert scaling_verdict(_interval(share), _interval(slope)) == verdict


def test_seed_statistics_of_an_exact_first_order_run():
    seed = seed_scaling(scaling_frame("first", 0, share=1.0, noise=0.0), "implemented")
    assert seed.share_positive == 1.0 and seed.factors == list(FACTORS)
    assert seed.slope == pytest.approx(-1.0, abs=0.05)  # φ = c·φ′ + c²·b: close to −1
    with pytest.raises(NotMeasured, match="scaling"):
        seed_scaling(pd.DataFrame({"step": [0]}), "implemented")


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
