"""Controls of Theorem 1 (a) through the same code: the toy controls read what they must."""

from __future__ import annotations

import numpy as np

from analyses.results import load_result
from analyses.theorem1.controls import (
    NEGATIVE,
    POSITIVE,
    ControlCheck,
    LogisticToy,
    RateControls,
    failed_controls,
    logistic_table,
    rate_controls,
)
from analyses.theorem1.convergence import FLOOR_COLUMN, with_noise_floor
from analyses.theorem1.families import rate_series
from analyses.theorem1.rate import DECAYS, describe_rate


def test_toy_controls_pass_and_a_wrong_extra_control_is_reported_failed():
    """The controls registered for the rule (docs/THEOREM1.md, 2026-12-03): the positive toy reads a
    decay; its shuffled series and constant-step SGD do not; a wrong extra control is reported failed."""
    rng = np.random.default_rng(5)
    flat = describe_rate([rate_series("plateau", 1000, rng, 0.3) for _ in range(5)], label="flat")
    decaying = describe_rate([rate_series("1/sqrt(T)", 1000, rng, 0.3) for _ in range(5)], label="decays")
    result = rate_controls(extra={"must decay (flat on purpose)": (flat, POSITIVE),
                                  "floor that decays": (decaying, NEGATIVE)})
    outcomes = {c.name: c.outcome for c in result.checks}
    assert POSITIVE == DECAYS and not set(NEGATIVE) & set(DECAYS)
    assert outcomes["positive: logistic, SGD eta_t ~ 1/sqrt(t)"] in DECAYS
    assert outcomes["negative: the positive control's series shuffled inside the window"] in NEGATIVE
    assert outcomes["negative: logistic, constant step"] in NEGATIVE
    descriptive = [c for c in result.checks if c.descriptive]
    assert [c.name for c in descriptive] == ["descriptive: logistic, biased |g_t|^2 (a floor plus a falling "
                                             "|grad F|^2)"] and all(c.passed for c in descriptive)
    assert result.failed == ["must decay (flat on purpose)", "floor that decays"]
    again = load_result(result.to_json())
    assert isinstance(again, RateControls) and again.failed == result.failed


def test_failed_controls_lists_the_failures_in_order():
    checks = [ControlCheck("a", ["no decay"], "no decay", True), ControlCheck("b", ["no decay"], "not testable", False)]
    assert failed_controls(checks) == ["b"]


def test_the_noise_floor_column_estimates_the_bias_of_the_squared_minibatch_norm():
    # on the toy the exact ||grad F||^2 is known: ||g_t||^2 - G-hat_t and ||g_t||^2 - ||grad F||^2 both
    # estimate tr(Sigma_t)/B, so their means over a run agree; G-hat_t's own mean is far below the floor
    table = with_noise_floor(logistic_table(2000, range(3), LogisticToy(batch=16)), "grad_norm_sq", "grad_sq_unbiased")
    floor, exact = table[FLOOR_COLUMN], table["grad_norm_sq"] - table["full_grad_sq"]
    assert abs(floor.mean() - exact.mean()) < 0.05 * exact.mean()
    assert table["grad_sq_unbiased"].mean() < 0.5 * exact.mean()
