"""ZeroLock against backprop (the abstract's claim, not Theorem 1) (``analyses.versus``).

The abstract says ZeroLock's rate "differs from BP only by polylog factors". On the task loss
L = CE(p_y, p_K): the rate of the global Ĝ_t (two half-batches of the training batch, full
backprop through all chunks; ``train/global_grad_sq_unbiased``) for each method and the
difference of their exponents; the practical headline, held-out CE at T (ZeroLock −
backprop, seed interval) and the steps each needs to reach the same held-out CE. Primary
groups: ZeroLock forward (what implementations train) and backprop, SGD with η_t ∝ 1/√t.
"""

from __future__ import annotations

from analyses.claims.groups import primary_group
from analyses.claims.registry import (
    NOT_MEASURED,
    Claim,
    Outcome,
    SuiteInputs,
    register,
    result_rule,
)
from analyses.results import NotMeasured
from analyses.verdict import Evidence
from analyses.versus import GLOBAL_COLUMN, Versus, versus

KEY = "versus_backprop"


def _versus(inputs: SuiteInputs) -> Versus:
    zl = primary_group(inputs.table, "zerolock", "forward")
    bp = primary_group(inputs.table, "backprop")
    if zl is None or bp is None or not zl.runs or not bp.runs:
        raise NotMeasured("needs non-diverged ZeroLock forward and backprop groups under eta_t ~ 1/sqrt(t)")
    def by_seed(group):  # runs are paired by their seed
        return [(f"seed {s}", frame) for s, (_, frame) in zip(group.seeds, group.runs, strict=True)]

    return versus(by_seed(zl), by_seed(bp), column=GLOBAL_COLUMN, level=inputs.level)


# the held-out CE difference decides; the exponents and steps are beside it
rule = result_rule(KEY, KEY, Versus, lambda found: found.ce_pairing.replace(" ", "_"))


def short(ev: Evidence) -> str:
    found = ev.result
    if not isinstance(found, Versus) or found.ce_difference is None:
        return "-"
    return f"held-out CE, ZeroLock - backprop = {found.ce_difference} nats"


def measured(ev: Evidence) -> str:
    found = ev.result
    if not isinstance(found, Versus):
        return "-"
    parts = [short(ev)]
    if found.beta_difference is not None:
        parts.append(f"beta_ZeroLock - beta_backprop = {found.beta_difference} (global G-hat_t)")
    steps = {"ZeroLock": found.steps_zerolock, "backprop": found.steps_backprop}
    parts.append("steps to held-out CE " + f"{found.target_ce:.3g}: "
                 + ", ".join(f"{k} {v if v is not None else 'not reached'}" for k, v in steps.items()))
    return "; ".join(parts + found.notes)


def reason(ev: Evidence) -> str:
    if ev.reason == "skipped":
        return ev.skipped or "no data"
    if ev.reason == "none":
        return "fewer than 3 seeds per method with a held-out CE at T (diverged runs are left out)"
    return (f"the interval of the held-out CE difference at T ({ev.reason.replace('_', ' ')}) decides; "
            "not covered by Theorem 1")


CLAIM = register(Claim(
    key=KEY,
    title="ZeroLock against backprop (abstract, not Theorem 1)",
    paper="Abstract: ZeroLock's convergence rate differs from backpropagation's only by polylogarithmic factors.",
    question="After the same steps, is ZeroLock's held-out task loss worse than backprop's, and is its global "
    "gradient's rate slower?",
    primary="ZeroLock forward and backprop, SGD with eta_t ~ 1/sqrt(t), paired by seed",
    outcomes={
        "zerolock worse": Outcome("ZeroLock's held-out CE at T is higher than backprop's (interval above 0)", "fails"),
        "no difference detected": Outcome("the interval of the difference covers 0", "mixed"),
        "zerolock better": Outcome("ZeroLock's held-out CE at T is lower than backprop's", "holds"),
        "not testable": Outcome("fewer than 3 seeds per method", "none"),
        "not measured": NOT_MEASURED,
    },
    rule=rule, measured=measured, short=short, reason=reason, figure="outcome",
    tests=("tests/analyses/test_analyses_versus.py::test_paired_difference_steps_to_equal_ce_and_round_trip",
           "tests/analyses/test_analyses_versus.py::test_welch_when_seeds_do_not_pair_and_not_testable_with_two_seeds"),
    analyses={KEY: _versus},
))
