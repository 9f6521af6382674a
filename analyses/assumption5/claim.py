"""Assumption 5 (a bounded stability ratio C_fo(α)) for R and R̄ (``analyses.assumption5.scaling``, docs/ASSUMPTION5_PROPOSITION1.md).

The paper states it along the run: sup_t ρ_t ≤ C_fo(α) at the iterates and steps it visits, an
unknown-constant statement that a finite run cannot contradict. The row's outcome describes ρ_t
along this run (``analyses.assumption5.along_run``): "grows" (like (t+1)^γ, γ's seed interval above 0),
"no growth" (below the growth κ a positive first-order drift gives), "not testable". Beside it,
from the step-scaling probe at fixed iterates: the uniform-in-step statement (a stronger
formalisation: it fails at every scaled step with φ′ > 0) and whether φ′ > 0 more often than
chance (the share against the exact ½ of a random direction, with the antithetic ±u check of
the classifier). The primary group is the objective's own training direction (R: reverse,
R̄: forward).
"""

from __future__ import annotations

import math

from analyses.assumption5.along_run import (
    POWER_TARGET,
    SD_CONFIDENCE,
    AlongRun,
    along_power,
    sd_upper,
    seeds_for_power,
)
from analyses.assumption5.drift_sum import agreement
from analyses.assumption5.scaling import OUTCOMES as SCALING_OUTCOMES
from analyses.assumption5.scaling import SCALING, GroupScaling, StepScaling
from analyses.registry import (
    NOT_MEASURED,
    NOT_TESTABLE,
    Claim,
    ClaimInputs,
    Outcome,
    register,
    run_names,
)
from analyses.verdict import Evidence, Verdict
from zerolock_theory.vocab import direction_of


def _primary(ev: Evidence) -> GroupScaling | None:
    found = ev.result
    return found.primary if isinstance(found, StepScaling) and found.groups else None


def _rule(key: str, objective: str):
    def rule(inputs: ClaimInputs) -> Verdict:
        """The primary group's outcome (module docstring); not testable when its group is missing."""
        own = direction_of(objective)
        scaling = inputs.get(SCALING[objective])
        if scaling is None:
            return Verdict(key, "not measured", Evidence("no_scaling_data", skipped=inputs.why(SCALING[objective]),
                                                         preregistered=own))
        found = scaling.primary.trained == own  # else the pre-registered group is missing (e.g. all diverged)
        evidence = Evidence(scaling.primary.reason if found else "no_scaling_group", preregistered=own,
                            excluded=run_names(scaling.excluded), result=scaling)
        return Verdict(key, scaling.primary.outcome if found else "not testable", evidence)

    return rule


def _pct(x) -> str:
    return "n/a" if x is None else f"{x.estimate:.0%} [{x.low:.0%}, {x.high:.0%}]"


def _gamma(g: GroupScaling) -> str:
    a = g.along
    if a is None:
        return "gamma n/a (no rho_t along the run)"
    gamma = "n/a" if a.gamma is None else str(a.gamma)
    power = _power(a)  # names the sd itself when it states a power
    spread = f", sd over seeds {a.spread:.2g}" if math.isfinite(a.spread) and not power else ""
    return f"rho_t ~ (t+1)^gamma, gamma = {gamma}{spread} (a positive first-order drift gives {a.kappa:.2g}){power}"


def _power(a: AlongRun) -> str:
    """The rule's power at the row's seeds and measured sd of γ, and the seeds 80% needs at the sd's
    upper bound (``along_power``, ``sd_upper``), with the assumptions both rest on."""
    grows, bounded = along_power(a.spread, a.kappa, a.n_gammas, a.level)
    if math.isnan(grows):
        return ""
    upper = sd_upper(a.spread, a.n_gammas)
    need = ["not reachable" if n is None else f"{n}" for n in seeds_for_power(upper, a.kappa, a.level)]
    return (f"; if this run's fitted gamma is normal over independent seeds with sd {a.spread:.2g}, the power at "
            f"{a.n_gammas} seeds with a gamma (of {len(a.seeds)}) is {grows:.0%} for 'grows' if gamma = kappa and "
            f"{bounded:.0%} for 'no growth' if gamma = 0; at the sd's {SD_CONFIDENCE:.0%} upper bound {upper:.2g}, "
            f"{POWER_TARGET:.0%} needs {need[0]} and {need[1]} seeds with a gamma")


def short(ev: Evidence) -> str:
    g = _primary(ev)
    if g is None or ev.reason == "no_scaling_group":
        return "-"
    return _gamma(g)


