"""Theorem 1 (b): the proof's drift step, for R (reverse) and R̄ (forward) (docs/THEOREM1.md).

Lemma 4 needs the drift of the surrogate's targets to be of second order in the step. The row
decides that order where it is identified, at fixed iterates: the step-scaling probe's
drift(c)/c as c → 0 at each scaled step of the objective's own primary group
(``analyses.assumption5.drift_order``, read from ``analyses.assumption5.scaling``'s ``GroupScaling.order``): "second
order", "first order" with the sign of its limit against chance, or "not testable". It never
says the proof "fails on this run": the bound has an unknown constant.

Beside it, descriptively, the proof probe's pathwise sums (``analyses.theorem1.drift_budget``): the
trend s of D⁺_T/Σ η_t² over the run, the share of the progress the drift takes back and the
signed Σ drift_t against Σ η_t² (what a proof in expectation needs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analyses.assumption5.drift_order import ORDER_OUTCOMES, DriftOrder
from analyses.assumption5.scaling import SCALING
from analyses.groups import primary_group
from analyses.registry import (
    NOT_MEASURED,
    Claim,
    ClaimInputs,
    Outcome,
    SuiteInputs,
    register,
    run_names,
)
from analyses.results import NotMeasured, Result, declare
from analyses.results import register as register_result
from analyses.theorem1.drift_budget import DriftBudget, drift_arrays, drift_budget
from analyses.verdict import Evidence, Verdict
from zerolock_theory.records import LR, PROOF
from zerolock_theory.vocab import objective_of

__all__ = ["GroupDrift", "group_drift"]

LR_COLUMN = LR


@register_result
@dataclass(frozen=True)
class GroupDrift(Result):
    """The drift budget of one primary group, its objective and its excluded runs."""

    kind = "group_drift"
    group: str
    objective: str
    excluded: list[str]
    budget: DriftBudget


DRIFT_BUDGET = {d: declare(f"proof_{d}", GroupDrift) for d in ("reverse", "forward")}
"""The pathwise drift budget of each ZeroLock direction's primary group."""


def group_drift(inputs: SuiteInputs, direction: str) -> GroupDrift:
    """The drift budget of the ZeroLock ``direction`` primary group on its own objective."""
    objective = objective_of(direction)
    group = primary_group(inputs.table, "zerolock", direction)
    if group is None or not group.runs:
        raise NotMeasured(f"no non-diverged ZeroLock {direction} group trained with SGD and eta_t ~ 1/sqrt(t)")
    columns = {"drift": PROOF.key(objective, "drift"), "lr": LR_COLUMN, "descent": PROOF.key(objective, "descent")}
    missing = [c for c in columns.values() if c not in group.runs[0][1].columns]
    if missing:
        raise NotMeasured(f"{group.label}: no {missing[0]} column (probe 'proof' off)")
    arrays = [drift_arrays(frame, columns, "step", name) for name, frame in group.runs]
    budget = drift_budget(arrays, names=[n for n, _ in group.runs], label=group.label, level=inputs.level)
    return GroupDrift(group.label, objective, group.excluded, budget)


@register_result
@dataclass(frozen=True)
class ProofDrift(Result):
    """The row's evidence: the order at fixed iterates and, beside it, the pathwise budget (or None)."""

    kind = "proof_drift"
    objective: str
    group: str
    order: DriftOrder
    budget: DriftBudget | None


def _rule(key: str, direction: str):
    def rule(inputs: ClaimInputs) -> Verdict:
        objective = objective_of(direction)
        scaling = inputs.get(SCALING[objective])
        budget = inputs.get(DRIFT_BUDGET[direction])
        if scaling is None or scaling.primary.trained != direction or scaling.primary.order is None:
            why = inputs.why(SCALING[objective]) or f"no step-scaling data of ZeroLock {direction} runs"
            return Verdict(key, "not measured", Evidence("skipped", skipped=why))
        primary = scaling.primary
        found = ProofDrift(objective, primary.group, primary.order, None if budget is None else budget.budget)
        return Verdict(key, primary.order.outcome, Evidence(primary.order.reason, excluded=run_names(scaling.excluded),
                                                            result=found, p_value=primary.order.p_value))
    return rule


def _pct(x) -> str:
    return "n/a" if x is None else f"{x.estimate:.0%} [{x.low:.0%}, {x.high:.0%}]"


def short(ev: Evidence) -> str:
    found = ev.result
    if not isinstance(found, ProofDrift):
        return "-"
    o = found.order
    return (f"drift(c)/c -> non-zero at {_pct(o.share_nonzero)} of scaled steps; positive at {_pct(o.share_positive)} "
            "of those")


