"""docs/MATH.md names every constant a verdict rule uses with the value the code uses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analyses.assumption5 import drift_sum, scaling
from analyses.lemma2 import fixed_point
from analyses.lemma2 import targets as lemma2
from analyses.lemma2.fixed_point_controls import LABEL_FREE_STEP
from analyses.proposition1 import identity as proposition_identity
from analyses.systems import memory as systems
from analyses.systems import throughput as systems_throughput
from analyses.theorem1 import drift_budget, rate
from zerolock_theory.app.workflows import memory_map

MATH = re.sub(r"\s+", " ", (Path(__file__).resolve().parents[1] / "docs" / "MATH.md").read_text(encoding="utf-8"))


def _g(x: float) -> str:
    return f"{x:g}"


def _frac(x: float) -> str:
    """¼, ½, ¾ or the number."""
    return {0.25: "¼", 0.5: "½", 0.75: "¾"}.get(x, _g(x))


@pytest.mark.parametrize("phrase", [
    f"a horizon below {rate.MIN_HORIZON} steps",  # Theorem 1 (a)
    f"The fit window (T/{round(1 / (1 - rate.WINDOW))}, T]",
    f"cut into {rate.BLOCKS} blocks of equal width in log T",
    f"a fall faster than T^{{−1}} over any pair of blocks (β_lo > {rate.TRANSIENT_BETA:g}",
    "0.338 at T = 1000" if round(rate.bound_beta(1000), 3) == 0.338 else f"{rate.bound_beta(1000):.3f} at T = 1000",
    f"the fall over each of {rate.LATE_PARTS} tails",
    f"one-sided {round(100 * rate.FLOOR_ALPHA)}%: {rate.BEND_ALPHA:g} for the bend, {rate.TAIL_ALPHA:g} for each tail",
    f"more than {round(100 * (1 - rate.FLOOR_POWER))}% chance",
    f"by less than {round(100 * rate.NO_DECAY_FALL)}% of its mean",
    f"s's interval above {_g(drift_budget.S_THRESHOLD)}",  # Theorem 1 (b)
    f"a burn-in of max({drift_budget.BURN_IN_MIN}, T/{round(1 / drift_budget.BURN_IN_SHARE)}) steps",
    f"below a horizon of {drift_budget.MIN_HORIZON} steps",
    f"at least {scaling.MIN_STEPS} resolved scaled steps",  # Assumption 5
    f"a rise of more than {round(100 * drift_sum.RISE)}% of the block statistic on {drift_sum.RISE_BLOCKS} finer blocks",
    f"fallen by a factor {drift_sum.SETTLE:g} from the peak block's end",
    f"the first of {drift_sum.BLOCKS} blocks is left out",
    "dropping the largest fifth" if drift_sum.TRIM == 0.2 else f"dropping the largest {drift_sum.TRIM:g}",
    f"a bend below ×{drift_sum.RUN_GROWTH:g} is not resolved",
    f"Against {drift_sum.NEEDED_SLOPE - drift_sum.SLOPE_MARGIN:g} itself",
    f"\"close\" below {_g(lemma2.TV_SMALL)} everywhere",  # Lemma 2
    f"within TV {_g(fixed_point.RESIDUAL_FLOOR)} of the start readout",
    f"permuted among the batch's positions ({fixed_point.NULL_PERMUTATIONS} permutations)",
    f"label-free moves at s = {', '.join(_frac(s) for s in fixed_point.ARM_FLOOR_STEPS)} reach",
    f"never below {_g(fixed_point.ALONG_FLOOR)}",
    f"TV(m_k, g_k) < {_g(fixed_point.MIN_TARGET_TV)}",
    f"λ ∈ {{{', '.join(_frac(x) for x in fixed_point.FREE_POWERS)}, 1−α}}",
    f"τ ∈ {{{', '.join(_frac(x) for x in fixed_point.FREE_TEMPERATURES)}}}",
    f"its label-part floor at least {_g(fixed_point.CONTRAST_FLOOR)}",
    f"a label-free move at s = {_frac(LABEL_FREE_STEP)} (must not pass)",
    f"round-off allowed {proposition_identity.IDENTITY_TOL:.0e}".replace("e-0", "e-"),  # Proposition 1
    f"α ∈ {{{', '.join(_g(a) for a in proposition_identity.ALPHAS)}}}",
    f"V ∈ {{{', '.join(str(v) for v in proposition_identity.VOCABS)}}}",
    f"least {systems.MIN_MAP_POINTS} sizes the row decides from where the total ratio crosses 0.735",  # Systems
    f"{', '.join(str(f) for f in memory_map.FACTORS[:-1])} and {memory_map.FACTORS[-1]} times its own sequences",
    f"how many within {round(100 * systems_throughput.VALIDATED_WITHIN)}% is shown",
])
def test_math_states_the_code_constant(phrase):
    assert phrase in MATH, phrase


def test_the_rate_rule_has_one_window():
    assert rate.WINDOWS == (rate.WINDOW,) and rate.WINDOW == 0.95
