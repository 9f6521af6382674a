"""Theorem 1 (b): the proof's drift step, for R (reverse) and R̄ (forward) (docs/THEOREM1.md).

Lemma 4 needs the drift at the step actually taken to add up like Σ η_t² along the run. The row
decides that from the step-scaling probe of the objective's own primary group
(``analyses.assumption5.drift_sum``, read from ``analyses.assumption5.scaling``'s
``GroupScaling.drift_sum``): the first-order coefficient a_t of drift(c) at each scaled iterate
(zero where the drift is second order), and the seeds' slopes of log|a_t| on log η_t after the
switch-on and the warm-up against 2, with the run's resolution stated: "within Σ η_t² along the run", "not within Σ η_t² along the run", "not
distinguished", "not testable". The drift at c = 1 (its positive part against η_t²) is the second
witness. It never says the proof "fails on this run": the bound has an unknown constant.

Beside it, descriptively: the order at fixed iterates (``analyses.assumption5.drift_order``: is the
limit of drift(c)/c non-zero, and its sign against chance), and the proof probe's pathwise sums
(``analyses.theorem1.drift_budget``). Where Assumption 5's row and this one point different ways,
``agreement`` gives the sentence that says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analyses.assumption5.drift_order import DriftOrder
from analyses.assumption5.drift_sum import (
    CLIMB,
    NEEDED_SLOPE,
    NOT_WITHIN,
    RUN_GROWTH,
    SLOPE_MARGIN,
    SUM_OUTCOMES,
    WITHIN,
    DriftSum,
    agreement,
)
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
from analyses.theorem1.data import drift_run
from analyses.theorem1.drift_budget import DriftBudget, drift_budget
from analyses.verdict import Evidence, Verdict
from zerolock_theory.records import LR, PROOF
from zerolock_theory.vocab import objective_of

__all__ = ["GroupDrift", "ProofDrift", "group_drift"]

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
    arrays = [drift_run(frame, columns, "step", name).arrays() for name, frame in group.runs]
    budget = drift_budget(arrays, names=[n for n, _ in group.runs], label=group.label, level=inputs.level)
    return GroupDrift(group.label, objective, group.excluded, budget)


@register_result
@dataclass(frozen=True)
class ProofDrift(Result):
    """The row's evidence: the sum along the run (``drift_sum``) and, beside it, the order at fixed
    iterates, the pathwise budget of the proof probe (or None) and the sentence relating the row to
    Assumption 5's (empty when they agree)."""

    kind = "proof_drift"
    objective: str
    group: str
    order: DriftOrder
    budget: DriftBudget | None
    drift_sum: DriftSum | None = None
    assumption5: str = ""  # Assumption 5's row outcome on the same runs
    agreement: str = ""


def _rule(key: str, direction: str):
    def rule(inputs: ClaimInputs) -> Verdict:
        objective = objective_of(direction)
        scaling = inputs.get(SCALING[objective])
        budget = inputs.get(DRIFT_BUDGET[direction])
        if (scaling is None or scaling.primary.trained != direction or scaling.primary.order is None
                or scaling.primary.drift_sum is None):
            why = inputs.why(SCALING[objective]) or f"no step-scaling data of ZeroLock {direction} runs"
            return Verdict(key, "not measured", Evidence("skipped", skipped=why))
        primary = scaling.primary
        found = primary.drift_sum
        row = ProofDrift(objective, primary.group, primary.order, None if budget is None else budget.budget,
                         found, primary.outcome, agreement(primary.outcome, found.outcome))
        return Verdict(key, found.outcome, Evidence(found.reason, excluded=run_names(scaling.excluded),
                                                    result=row, p_value=found.p_value))
    return rule


def _pct(x) -> str:
    return "n/a" if x is None else f"{x.estimate:.0%} [{x.low:.0%}, {x.high:.0%}]"


def _slope_text(d: DriftSum) -> str:
    if d.slope is not None:
        return f"slope of |a_t| on eta_t s = {d.slope}"
    if d.reason == "all_zero":
        return "a_t = 0 at every scaled step after the warm-up (second order)"
    if d.reason == "warm_up":
        return "slope of |a_t| on eta_t not estimated: the warm-up eats the run"
    return "slope of |a_t| on eta_t not estimated"


