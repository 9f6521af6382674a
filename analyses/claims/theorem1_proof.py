"""Theorem 1 (b): the proof on this run, its drift step, for R (reverse) and R̄ (forward).

The proof telescopes the surrogate, R^T(ω^T) − R^0(ω^0) = Σ descent_t + Σ drift_t, and needs
D⁺_T = Σ max(drift_t, 0) to grow no faster than S2(T) = Σ η_t². The ``proof`` probe logs
descent_t and drift_t on the probe batch every step (``probe/proof/{objective}/...``; the
objective of a direction's own surrogate: R for reverse, R̄ for forward);
``analyses.drift_budget`` fits the slope s of log(D⁺_T/S2) on log T after the burn-in, per
seed: "first order" (the proof's drift step fails on this run), "second order" (it holds on
this run) or "not testable". Beside it: the share of the progress the drift takes back and
the signed sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analyses.claims.groups import primary_group
from analyses.claims.registry import (
    NOT_MEASURED,
    Claim,
    ClaimInputs,
    Outcome,
    SuiteInputs,
    register,
    run_names,
    skipped,
)
from analyses.drift_budget import DRIFT_SENTENCES, DriftBudget, drift_arrays, drift_budget
from analyses.results import NotMeasured, Result
from analyses.results import register as register_result
from analyses.verdict import Evidence, Verdict
from zerolock_theory.metric_keys import proof_key
from zerolock_theory.vocab import objective_of

__all__ = ["GroupDrift", "group_drift"]

LR_COLUMN = "train/lr"


@register_result
@dataclass(frozen=True)
class GroupDrift(Result):
    """The drift budget of one primary group, its objective and its excluded runs."""

    kind = "group_drift"
    group: str
    objective: str
    excluded: list[str]
    budget: DriftBudget


def group_drift(inputs: SuiteInputs, direction: str) -> GroupDrift:
    """The drift budget of the ZeroLock ``direction`` primary group on its own objective."""
    objective = objective_of(direction)
    group = primary_group(inputs.table, "zerolock", direction)
    if group is None or not group.runs:
        raise NotMeasured(f"no non-diverged ZeroLock {direction} group trained with SGD and eta_t ~ 1/sqrt(t)")
    columns = {"drift": proof_key(objective, "drift"), "lr": LR_COLUMN, "descent": proof_key(objective, "descent")}
    missing = [c for c in columns.values() if c not in group.runs[0][1].columns]
    if missing:
        raise NotMeasured(f"{group.label}: no {missing[0]} column (probe 'proof' off)")
    arrays = [drift_arrays(frame, columns, "step", name) for name, frame in group.runs]
    budget = drift_budget(arrays, names=[n for n, _ in group.runs], label=group.label, level=inputs.level)
    return GroupDrift(group.label, objective, group.excluded, budget)


def _rule(key: str, name: str):
    def rule(inputs: ClaimInputs) -> Verdict:
        found = inputs.get(name, GroupDrift)
        if found is None:
            return skipped(key, name, inputs)
        return Verdict(key, found.budget.outcome, Evidence(found.budget.reason, excluded=run_names(found.excluded),
                                                           result=found))
    return rule


def short(ev: Evidence) -> str:
    found = ev.result
    if not isinstance(found, GroupDrift):
        return "-"
    b = found.budget
    if b.first_order is not None:
        s = str(b.first_order)
    else:  # no interval; without a finite point either, say what is missing rather than print nan
        s = f"{b.s_point:.3g} (no interval)" if math.isfinite(b.s_point) else "not estimated (no seed gave a slope)"
    first = f"first order ~ {b.s_first:.2g}" if math.isfinite(b.s_first) else "first-order slope not estimated"
    return f"s = {s} ({first}, threshold {b.threshold:g})"


def measured(ev: Evidence) -> str:
    found = ev.result
    if not isinstance(found, GroupDrift):
        return "-"
    b = found.budget
    share = str(b.share) if b.share is not None else "n/a"
    signed = str(b.signed) if b.signed is not None else "n/a"
    return (f"{short(ev)}; drift takes back {share} of the progress; signed sum {signed}; "
            f"{b.seeds} seed(s), T = {b.horizon}, {found.group}")


REASONS = {
    "no_seed": "no usable seed", "short_horizon": "the horizon is below the rule's minimum",
    "few_seeds": "fewer than 3 seeds with a slope", "ambiguous": "the interval of s holds the threshold",
    "outgrows": "the interval of s lies above the threshold", "bounded": "the interval of s lies below the threshold",
    "no_positive_drift": "no positive drift at any probed step",
}


def reason(ev: Evidence) -> str:
    if ev.reason == "skipped":
        return ev.skipped or "no data"
    return REASONS.get(ev.reason, ev.reason)


OUTCOMES = {
    "first order": Outcome(DRIFT_SENTENCES["first order"], "fails"),
    "second order": Outcome(DRIFT_SENTENCES["second order"], "holds"),
    "not testable": Outcome("too short, too few seeds, or the interval of s holds the threshold", "none"),
    "not measured": NOT_MEASURED,
}
PAPER = ("Lemma 4 / Theorem 1's proof: the drift of the surrogate's targets is second order in the step, so the "
         "telescoped sum stays within C log T.")
TESTS = ("tests/analyses/test_analyses_drift_budget.py::test_each_family_gets_its_outcome_at_the_documented_rate",
         "tests/analyses/test_analyses_drift_budget.py::test_exact_orders_give_the_reference_slopes",
         "tests/probes/test_probes_proof.py::test_surrogate_telescopes_and_descent_matches_a_direct_evaluation")


def _claim(key: str, name: str, direction: str, surrogate: str) -> Claim:
    return register(Claim(
        key=key, title=f"Theorem 1 (b): the proof's drift step on {surrogate} ({direction})", paper=PAPER,
        question=f"Does the positive drift of {surrogate} grow no faster than the sum of eta_t^2, as the proof needs?",
        primary=f"ZeroLock {direction}, SGD with eta_t ~ 1/sqrt(t), the group with the most seeds",
        outcomes=OUTCOMES, rule=_rule(key, name), measured=measured, short=short, reason=reason, tests=TESTS,
        analyses={name: lambda inputs: group_drift(inputs, direction)},
    ))


REVERSE = _claim("theorem1_proof_reverse", "proof_reverse", "reverse", "R")
FORWARD = _claim("theorem1_proof_forward", "proof_forward", "forward", "R-bar")
