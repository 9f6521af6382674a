"""The abstract's comparison with backprop on the global ‖∇L‖² (not Theorem 1): the same bound
test on ZeroLock forward's primary group, backprop's beside it (``theorem1_bound.bound_row``)."""

from __future__ import annotations

from analyses.claims.registry import Claim, ClaimInputs, register
from analyses.claims.theorem1_bound import (
    CALIBRATION,
    OUTCOMES,
    bound_row,
    measured,
    primary_test,
    reason,
    short,
)
from analyses.verdict import Verdict

KEY = "global_vs_backprop"


def rule(inputs: ClaimInputs) -> Verdict:
    """ZeroLock's global bound test decides; backprop's is shown beside it."""
    return bound_row(KEY, "convergence_global", inputs, beside=primary_test(inputs, "convergence_global_backprop"))


CLAIM = register(Claim(
    key=KEY,
    title="Abstract: global ‖∇L‖², ZeroLock vs backprop (not Theorem 1)",
    paper="Abstract: ZeroLock's convergence rate differs from backpropagation's only by polylogarithmic factors.",
    question="Does ZeroLock's global task-loss gradient decay like backprop's under the theorem's schedule?",
    primary="ZeroLock forward and backprop, SGD with eta_t ~ 1/sqrt(t)",
    outcomes=OUTCOMES, rule=rule, measured=measured, short=short, reason=reason, figure="convergence",
    tests=CALIBRATION,
))