def _budget(b: DriftBudget | None) -> str:
    if b is None:
        return "pathwise budget not measured (probe 'proof' off)"
    if b.first_order is not None:
        s = str(b.first_order)
    else:  # no interval; without a finite point either, say what is missing rather than print nan
        s = f"{b.s_point:.3g} (no interval)" if math.isfinite(b.s_point) else "not estimated"
    first = f"{b.s_first:.2g}" if math.isfinite(b.s_first) else "n/a"
    signed = str(b.signed) if b.signed is not None else "n/a"
    share = str(b.share) if b.share is not None else "n/a"
    return (f"descriptive, along the run: slope of D+_T / sum eta_t^2 on log T s = {s} ({b.outcome}; first-order "
            f"reference {first}), drift takes back {share} of the progress, signed sum of drift {signed}, "
            f"T = {b.horizon}")


def measured(ev: Evidence) -> str:
    found = ev.result
    if not isinstance(found, ProofDrift):
        return "-"
    o = found.order
    source = "drift(c)" if o.source == "drift" else "phi(c) (same limit; drift(c) not recorded by these runs)"
    p = "" if o.p_value is None else f", sign against 1/2: p = {o.p_value:.2g}"
    return (f"{short(ev)}{p}; from {source}; {o.n_counted} counted seed(s); {_budget(found.budget)}; "
            f"{found.group}")


REASONS = {
    "skipped": "no step-scaling data",
    "few_seeds": "fewer than 3 seeds with enough resolved scaled steps",
    "unresolved": "no non-zero limit, but some scaled steps unresolved",
    "all_zero": "drift(c)/c -> 0 at every scaled step (zero at the design's resolution)",
    "positive": "non-zero limits, positive more often than chance (interval above 1/2)",
    "negative": "non-zero limits, negative more often than chance (interval below 1/2)",
    "sign_chance": "non-zero limits, their sign not distinguished from chance",
    "few_signed_seeds": "non-zero limits in fewer than 3 seeds: their sign cannot be tested",
}


def reason(ev: Evidence) -> str:
    if ev.reason == "skipped":
        return ev.skipped or "no data"
    return REASONS.get(ev.reason, ev.reason)


OUTCOMES = {
    "second order": Outcome("drift(c)/c -> 0 at every scaled iterate of this run, at the design's resolution (a "
                            "first-order term below 1e-3 of max_c |drift(c)/c| reads as zero): second order, as Lemma 4 "
                            "needs", "holds"),
    "first order, positive more often than chance": Outcome(
        "the drift is of first order in the step at the scaled iterates, and positive more often than chance: "
        "what a second-order drift step cannot absorb (a description; the bound's constant is unknown)", "fails"),
    "first order, negative more often than chance": Outcome(
        "the drift is of first order at the scaled iterates, and negative more often than chance (it helps "
        "the descent)", "mixed"),
    "first order, sign not distinguished from chance": Outcome(
        "the drift is of first order at the scaled iterates; its sign not distinguished from chance at this "
        "design (a proof in expectation needs its mean)", "mixed"),
    "not testable": Outcome("too few seeds with resolved scaled steps, or unresolved steps without a non-zero "
                            "limit", "none"),
    "not measured": NOT_MEASURED,
}
PAPER = ("Lemma 4 / Theorem 1's proof: the drift of the surrogate's targets is second order in the step, so the "
         "telescoped sum stays within C log T.")
TESTS = ("tests/analyses/assumption5/test_analyses_a5_families.py::test_second_order_drift_with_warm_up_never_reads_first_order",
         "tests/analyses/assumption5/test_analyses_a5_families.py::test_stationary_first_order_drift_reads_first_order",
         "tests/analyses/theorem1/test_analyses_drift_budget.py::test_each_family_gets_its_outcome_at_the_documented_rate",
         "tests/probes/test_probes_proof.py::test_surrogate_telescopes_and_descent_matches_a_direct_evaluation")


def _claim(key: str, direction: str, surrogate: str) -> Claim:
    return register(Claim(
        key=key, title=f"Theorem 1 (b): the proof's drift step on {surrogate} ({direction})", paper=PAPER,
        question=f"Is the drift of {surrogate}'s targets of second order in the step at the scaled iterates, as "
        "Lemma 4 needs?",
        primary=f"ZeroLock {direction}, SGD with eta_t ~ 1/sqrt(t), the group with the most seeds",
        outcomes=OUTCOMES, rule=_rule(key, direction), vocabulary=ORDER_OUTCOMES, measured=measured,
        short=short, reason=reason, tests=TESTS,
        analyses={DRIFT_BUDGET[direction]: lambda inputs: group_drift(inputs, direction)},
    ))


REVERSE = _claim("theorem1_proof_reverse", "reverse", "R")
FORWARD = _claim("theorem1_proof_forward", "forward", "R-bar")
