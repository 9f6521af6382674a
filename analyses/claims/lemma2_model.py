"""Lemma 2 on the model (descriptive): which target do trained chunks move toward?

``analyses.tracking``: forward-trained chunks' r(m) − r(g) in TV relative to the untrained model,
interval over seeds: > 0 (toward m_k) → "refuted", < 0 (toward g_k) → "supported", covers 0 →
"inconclusive"; too few or unmoved seeds → "not testable".
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
from analyses.claims.text import group_statement
from analyses.tracking import TrackingSet
from analyses.verdict import Evidence, Verdict

KEY = "lemma2_model"
TOWARD = {"m_k": "refuted", "g_k": "supported", "undecided": "inconclusive"}


def rule(inputs: ClaimInputs) -> Verdict:
    """The forward group's ``toward`` decides (module docstring)."""
    tracking = inputs.get("tracking", TrackingSet)
    if tracking is None:
        return skipped(KEY, "tracking", inputs)
    forward = tracking.of("forward")
    evidence = Evidence("tracking" if forward else "no_forward_runs", preregistered="forward",
                        excluded=run_names(tracking.excluded), groups=tuple(d.figures() for d in tracking.directions))
    if forward is None:
        return Verdict(KEY, "not testable", evidence)
    return Verdict(KEY, TOWARD.get(forward.toward, "not testable"), evidence)


def measured(ev: Evidence) -> str:
    """Each direction's statement with its run count."""
    return "; ".join(f"{group_statement(g)} ({g.seeds} run(s))" for g in ev.groups) or "-"


REASONS = {
    "skipped": lambda ev: ev.skipped or "no data",
    "no_forward_runs": lambda ev: "no forward-trained (implemented-loss) runs",
    "tracking": lambda ev: "descriptive: which target the implemented loss's chunks move toward, in one "
    "symmetric bounded metric (TV) with the same eps for both targets; the interval is over seeds",
}

CLAIM = register(Claim(
    key=KEY,
    title="Lemma 2 (on the model, descriptive): trained chunks track g_k",
    paper="Each chunk is driven toward its local optimum p*_k, the geometric mean of p_y and p_(k-1) (Lemma 2).",
    question="Do chunks trained with the implemented loss move toward g_k or toward m_k?",
    primary="ZeroLock forward (the implemented loss), the group with the most seeds",
    outcomes={
        "supported": Outcome("trained chunks move toward g_k more than toward m_k", "holds"),
        "refuted": Outcome("trained chunks move toward m_k more than toward g_k", "fails"),
        "inconclusive": Outcome("no detectable preference between the two targets", "mixed"),
        "not testable": NOT_TESTABLE,
        "not measured": NOT_MEASURED,
    },
    rule=rule,
    measured=measured,
    short=lambda ev: next((f"forward: r(m) - r(g) = {g.interval}" for g in ev.groups
                           if g.trained == "forward" and g.interval is not None), "-"),
    reason=lambda ev: REASONS[ev.reason](ev),
    tests=("tests/analyses/test_analyses_tracking.py::test_known_target_is_found_with_the_same_epsilon",
           "tests/analyses/test_analyses_tracking.py::test_mixed_seeds_are_undecided"),
))
