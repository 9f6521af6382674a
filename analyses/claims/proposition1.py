"""Proposition 1: CE_k ≤ CE_(k−1) + δ_k at float tolerance, with its slack, on the primary group
(the paper's setting: reverse, most seeds) (``analyses.proposition``)."""

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
from analyses.claims.text import group_statement
from analyses.proposition import PropositionSet
from analyses.verdict import Evidence, Verdict

KEY = "proposition1"
OUTCOME = {"consistent": "supported", "consistent but vacuous": "supported", "violated": "refuted",
           "isolated violations": "inconclusive", "not testable": "not testable"}


def rule(inputs: ClaimInputs) -> Verdict:
    """The primary group's outcome decides (module docstring)."""
    test = inputs.get("proposition", PropositionSet)
    if test is None:
        return skipped(KEY, "proposition", inputs)
    primary = test.primary
    own = primary.trained == "reverse"
    evidence = Evidence("proposition" if own else "no_proposition_group", preregistered="reverse",
                        excluded=run_names(test.excluded), groups=tuple(g.figures() for g in test.groups))
    return Verdict(KEY, OUTCOME[primary.verdict] if own else "not testable", evidence)


def measured(ev: Evidence) -> str:
    """The primary group's statement, then the others (descriptive)."""
    if ev.reason == "skipped":
        return "-"
    if ev.reason == "no_proposition_group":
        return "; ".join(f"descriptive, {g.group}: {group_statement(g)}" for g in ev.groups)
    first = ev.groups[0]
    others = [f"{g.group}: {g.outcome}" for g in ev.groups[1:]]
    return (f"{group_statement(first)} ({first.seeds} seed(s), {first.group})"
            + ("; other groups (descriptive): " + "; ".join(others) if others else ""))


PROPOSITION_REASONS = {
    "consistent": "CE_k <= CE_(k-1) + delta_k at every probed step and pair, at float tolerance",
    "consistent but vacuous": "the inequality holds, but delta_k is over 10x the CE differences it should bound",
    "violated": "the share of violating pairs has a seed interval above 0",
    "isolated violations": "some pairs violate it, but not consistently across seeds",
    "not testable": "fewer than 3 seeds in the primary group",
}
REASONS = {
    "skipped": lambda ev: ev.skipped or "no data",
    "no_proposition_group": lambda ev: f"no non-diverged {ev.preregistered}-trained runs with CE_k and delta_k "
    "(the pre-registered group)",
    "proposition": lambda ev: PROPOSITION_REASONS[ev.groups[0].outcome],
}


CLAIM = register(Claim(
    key=KEY,
    title="Proposition 1: CE_k <= CE_(k-1) + delta_k",
    paper="Proposition 1: the task loss is non-increasing in depth up to the local gaps, "
    "L(p_k) <= L(p_(k-1)) + delta_k.",
    question="Does the task loss at chunk k stay within the previous chunk's plus the local gap?",
    primary="ZeroLock reverse (the paper's setting), the group with the most seeds",
    outcomes={
        "supported": Outcome("the inequality holds at every probed pair", "holds"),
        "refuted": Outcome("the inequality is violated consistently across seeds", "fails"),
        "inconclusive": Outcome("isolated violations, not consistent across seeds", "mixed"),
        "not testable": NOT_TESTABLE,
        "not measured": NOT_MEASURED,
    },
    rule=rule, measured=measured,
    short=lambda ev: next((f"{g.pairs - g.violations}/{g.pairs} pairs hold" for g in ev.groups[:1]), "-"), reason=lambda ev: REASONS[ev.reason](ev), figure="depth",
    tests=("tests/analyses/test_analyses_proposition.py::test_every_verdict_is_reachable",
           "tests/analyses/test_analyses_proposition.py::test_violations_in_every_seed_and_isolated_ones"),
))