def measured(ev: Evidence) -> str:
    g = _primary(ev)
    if g is None:
        return "-"
    if ev.reason == "no_scaling_group":
        return f"descriptive, {g.group}: {g.outcome}"
    pairs = (f"antithetic check {g.antithetic_one_positive}/{g.antithetic_pairs} pairs with exactly one positive"
             if g.antithetic_pairs else "no antithetic directions recorded")
    chance_p = "" if g.chance_p is None else f", p = {g.chance_p:.2g}"
    return (f"{_gamma(g)}; at fixed iterates: phi' > 0 at {_pct(g.share_positive)} of the "
            f"{g.n_resolved - g.n_zero} resolved scaled steps with a non-zero phi' ({g.n_zero} with phi' = 0 left out; "
            f"this share is the one tested against 1/2: {g.chance}{chance_p}; uniform in the step: {g.uniform}); "
            f"{pairs}; "
            f"{len(g.seeds)} seed(s), {g.n_unresolved} unresolved; {g.group}{_beside(g)}")


def _beside(g: GroupScaling) -> str:
    """Theorem 1 (b)'s sum on the same runs, with the sentence that says why where the rows point apart."""
    if g.drift_sum is None:
        return ""
    why = agreement(g.outcome, g.drift_sum.outcome)
    return f"; Theorem 1 (b) on these runs: {g.drift_sum.outcome}" + (f" ({why})" if why else "")


def _p_value(ev: Evidence) -> float | None:
    g = _primary(ev)
    return None if g is None or ev.reason == "no_scaling_group" else g.p_value


REASONS = {
    "no_scaling_data": lambda ev: f"no step-scaling data: {ev.skipped or 'no data'}",
    "no_scaling_group": lambda ev: f"no non-diverged {ev.preregistered}-trained runs with scaled steps "
    "(the pre-registered group)",
    "grows": lambda ev: "the seed interval of gamma lies above 0",
    "grows_second_order": lambda ev: "the seed interval of gamma lies above 0, but phi' = 0 at every scaled step: "
    "a second-order drift whose size grows (a warm-up), not the 1/eta_t growth of a first-order one",
    "bounded": lambda ev: "the seed interval of gamma lies below kappa/2, half the growth a positive first-order "
    "drift gives",
    "all_zero": lambda ev: "rho_t = 0 at every scaled step of every seed",
    "constant_step": lambda ev: "the step size does not shrink over the scaled steps: growth cannot be told apart",
    "few_seeds": lambda ev: "fewer than 3 seeds with a trend of rho_t",
    "not_distinguished": lambda ev: "the seed interval of gamma holds 0 and reaches half the first-order growth",
    "no_along": lambda ev: "no rho_t along the run (no step-scaling ratio at c = 1 or no learning-rate column)",
}
OUTCOMES = {
    "grows": Outcome("rho_t grows along this run, like (t+1)^gamma: a description of this run (the paper's "
                     "sup_t rho_t <= C_fo has an unknown constant and cannot fail on a finite run)", "mixed"),
    "no growth": Outcome("no growth of rho_t along this run faster than (t+1)^(kappa/2), half what a positive "
                         "first-order drift gives (a slower growth is not excluded)", "holds"),
    "not testable": NOT_TESTABLE,
    "not measured": NOT_MEASURED,
}
PAPER = ("Assumption 5 (stability): the first-order drift of the targets is bounded, "
         "max(<grad_p R^t, p^(t+1) - p^t>, 0) <= C_fo(alpha) ||p^(t+1) - p^t||^2.")
TESTS = ("tests/analyses/assumption5/test_analyses_a5_families.py::test_stationary_second_order_coefficient_reads_no_growth",
         "tests/analyses/assumption5/test_analyses_a5_families.py::test_positive_first_order_reads_growth",
         "tests/analyses/assumption5/test_analyses_a5_families.py::test_chance_power_at_sigma_over_mu_3",
         "tests/analyses/assumption5/test_analyses_a5_families.py::test_antithetic_pairs_have_exactly_one_positive",
         "tests/analyses/stats/test_analyses_shares.py::test_coverage_on_heterogeneous_autocorrelated_seeds")


def _claim(objective: str, title: str, surrogate: str) -> Claim:
    return register(Claim(
        key=f"assumption5_{objective}", title=title, paper=PAPER,
        question=f"Does the stability ratio rho_t of {surrogate} grow along the run, as it does when the "
        "first-order drift is positive at the order of the step?",
        primary=f"ZeroLock {direction_of(objective)} (the objective's own training), the group with the most seeds",
        outcomes=OUTCOMES, rule=_rule(f"assumption5_{objective}", objective), vocabulary=SCALING_OUTCOMES,
        measured=measured, short=short,
        reason=lambda ev: REASONS[ev.reason](ev), figure="along", tests=TESTS, p_value=_p_value,
    ))


PAPER_CLAIM = _claim("paper", "Assumption 5 for R (paper objective)", "R (the paper's objective)")
IMPLEMENTED_CLAIM = _claim("implemented", "Assumption 5 for R̄ (implemented objective)", "R̄ (the implemented objective)")
