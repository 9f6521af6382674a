"""docs/MATH.md names every constant a verdict rule uses with the value the code uses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analyses import drift_budget, fixed_point, lemma2, rate, scaling

MATH = re.sub(r"\s+", " ", (Path(__file__).resolve().parents[1] / "docs" / "MATH.md").read_text(encoding="utf-8"))


def _g(x: float) -> str:
    return f"{x:g}"


@pytest.mark.parametrize("phrase", [
    f"a horizon below {rate.MIN_HORIZON} steps",  # Theorem 1 (a)
    "(the last half of the run; the last third as the sensitivity check)",
    f"s's interval above {_g(drift_budget.S_THRESHOLD)}",  # Theorem 1 (b)
    f"a burn-in of max({drift_budget.BURN_IN_MIN}, T/{round(1 / drift_budget.BURN_IN_SHARE)}) steps",
    f"below a horizon of {drift_budget.MIN_HORIZON} steps",
    f"at least {scaling.MIN_STEPS} resolved scaled steps",  # Assumption 5
    f"\"small\" below {_g(lemma2.TV_SMALL)} everywhere",  # Lemma 2
    f"within TV {_g(fixed_point.RESIDUAL_FLOOR)} of the start readout",
])
def test_math_states_the_code_constant(phrase):
    assert phrase in MATH, phrase


def test_the_windows_are_a_half_and_a_third():
    assert rate.WINDOWS == (0.5, 1.0 / 3.0)