def _resolution(d: DriftSum) -> str:
    """The run's resolution: how far the interval's deciding end bends |a_t|/eta_t^2 over the fitted window."""
    if d.growth is None or d.eta_ratio is None:
        return ""
    return (f"|a_t|/eta_t^2 bent by x{d.growth:.3g} at the interval's deciding end over the fitted window "
            f"(eta_first/eta_last = {d.eta_ratio:.3g}; the run resolves x{RUN_GROWTH:g})")


def short(ev: Evidence) -> str:
    found = ev.result
    if not isinstance(found, ProofDrift) or found.drift_sum is None:
        return "-"
    d = found.drift_sum
    needs = ">= 2" if d.threshold == NEEDED_SLOPE else f"> {d.threshold - SLOPE_MARGIN:.3g}"
    return f"{_slope_text(d)} (within needs {needs})"


def _order(o: DriftOrder) -> str:
    p = "" if o.p_value is None else f", sign against 1/2: p = {o.p_value:.2g}"
    source = "drift(c)" if o.source == "drift" else "phi(c) (same limit; drift(c) not recorded by these runs)"
    return (f"described at fixed iterates: drift(c)/c -> non-zero at {_pct(o.share_nonzero)} of scaled steps, "
            f"positive at {_pct(o.share_positive)} of those ({o.outcome}{p}; from {source})")


def _witness(d: DriftSum) -> str:
    w = "n/a" if d.witness is None else str(d.witness)
    return f"witness, the drift at c = 1: slope of its positive part on eta_t {w} ({d.witness_outcome})"


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
    parts = []
    if found.drift_sum is not None:
        d = found.drift_sum
        parts += [f"{_slope_text(d)}{'' if d.p_value is None else f', p = {d.p_value:.2g}'}",
                  *([_resolution(d)] if _resolution(d) else []), _witness(d), f"{d.n_counted} counted seed(s)"]
    parts += [_order(found.order), _budget(found.budget)]
    if found.agreement:
        parts.append(found.agreement)
    return "; ".join(parts + [found.group])


_BEND = "bends |a_t|/eta_t^2 over the fitted window's eta range by"
REASONS = {
    "skipped": "no step-scaling data",
    "few_seeds": "fewer than 3 seeds with enough resolved scaled steps",
    "unresolved": "no non-zero first-order coefficient, but some scaled steps after the warm-up unresolved",
    "all_zero": "drift(c)/c -> 0 at every scaled step after the warm-up: the drift is second order there",
    "few_slopes": "non-zero first-order coefficients, but fewer than 3 seeds with a slope",
    "warm_up": "fewer than 3 seeds with a slope: the warm-up (a_t = 0 before the switch-on, a rise of |a_t| and "
               "its settling) leaves too few scaled steps to fit",
    "slope_above": f"the seed interval of the slope of |a_t| on eta_t lies above {NEEDED_SLOPE - SLOPE_MARGIN:g}",
    "slope_holds": f"the seed interval of the slope of |a_t| on eta_t holds {NEEDED_SLOPE - SLOPE_MARGIN:g}, and its "
                   f"lower end {_BEND} less than x{RUN_GROWTH:g}, the run's resolution",
    "slope_below": f"the seed interval of the slope of |a_t| on eta_t lies below {NEEDED_SLOPE - SLOPE_MARGIN:g}, and "
                   f"its upper end {_BEND} at least x{RUN_GROWTH:g}",
    "slope_below_short": f"the seed interval of the slope of |a_t| on eta_t lies below "
                         f"{NEEDED_SLOPE - SLOPE_MARGIN:g}, but its upper end {_BEND} less than x{RUN_GROWTH:g}: "
                         "this run is too short to tell T^(1 - s/2) from log T (a warm-up's tail bends it as much)",
    "slope_straddles": f"the seed interval of the slope of |a_t| on eta_t holds {NEEDED_SLOPE - SLOPE_MARGIN:g}, and "
                       f"its lower end {_BEND} x{RUN_GROWTH:g} or more: below what the run resolves",
    "slope_at_threshold": "the step size falls faster than 1/sqrt(t), so sum eta_t^2 converges and the slope must "
                          "exceed 1/q strictly (eta_t ~ t^-q); the seed interval of the slope holds 1/q",
    "late_rise": "the coefficient rises over the last blocks in at least half the seeds, or in some seed where "
                 "fewer than 3 slopes remain (|a_t| peaks in the second half of the run, or "
                 "|a_t|/eta_t^2 climbs above the earlier blocks' trend at the end): whether the rise continues "
                 "decides the sum, and the run ends before it shows; no resolved evidence of not within before it",
    "slope_climbs": f"the seed interval of the slope lies below the threshold, but its local value climbs by more "
                    f"than {CLIMB:g} from the earlier to the later fitted blocks in every seed's interval: "
                    "|a_t|/eta_t^2 still rises, ever more slowly (a warm-up's tail), and the run cannot tell "
                    "whether it keeps rising",
}


