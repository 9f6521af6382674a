"""Assumption 5 (a bounded stability ratio C_fo(α)) for R and R̄, decided by the share of scaled
steps with φ′ > 0 against a random-direction baseline (``analyses.scaling``, docs/MATH.md).

The step-scaling probe evaluates ω^t + c·Δω_t for c = 1 … 1/64 and the same for a random
direction of the same norm per chunk. φ′ > 0 at a positive share of scaled steps makes
sup_t ρ_t infinite as η_t → 0 (Assumption 5 as formalized fails). The primary group is the
objective's own training direction (R: reverse, R̄: forward): "holds" (φ′ ≤ 0 at every
resolved scaled step), "fails, generically" (a positive share, not above the random
baseline: as for any update), "fails systematically" (the share is above the random
baseline: ZeroLock's update moves its targets against its own descent), "not testable".
The slope of log ρ(c) on log c is −1 for any smooth readout with φ′ > 0: a smoothness check,
shown only. The drift check and ρ_t along training are descriptive.
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
from analyses.scaling import GroupScaling, StepScaling
from analyses.seeds import MIN_SEEDS
from analyses.verdict import Evidence, Verdict
from zerolock_theory.vocab import direction_of


def _primary(ev: Evidence) -> GroupScaling | None:
    found = ev.result
    return found.primary if isinstance(found, StepScaling) and found.groups else None


def _rule(key: str, objective: str):
    def rule(inputs: ClaimInputs) -> Verdict:
        """The primary group's outcome (module docstring); not testable when its group is missing."""
        own = direction_of(objective)
        scaling = inputs.get(f"scaling_{objective}", StepScaling)
        if scaling is None:
            return Verdict(key, "not measured", Evidence("no_scaling_data", skipped=inputs.why(f"scaling_{objective}"),
                                                         preregistered=own))
        found = scaling.primary.trained == own  # else the pre-registered group is missing (e.g. all diverged)
        evidence = Evidence(scaling.primary.reason if found else "no_scaling_group", preregistered=own,
                            excluded=run_names(scaling.excluded), result=scaling)
        return Verdict(key, scaling.primary.outcome if found else "not testable", evidence)

    return rule


def _pct(x) -> str:
    return "n/a" if x is None else f"{x.estimate:.0%} [{x.low:.0%}, {x.high:.0%}]"


def short(ev: Evidence) -> str:
    g = _primary(ev)
    if g is None or ev.reason == "no_scaling_group":
        return "-"
    if g.share_positive is None:
        resolved = ", ".join(f"{s.actual.n_resolved}/{s.actual.n_steps}" for s in g.seeds) or "none"
        return f"resolved scaled steps per seed {resolved} ({g.min_steps} needed in each of {MIN_SEEDS} seeds)"
    return f"phi' > 0: {_pct(g.share_positive)} of {g.n_resolved} steps; random {_pct(g.random_share)}"


def measured(ev: Evidence) -> str:
    g = _primary(ev)
    if g is None:
        return "-"
    if ev.reason == "no_scaling_group":
        return f"descriptive, {g.group}: {g.outcome}"
    diff = "n/a" if g.difference is None else f"{g.difference.estimate:+.0%} [{g.difference.low:+.0%}, {g.difference.high:+.0%}]"
    slope = "n/a" if g.slope is None else str(g.slope)
    return (f"{short(ev)}; difference {diff} (paired by seed and step); {len(g.seeds)} seed(s), "
            f"{g.n_unresolved} unresolved; slope of log rho(c) on log c {slope} (smoothness check only); {g.group}")


REASONS = {
    "no_scaling_data": lambda ev: f"no step-scaling data: {ev.skipped or 'no data'}",
    "no_scaling_group": lambda ev: f"no non-diverged {ev.preregistered}-trained runs with scaled steps "
    "(the pre-registered group)",
    "resolved": lambda ev: "phi' <= 0 at every resolved scaled step of every seed",
    "few_seeds": lambda ev: "fewer than 3 seeds with at least 30 resolved scaled steps",
    "unresolved": lambda ev: "some scaled steps could not be resolved (phi' too close to 0 or not linear in c)",
    "no_baseline": lambda ev: "no random-direction baseline at the scaled steps",
    "above_random": lambda ev: "the difference with the random baseline has an interval above 0",
    "not_above_random": lambda ev: "a positive share, but not above the random baseline's",
}
OUTCOMES = {
    "holds": Outcome("holds on this run: phi' <= 0 at every resolved scaled step", "holds"),
    "fails, generically": Outcome("fails, generically: phi' > 0 at a share of steps no higher than for a random "
                                  "direction of the same norm; not specific to ZeroLock", "mixed"),
    "fails systematically": Outcome("fails systematically: ZeroLock's update moves its targets against its own "
                                    "descent more often than a random direction does", "fails"),
    "not testable": NOT_TESTABLE,
    "not measured": NOT_MEASURED,
}
PAPER = ("Assumption 5 (stability): the first-order drift of the targets is bounded, "
         "max(<grad_p R^t, p^(t+1) - p^t>, 0) <= C_fo(alpha) ||p^(t+1) - p^t||^2.")
TESTS = ("tests/analyses/test_analyses_scaling.py::test_bounded_phi_holds_with_every_step_resolved",
         "tests/analyses/test_analyses_scaling.py::test_random_like_updates_fail_generically",
         "tests/analyses/test_analyses_scaling.py::test_systematically_positive_phi_prime_fails_systematically",
         "tests/analyses/test_analyses_shares.py::test_coverage_on_heterogeneous_autocorrelated_seeds")


def _claim(objective: str, title: str, surrogate: str) -> Claim:
    return register(Claim(
        key=f"assumption5_{objective}", title=title, paper=PAPER,
        question=f"Is the first-order drift of {surrogate} ever positive along the update, more often than for a "
        "random direction?",
        primary=f"ZeroLock {direction_of(objective)} (the objective's own training), the group with the most seeds",
        outcomes=OUTCOMES, rule=_rule(f"assumption5_{objective}", objective), measured=measured, short=short,
        reason=lambda ev: REASONS[ev.reason](ev), figure="stability", tests=TESTS,
    ))


PAPER_CLAIM = _claim("paper", "Assumption 5 for R (paper objective)", "R (the paper's objective)")
IMPLEMENTED_CLAIM = _claim("implemented", "Assumption 5 for R̄ (implemented objective)", "R̄ (the implemented objective)")
