"""The controls of Theorem 1's bound test, through the same code (``theorem1_bound.bound_row``):
backprop under the theorem's schedule on the model, and convex logistic regression with SGD.
A control that is "not consistent" marks the Theorem 1 rows "test not calibrated"."""

from __future__ import annotations

from analyses.claims.registry import Claim, register
from analyses.claims.theorem1_bound import CALIBRATION, OUTCOMES, bound_row, measured, reason, short

PAPER = "A rule that tests Theorem 1's bound must accept it where it holds (a positive control)."


def _control(key: str, name: str, title: str, question: str, primary: str) -> Claim:
    return register(Claim(
        key=key, title=title, paper=PAPER, question=question, primary=primary,
        outcomes={k: v for k, v in OUTCOMES.items() if k != "test not calibrated"},
        rule=lambda inputs: bound_row(key, name, inputs, control=True), measured=measured, short=short, reason=reason,
        figure="convergence", control=True, tests=CALIBRATION,
    ))


BACKPROP = _control("control_backprop", "convergence_backprop", "Control: backprop under Theorem 1's schedule",
                    "Does backprop's gradient norm pass the bound test it should pass?",
                    "backprop, SGD with eta_t ~ 1/sqrt(t)")
LOGISTIC = _control("control_logistic", "control_logistic", "Control: convex logistic regression, SGD",
                    "Does convex logistic regression, where the bound holds, pass the bound test?",
                    "logistic regression, SGD with eta_t ~ 1/sqrt(t), 10 seeds")