def reason(ev: Evidence) -> str:
    if ev.reason == "skipped":
        return ev.skipped or "no data"
    found = ev.result
    text = REASONS.get(ev.reason, ev.reason)
    if isinstance(found, ProofDrift) and found.drift_sum is not None and found.drift_sum.growth is not None:
        text += f" (x{found.drift_sum.growth:.3g} here)"
    if isinstance(found, ProofDrift) and found.drift_sum is not None and found.drift_sum.threshold != NEEDED_SLOPE:
        text += (f"; the run's step size falls like t^-{found.drift_sum.schedule:.2g}, faster than the theorem's "
                 f"1/sqrt(t+1): the threshold is 1/q = {found.drift_sum.threshold:.3g}, strictly")
    return text


OUTCOMES = {
    WITHIN: Outcome("the drift at the step actually taken sums within O(sum eta_t^2) along this run: after the "
                    "switch-on and the warm-up its first-order coefficient shrinks like eta_t^2 or faster (to the "
                    "run's resolution), or is zero, as Lemma 4 needs (a description; the bound's constant is "
                    "unknown)", "holds"),
    NOT_WITHIN: Outcome("the drift's first-order coefficient shrinks more slowly than eta_t^2 along this run: the "
                        "drift at the step taken outgrows sum eta_t^2, which Lemma 4's pathwise drift step does not "
                        "absorb (a description; the bound's constant is unknown, and a proof in expectation needs "
                        "the drift's mean)", "mixed"),
    "not distinguished": Outcome("the slope of the first-order coefficient on eta_t is not told from "
                                 f"{NEEDED_SLOPE - SLOPE_MARGIN:g} at this run's length: its interval reaches "
                                 "below 2 by more than the run resolves, or lies below 2 by less (T^(1 - s/2) not "
                                 "told from log T)", "none"),
    "not testable": Outcome("too few seeds with resolved scaled steps or with a slope (the warm-up may eat the "
                            "run), or unresolved steps without a non-zero coefficient", "none"),
    "not measured": NOT_MEASURED,
}
PAPER = ("Lemma 4 / Theorem 1's proof: the drift of the surrogate's targets is second order in the step, so the "
         "telescoped sum stays within C log T.")
TESTS = ("tests/analyses/theorem1/test_analyses_drift_along.py::test_first_order_coefficient_shrinking_like_eta_squared_reads_within",
         "tests/analyses/theorem1/test_analyses_drift_along.py::test_first_order_coefficient_shrinking_like_eta_reads_not_within",
         "tests/analyses/theorem1/test_analyses_drift_along.py::test_second_order_drift_warming_up_reads_within",
         "tests/analyses/assumption5/test_analyses_a5_families.py::test_second_order_drift_with_warm_up_never_reads_first_order",
         "tests/analyses/theorem1/test_analyses_drift_budget.py::test_each_family_gets_its_outcome_at_the_documented_rate",
         "tests/probes/test_probes_proof.py::test_surrogate_telescopes_and_descent_matches_a_direct_evaluation")


def _claim(key: str, direction: str, surrogate: str) -> Claim:
    return register(Claim(
        key=key, title=f"Theorem 1 (b): the proof's drift step on {surrogate} ({direction})", paper=PAPER,
        question=f"Does the drift of {surrogate}'s targets at the step actually taken sum within O(sum eta_t^2) "
        "along the run, as Lemma 4 needs?",
        primary=f"ZeroLock {direction}, SGD with eta_t ~ 1/sqrt(t), the group with the most seeds",
        outcomes=OUTCOMES, rule=_rule(key, direction), vocabulary=SUM_OUTCOMES, measured=measured,
        short=short, reason=reason, tests=TESTS,
        analyses={DRIFT_BUDGET[direction]: lambda inputs: group_drift(inputs, direction)},
    ))


REVERSE = _claim("theorem1_proof_reverse", "reverse", "R")
FORWARD = _claim("theorem1_proof_forward", "forward", "R-bar")
