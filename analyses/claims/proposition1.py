"""Proposition 1 on the rising pairs: CE_k ≤ CE_(k−1) + δ_k where the task loss rises with
depth (``analyses.proposition``, docs/MATH.md "Proposition 1 and depth").

The inequality has content only at pairs where CE_k > CE_(k−1): elsewhere it holds because
δ_k ≥ 0, for any method. Per seed, the share of rising pairs that violate it (float
tolerance); the same counts at the untrained model as the baseline; the tightness
(CE_k − CE_(k−1))/δ_k at each rising pair. Outcomes: "holds" (at the n rising pairs),
"violated" (at m of n), "not tested" (the task loss never rises with depth on this run),
"not testable" (too few seeds). More violations never give a weaker outcome.
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
    skipped,
)
from analyses.proposition import PropositionGroup, PropositionSet
from analyses.verdict import Evidence, Verdict

KEY = "proposition1"


def rule(inputs: ClaimInputs) -> Verdict:
    """The primary group's outcome (the paper's reverse setting, most seeds)."""
    test = inputs.get("proposition", PropositionSet)
    if test is None:
        return skipped(KEY, "proposition", inputs)
    own = test.primary.trained == "reverse"
    evidence = Evidence("proposition" if own else "no_proposition_group", preregistered="reverse",
                        excluded=run_names(test.excluded), result=test)
    return Verdict(KEY, test.primary.outcome if own else "not testable", evidence)


def _primary(ev: Evidence) -> PropositionGroup | None:
    return ev.result.primary if isinstance(ev.result, PropositionSet) and ev.result.groups else None


def short(ev: Evidence) -> str:
    g = _primary(ev)
    if g is None:
        return "-"
    return f"{g.pairs.n_violations} of {g.pairs.n_rising} rising pairs violate ({g.pairs.n_pairs} pairs)"


def measured(ev: Evidence) -> str:
    g = _primary(ev)
    if g is None:
        return "-"
    tight = ("n/a" if g.median_tightness is None
             else f"median {g.median_tightness:.3g}, max {g.max_tightness:.3g}")
    share = "n/a" if g.violation_share is None else str(g.violation_share)
    return (f"{short(ev)}; violating share {share}; tightness (CE_k - CE_k-1)/delta_k {tight}; untrained "
            f"baseline: {g.baseline.n_rising} of {g.baseline.n_pairs} pairs rise; {len(g.runs)} seed(s), {g.group}")


REASONS = {
    "skipped": lambda ev: ev.skipped or "no data",
    "no_proposition_group": lambda ev: f"no non-diverged {ev.preregistered}-trained runs with CE_k and delta_k "
    "(the pre-registered group)",
    "proposition": lambda ev: {
        "holds": "every rising pair is covered by its slack, at float tolerance",
        "violated": "at least one rising pair is not covered by its slack",
        "not tested": "the task loss never rises with depth: the slack is never needed",
        "not testable": "fewer than 3 seeds in the primary group",
    }[_primary(ev).outcome],
}

CLAIM = register(Claim(
    key=KEY,
    title="Proposition 1: CE_k <= CE_(k-1) + delta_k where CE rises with depth",
    paper="Proposition 1: the task loss is non-increasing in depth up to the local gaps, "
    "L(p_k) <= L(p_(k-1)) + delta_k.",
    question="Where the task loss rises from chunk k-1 to chunk k, does the local gap cover the rise?",
    primary="ZeroLock reverse (the paper's setting), the group with the most seeds",
    outcomes={
        "holds": Outcome("holds at the rising pairs (their tightness is shown)", "holds"),
        "violated": Outcome("violated at some rising pairs", "fails"),
        "not tested": Outcome("not tested: the task loss never rises with depth on this run (the slack is never "
                              "needed)", "none"),
        "not testable": NOT_TESTABLE,
        "not measured": NOT_MEASURED,
    },
    rule=rule, measured=measured, short=short, reason=lambda ev: REASONS[ev.reason](ev), figure="depth",
    tests=("tests/analyses/test_analyses_proposition.py::test_no_rising_pair_is_not_tested",
           "tests/analyses/test_analyses_proposition.py::test_adding_a_violation_never_weakens_the_outcome",
           "tests/analyses/test_analyses_proposition.py::test_rising_pairs_beyond_the_slack_are_violated_at_m_of_n"),
))
