"""ZeroLock against backprop (the paper's empirical claim, not Theorem 1) (docs/TUNED.md).

The paper's curves show ZeroLock fine-tuning to a loss comparable with backprop's. A comparison
at one pair of step sizes compares the step sizes as much as the methods, so the row decides
only on a tuned comparison (``analyses.versus.tuned_versus``): each method (ZeroLock forward, ZeroLock
reverse, backprop) at the η_0 its validation split chose from one shared grid, held-out CE at
the budget on a separate test split, each variant − backprop paired by seed, **Holm over the
two comparisons**. Its outcome names both: "forward: W; reverse: W" with W one of "zerolock
worse", "no difference detected", "zerolock better", "not testable".

A suite's analysis gets the tuned comparison when one of its inputs is a ``zerolock tune``
directory. Without one, the row reads "not tuned": the suite's own pair (each method's η_0 from
its stability pilot, ``analyses.versus.pilot``: held-out CE difference, global-gradient rates, steps
to the same CE) is shown beside it, descriptively, and decides nothing.
"""

from __future__ import annotations

import itertools

from analyses.groups import primary_group
from analyses.registry import (
    NOT_MEASURED,
    Claim,
    ClaimInputs,
    Outcome,
    SuiteInputs,
    register,
)
from analyses.results import NotMeasured
from analyses.verdict import Evidence, Verdict
from analyses.versus.data import VersusRun, versus_run
from analyses.versus.pilot import GLOBAL_COLUMN, VERSUS, Versus, versus_of
from analyses.versus.tuned_versus import TUNED, TUNED_OUTCOMES, VARIANTS, TunedVersus

KEY = "versus_backprop"
NOT_TUNED = "not tuned"


def _versus(inputs: SuiteInputs) -> Versus:
    zl = primary_group(inputs.table, "zerolock", "forward")
    bp = primary_group(inputs.table, "backprop")
    if zl is None or bp is None or not zl.runs or not bp.runs:
        raise NotMeasured("needs non-diverged ZeroLock forward and backprop groups under eta_t ~ 1/sqrt(t)")
    def by_seed(group) -> list[VersusRun]:  # runs are paired by their seed
        return [versus_run(frame, f"seed {s}") for s, (_, frame) in zip(group.seeds, group.runs, strict=True)]

    return versus_of(by_seed(zl), by_seed(bp), column=GLOBAL_COLUMN, level=inputs.level)


WORDS = tuple(f"forward: {a}; reverse: {b}" for a, b in itertools.product(TUNED_OUTCOMES, repeat=2))
"""The row's words with a tuned comparison (``combined``): both comparisons' ``TUNED_OUTCOMES``."""


def combined(found: TunedVersus) -> str:
    """The row's word: both comparisons, forward first."""
    words = [found.comparisons[v].outcome if v in found.comparisons else "not testable" for v in VARIANTS]
    return f"forward: {words[0]}; reverse: {words[1]}"


def rule(inputs: ClaimInputs) -> Verdict:
    """The tuned comparison decides; without one the row is "not tuned" (module docstring)."""
    tuned = inputs.get(TUNED)
    if tuned is not None:
        rejected = [c.p_value for c in tuned.comparisons.values() if c.holm_rejected]
        p = min(rejected) if rejected else min((c.p_value for c in tuned.comparisons.values()), default=None)
        return Verdict(KEY, combined(tuned), Evidence("tuned", result=tuned, p_value=p))
    untuned = inputs.get(VERSUS)
    return Verdict(KEY, NOT_TUNED, Evidence("not_tuned", result=untuned, skipped=inputs.why(VERSUS)))


def _fmt(x) -> str:
    return "n/a" if x is None else str(x)


def short(ev: Evidence) -> str:
    found = ev.result
    if isinstance(found, TunedVersus):
        return "; ".join(f"{v.removeprefix('zerolock-')} - backprop = {_fmt(c.difference)} nats"
                         for v, c in found.comparisons.items())
    if isinstance(found, Versus) and found.ce_difference is not None:
        return f"untuned pair: held-out CE, ZeroLock - backprop = {found.ce_difference} nats (descriptive)"
    return "-"


def measured(ev: Evidence) -> str:
    found = ev.result
    if isinstance(found, TunedVersus):
        methods = "; ".join(f"{m} eta_0 {r.lr:g}{' (grid edge)' if r.on_boundary else ''}: test CE {_fmt(r.test_ce)} "
                            f"({len(r.seeds)} seeds)" for m, r in found.methods.items())
        steps = "; ".join(f"{v} reaches backprop's {found.target_ce:.3g} "
                          + (f"at step {c.steps_to_backprop}" if c.steps_to_backprop is not None
                             else "not within the budget") for v, c in found.comparisons.items())
        holm = "; ".join(f"{v}: p = {c.p_value:.2g}{' (Holm: rejected)' if c.holm_rejected else ''}"
                         for v, c in found.comparisons.items())
        return f"{short(ev)}; {methods}; {steps}; {holm}; budget {found.budget} steps"
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
    if ev.reason == "tuned":
        return ("each method at the eta_0 its validation split chose; test-split CE at the budget, paired by seed; "
                "Holm over the two comparisons at the table's level")
    why = f" ({ev.skipped})" if ev.skipped else ""
    return ("no zerolock tune directory among the inputs: the suite's eta_0 pair comes from each method's stability "
            f"pilot, a comparison of step sizes as much as of methods; shown, not decided{why}")


def _tone(words: tuple[str, str]) -> str:
    if "zerolock worse" in words:
        return "fails"
    if all(w == "zerolock better" for w in words):
        return "holds"
    return "none" if all(w == "not testable" for w in words) else "mixed"


OUTCOMES = {
    f"forward: {a}; reverse: {b}": Outcome(f"ZeroLock forward against backprop: {a}; ZeroLock reverse: {b} (each at "
                                           "its own best eta_0, Holm over the two)", _tone((a, b)))
    for a, b in itertools.product(TUNED_OUTCOMES, repeat=2)
}
OUTCOMES[NOT_TUNED] = Outcome("no tuned comparison: the step sizes were not chosen for this question", "none")
OUTCOMES["not measured"] = NOT_MEASURED

CLAIM = register(Claim(
    key=KEY,
    title="ZeroLock against backprop (the paper's curves; not Theorem 1)",
    paper="ZeroLock fine-tunes LLMs to a loss comparable with backpropagation's (its training curves); abstract: "
    "its convergence rate differs from backpropagation's only by polylogarithmic factors.",
    question="With each method at its own best step size, is ZeroLock's held-out task loss at the budget worse "
    "than backprop's, for each variant?",
    primary="ZeroLock forward and reverse against backprop, each at the eta_0 its validation split chose, paired "
    "by seed (a zerolock tune directory)",
    outcomes=OUTCOMES, rule=rule, vocabulary=WORDS, measured=measured, short=short, reason=reason, figure="versus",
    tests=("tests/analyses/versus/test_analyses_tuning.py::test_selection_reads_the_validation_split_only",
           "tests/analyses/versus/test_analyses_versus_row.py::test_row_decides_only_on_a_tuned_directory",
           "tests/analyses/versus/test_analyses_versus.py::test_paired_difference_steps_to_equal_ce_and_round_trip"),
    analyses={VERSUS: _versus},
))
