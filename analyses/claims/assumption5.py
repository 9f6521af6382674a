"""Assumption 5 (a bounded stability ratio C_fo(α)) for R and for R̄, by step scaling.

``analyses.scaling`` on the primary group (the objective's own training direction: R reverse,
R̄ forward): "first order" → "refuted", "bounded" → "supported", else "inconclusive" or
"not testable". The drift check (``analyses.drift``) and ρ_t along training
(``analyses.stability``) are part of the evidence.
"""

from __future__ import annotations

from analyses.claims.registry import (
    NOT_MEASURED,
    NOT_TESTABLE,
    Claim,
    ClaimInputs,
    Outcome,
    register,
    run_names,
)
from analyses.claims.text import drift_line, fmt, group_statement
from analyses.drift import DriftCheck
from analyses.scaling import StepScaling
from analyses.stability import StabilitySummary
from analyses.verdict import DriftFigures, Evidence, RhoFigures, Verdict
from zerolock_theory.vocab import direction_of

SCALING_OUTCOME = {"first order": "refuted", "bounded": "supported", "inconclusive": "inconclusive",
                   "not testable": "not testable"}


def _rule(key: str, objective: str):
    def rule(inputs: ClaimInputs) -> Verdict:
        """The primary group's step-scaling outcome decides (module docstring)."""
        own = direction_of(objective)
        drift = inputs.get(f"drift_{objective}", DriftCheck)
        summary = inputs.get(f"stability_{objective}", StabilitySummary)
        total = summary.total() if summary is not None else None
        context = {
            "preregistered": own,
            "drift": None if drift is None else DriftFigures(len(drift.runs), drift.d_exponent, drift.q_exponent),
            "rho": None if total is None else RhoFigures(total.median, total.max, total.n_probe),
        }
        scaling = inputs.get(f"scaling_{objective}", StepScaling)
        if scaling is None:
            evidence = Evidence("no_scaling_data", skipped=inputs.why(f"scaling_{objective}"), **context)
            return Verdict(key, "not measured" if total is None else "not testable", evidence)
        primary = scaling.primary
        found = primary.trained == own  # else the pre-registered group is missing (e.g. all diverged)
        evidence = Evidence("scaling" if found else "no_scaling_group", excluded=run_names(scaling.excluded),
                            groups=tuple(g.figures() for g in scaling.groups), **context)
        return Verdict(key, SCALING_OUTCOME[primary.verdict] if found else "not testable", evidence)

    return rule


def _context(ev: Evidence) -> list[str]:
    """The drift check and ρ_t along training."""
    out = []
    if ev.drift is not None:
        out.append(drift_line(ev.drift.runs, ev.drift.d_exponent, ev.drift.q_exponent))
    if ev.rho is not None:
        out.append(f"along training: median rho {fmt(ev.rho.median)}, max {fmt(ev.rho.max)} over {ev.rho.steps} steps")
    return out


def short(ev: Evidence) -> str:
    """The primary group's share of phi' > 0 and slope."""
    if ev.reason != "scaling":
        return "-"
    g = ev.groups[0]
    share = "n/a" if g.share is None else f"{g.share.estimate:.0%} [{g.share.low:.0%}, {g.share.high:.0%}]"
    return f"phi' > 0 at {share} of scaled steps; slope {g.interval if g.interval else 'n/a'}"


def measured(ev: Evidence) -> str:
    """The primary group's statement, or the descriptive groups when it is missing."""
    if ev.reason == "scaling":
        first = ev.groups[0]
        return "; ".join([f"{group_statement(first)} ({first.seeds} seed(s), {first.group})", *_context(ev)])
    if ev.reason == "no_scaling_group":
        return "; ".join([f"descriptive, {g.group}: {group_statement(g)}" for g in ev.groups] + _context(ev))
    return "; ".join(_context(ev)) or "-"


SCALING_REASONS = {
    "first order": "rho(c) grows like 1/c as the step is scaled down (slope interval < -0.5) on a share of "
    "steps whose interval is > 0; eta_t -> 0 makes sup_t rho_t infinite",
    "bounded": "the slope interval of log rho(c) on log c lies above -0.5, or phi' <= 0 at every scaled step",
    "inconclusive": "the slope or share interval does not decide between bounded and first order",
    "not testable": "fewer than 3 seeds with scaled steps in the primary group",
}
REASONS = {
    "no_scaling_data": lambda ev: f"no step-scaling data: {ev.skipped or 'no data'}",
    "no_scaling_group": lambda ev: f"no non-diverged {ev.preregistered}-trained runs with scaled steps "
    "(the pre-registered group)",
    "scaling": lambda ev: SCALING_REASONS[ev.groups[0].outcome],
}
OUTCOMES = {
    "supported": Outcome("rho stays bounded under step scaling: a step-size-uniform C_fo is consistent", "holds"),
    "refuted": Outcome("phi_t is first order in the step: sup_t rho_t is infinite as eta_t -> 0", "fails"),
    "inconclusive": Outcome("the slope or share interval does not decide", "mixed"),
    "not testable": NOT_TESTABLE,
    "not measured": NOT_MEASURED,
}
PAPER = ("Assumption 5 (stability): the first-order drift of the targets is bounded, "
         "max(<grad_p R^t, p^(t+1) - p^t>, 0) <= C_fo(alpha) ||p^(t+1) - p^t||^2.")


def _claim(objective: str, title: str, surrogate: str) -> Claim:
    key = f"assumption5_{objective}"
    return register(Claim(
        key=key, title=title, paper=PAPER,
        question=f"Is the stability ratio rho_t of {surrogate} bounded uniformly in the step size?",
        primary=f"ZeroLock {direction_of(objective)} (the objective's own training), the group with the most seeds",
        outcomes=OUTCOMES, rule=_rule(key, objective), measured=measured, short=short,
        reason=lambda ev: REASONS[ev.reason](ev), figure="stability",
        tests=("tests/analyses/test_analyses_scaling.py::test_every_verdict_is_reachable",
               "tests/analyses/test_analyses_scaling.py::test_bounded_ratio_at_every_step_is_not_called_first_order"),
    ))


PAPER_CLAIM = _claim("paper", "Assumption 5 for R (paper objective)", "R (the paper's objective)")
IMPLEMENTED_CLAIM = _claim("implemented", "Assumption 5 for R̄ (implemented objective)", "R̄ (the implemented objective)")
