"""Theorem 1's bound test on the local Ĝ_t of R (reverse) and R̄ (forward); shared by the global
comparison with backprop and the controls.

The primary group's bound test (``analyses.convergence``, ``analyses.theorem1``): "consistent",
"not consistent", "not testable" (at this horizon); if a positive control (convex logistic
regression, backprop under the theorem's schedule) is "not consistent", the rows read
"test not calibrated".
"""

from __future__ import annotations

from analyses.claims.registry import (
    NOT_MEASURED,
    NOT_TESTABLE,
    Claim,
    ClaimInputs,
    Outcome,
    register,
    skipped,
)
from analyses.claims.text import bound_headline, bound_reason
from analyses.convergence import BoundTest
from analyses.results import Result
from analyses.theorem1 import BoundSet
from analyses.verdict import BoundFigures, Evidence, Verdict

CONTROLS = (("control_logistic", "logistic control"), ("convergence_backprop", "backprop control"))


def primary_test(inputs: ClaimInputs, name: str) -> BoundTest | None:
    """The bound test of ``name``: the test itself, or its set's primary group's."""
    found = inputs.get(name, Result)
    if isinstance(found, BoundTest):
        return found
    return found.primary_test() if isinstance(found, BoundSet) else None


def uncalibrated(inputs: ClaimInputs) -> tuple[str, ...]:
    """Controls whose bound test says "not consistent" (the rule rejects a true bound)."""
    return tuple(label for name, label in CONTROLS
                 if (test := primary_test(inputs, name)) is not None and test.verdict == "not consistent")


def _outcome(test: BoundTest) -> str:
    if test.verdict == "not testable" and test.seeds and test.horizon < test.min_horizon:
        return "not testable at this horizon"
    return test.verdict


def bound_row(key: str, name: str, inputs: ClaimInputs, *, control: bool = False,
              beside: BoundTest | None = None) -> Verdict:
    """A bound-test row from the primary group of ``name``; ``beside`` is another bound test shown
    next to it (backprop's, on the global row)."""
    if not isinstance(inputs.get(name, Result), (BoundSet, BoundTest)):
        return skipped(key, name, inputs)
    test = primary_test(inputs, name)
    other = None if beside is None else beside.figures()
    if test is None:
        return Verdict(key, "not testable", Evidence("no_theorem_schedule", backprop=other))
    bad = () if control else uncalibrated(inputs)
    evidence = Evidence("uncalibrated" if bad else "bound", excluded=tuple(test.excluded), bound=test.figures(),
                        backprop=other, uncalibrated=bad)
    return Verdict(key, "test not calibrated" if bad else _outcome(test), evidence)


def _bound(ev: Evidence) -> BoundFigures:
    assert ev.bound is not None, f"a {ev.reason!r} row carries its bound test"
    return ev.bound


def _detail(bound: BoundFigures) -> str:
    beta = f"beta = {bound.beta} (descriptive)" if bound.beta is not None else "beta not estimable"
    return f"{bound.label}: {bound_reason(bound)}; {beta}"


def measured(ev: Evidence) -> str:
    """b with its interval, seeds and horizon; backprop's beside it on a comparison row."""
    text = bound_headline(_bound(ev)) if ev.reason in ("bound", "uncalibrated") else "-"
    return text if ev.backprop is None else f"ZeroLock {text}; backprop {bound_headline(ev.backprop)}"


def short(ev: Evidence) -> str:
    """b with its interval (ZeroLock's, on a comparison row)."""
    if ev.bound is None or ev.bound.slope is None:
        return "b not estimable" if ev.bound is not None else "-"
    return f"b = {ev.bound.slope} (T = {ev.bound.horizon})"


REASONS = {
    "skipped": lambda ev: ev.skipped or "no data",
    "no_theorem_schedule": lambda ev: "no group trained with the theorem's step size eta_t ~ 1/sqrt(t) "
    "(SGD, optim.schedule = inv_sqrt)",
    "bound": lambda ev: _detail(_bound(ev)),
    "uncalibrated": lambda ev: (f"{' and '.join(ev.uncalibrated)} not consistent: the rule rejects a bound that "
                                f"holds; {_detail(_bound(ev))}"),
}


def reason(ev: Evidence) -> str:
    """Why the test gave its outcome; backprop's outcome after it on a comparison row."""
    text = REASONS[ev.reason](ev)
    return text if ev.backprop is None else f"not covered by Theorem 1; {text}; backprop: {ev.backprop.verdict}"


CALIBRATION = ("tests/analyses/test_analyses_convergence.py::test_each_verdict_on_constructed_inputs",
               "tests/analyses/test_analyses_convergence.py::test_seed_level_intervals_cover_at_their_level",
               "tests/analyses/test_analyses_convergence.py::test_logistic_control_is_consistent_and_the_biased_norm_is_not")
OUTCOMES = {
    "consistent": Outcome("no evidence against the bound: B_T does not grow at the end of the run", "holds"),
    "not consistent": Outcome("B_T still grows at the horizon", "fails"),
    "not testable at this horizon": Outcome("the run is shorter than the test's minimum horizon", "none"),
    "test not calibrated": Outcome("a positive control fails the same test, so its answer is not a finding", "none"),
    "not testable": NOT_TESTABLE,
    "not measured": NOT_MEASURED,
}
PAPER = ("Theorem 1: with eta_t = eta_0/sqrt(t+1), (1/T) sum_(t<T) E||grad R^t(omega^t)||^2 <= C log T / sqrt(T).")


def _claim(key: str, name: str, title: str, surrogate: str, direction: str) -> Claim:
    return register(Claim(
        key=key, title=title, paper=PAPER,
        question=f"Does the running mean of the unbiased local gradient norm of {surrogate} stay within the bound?",
        primary=f"ZeroLock {direction}, SGD with eta_t ~ 1/sqrt(t), the group with the most runs",
        outcomes=OUTCOMES, rule=lambda inputs: bound_row(key, name, inputs), measured=measured, short=short,
        reason=reason, figure="convergence", tests=CALIBRATION,
    ))


REVERSE = _claim("theorem1_bound_reverse", "convergence_reverse", "Theorem 1 bound, local Ĝ_t of R (reverse)",
                 "R (the paper's objective)", "reverse")
FORWARD = _claim("theorem1_bound_forward", "convergence_forward", "Theorem 1 bound, local Ĝ_t of R̄ (forward)",
                 "R̄ (the implemented objective)", "forward")
