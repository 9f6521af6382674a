"""Assumption 5's "more often than chance": the share the row shows is the share it tests against ½."""

from __future__ import annotations

import numpy as np

from analyses.assumption5.claim import measured
from analyses.assumption5.scaling import (
    StepScaling,
    chance_outcome,
    group_from_seeds,
    seed_from_arrays,
)
from analyses.verdict import Evidence

FACTORS = np.array([2.0**-i for i in range(7)])


def _seed(run: str, zero: int, positive: int, negative: int):
    """φ(c) = c² (a zero limit), c (positive) or −c (negative) at each scaled step."""
    rows = [FACTORS**2] * zero + [FACTORS] * positive + [-FACTORS] * negative
    phi = np.array(rows)
    return seed_from_arrays(run, FACTORS, phi, np.maximum(phi, 0) / FACTORS**2, None)


def test_zero_limits_are_left_out_of_the_shown_share_as_of_the_tested_one():
    """35% of the resolved steps positive, 100% of those with a sign: the row shows and tests 100%."""
    group = group_from_seeds([_seed(f"s{i}", 20, 11, 0) for i in range(5)], group="g", trained="forward")
    assert group.n_zero == 100 and group.n_resolved == 155
    assert group.share_positive.estimate == 1.0
    assert chance_outcome(group.share_positive) == group.chance == "more often than chance"
    text = measured(Evidence(group.reason, result=StepScaling("implemented", [group], [])))
    assert "100% [" in text and "of the 55 resolved scaled steps with a non-zero phi'" in text
    assert "100 with phi' = 0 left out" in text and "the one tested against 1/2" in text


def test_a_balanced_sign_is_chance_whatever_the_zeros():
    """Half of the signed steps positive: not distinguished from chance, and the share shown is 50%."""
    group = group_from_seeds([_seed(f"s{i}", 21, 5, 5) for i in range(5)], group="g", trained="forward")
    assert group.share_positive.estimate == 0.5
    assert group.chance == "not distinguished from chance" == chance_outcome(group.share_positive)
