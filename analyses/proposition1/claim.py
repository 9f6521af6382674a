"""Proposition 1 as an analytic row (``analyses.proposition1.identity``, docs/MATH.md "Proposition 1
and depth").

What the losses imply for every pair of readouts, with the gap scaled by 1/α and the loss's own
task term (CE(t, ·) forward, KL(· ‖ t) reverse, t = p_y^ε), is an identity of the definitions
(sympy, and checked on a grid of readouts here): "holds as an identity". The transcription
CE_k ≤ CE_(k-1) + δ_k (task CE, gap unscaled) is false: a reverse chunk exactly at its optimum
(δ_k = 0) after a confident p_(k-1)(y) = 0.99 has CE_k > CE_(k-1). A run adds no evidence to
either (principle 4): the rising pairs counted on the model and the task CE by depth are
descriptive sections of the report, not this row's evidence.
"""

from __future__ import annotations

from analyses.proposition1.identity import (
    IDENTITY,
    IDENTITY_OUTCOMES,
    Proposition1Identity,
    proposition1_identity,
)
from analyses.registry import NOT_MEASURED, Claim, Outcome, register, result_rule
from analyses.text import fmt
from analyses.verdict import Evidence

KEY = "proposition1"


def _result(ev: Evidence) -> Proposition1Identity | None:
    return ev.result if isinstance(ev.result, Proposition1Identity) else None


def short(ev: Evidence) -> str:
    r = _result(ev)
    if r is None:
        return "-"
    c = r.transcription
    return (f"implied form: 0 of {r.forward.cases + r.reverse.cases} cases violate; as transcribed: "
            f"CE_k - CE_(k-1) = {fmt(c.ce - c.ce_prev)} > delta_k = 0")


def measured(ev: Evidence) -> str:
    r = _result(ev)
    if r is None:
        return "-"
    c = r.transcription
    checks = "; ".join(f"{x.direction}: {x.cases} readout pairs ({x.at_optimum} exactly at the optimum), largest "
                       f"excess {x.max_violation:.1e}, identity residual {x.max_residual:.1e}"
                       for x in (r.forward, r.reverse))
    return (f"CE_k <= CE_(k-1) + delta_k/alpha (forward) and KL(p_k||t) <= KL(p_(k-1)||t) + delta_k/alpha "
            f"(reverse), alpha in {r.alphas}, eps in {r.epsilons}, V in {r.vocabs}: {checks}. Counterexample to "
            f"CE_k <= CE_(k-1) + delta_k: reverse chunk at g_k (delta_k = 0), p_(k-1)(y) = {c.p_prev_label:g}, "
            f"eps = {c.epsilon:g}, alpha = {c.alpha:g}, V = {c.vocab}: CE_(k-1) = {fmt(c.ce_prev)}, "
            f"CE_k = {fmt(c.ce)}")


REASONS = {
    "skipped": lambda ev: ev.skipped or "no data",
    "algebra": lambda ev: "an identity of the definitions (sympy: proposition1_slack; a run cannot add evidence); "
    "the transcription's counterexample is exact (sympy: proposition1_transcription)",
}

CLAIM = register(Claim(
    key=KEY,
    title="Proposition 1: the task loss through depth, up to the local gaps",
    paper="Proposition 1 (as transcribed here): the task loss is non-increasing in depth up to the local gaps, "
    "L(p_k) <= L(p_(k-1)) + delta_k.",
    question="What do the local losses imply about the task loss from chunk k-1 to chunk k, for every pair of "
    "readouts, and does the unscaled transcription follow?",
    primary="algebra: a sympy derivation and a seeded grid of readouts, both losses, every alpha and eps (no runs)",
    outcomes={
        IDENTITY_OUTCOMES[0]: Outcome("with delta_k/alpha and the loss's own task term the inequality is an "
                                      "identity (no run can violate it); CE_k <= CE_(k-1) + delta_k is false "
                                      "(the delta_k = 0 counterexample)", "mixed"),
        IDENTITY_OUTCOMES[1]: Outcome("the implied inequality is an identity, and the counterexample did not "
                                      "break the transcription", "holds"),
        IDENTITY_OUTCOMES[2]: Outcome("a readout pair broke the implied inequality: a bug in the losses "
                                      "(the algebra cannot fail)", "fails"),
        "not measured": NOT_MEASURED,
    },
    rule=result_rule(KEY, IDENTITY, lambda found: "algebra"),
    vocabulary=IDENTITY_OUTCOMES,
    measured=measured, short=short, reason=lambda ev: REASONS[ev.reason](ev), figure="depth",
    analyses={IDENTITY: lambda inputs: proposition1_identity()},
    tests=("tests/theory/test_theory_proposition1.py::test_forward_implied_inequality_for_every_readout",
           "tests/theory/test_theory_proposition1.py::test_reverse_implied_inequality_for_every_readout",
           "tests/theory/test_theory_proposition1.py::test_the_transcription_fails_at_an_exact_optimum",
           "tests/analyses/proposition1/test_analyses_proposition_identity.py::test_the_row_is_analytic_and_fooled_by_no_run"),
))
