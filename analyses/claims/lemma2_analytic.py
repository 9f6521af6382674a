"""Lemma 2 (analytic): is g_k the optimum of the loss that implementations train?

The exact two-token toy (``analyses.minimizers.toy_check``) and the closed form: the implemented
(forward, cross-entropy) loss is minimized by m_k = α·p_y + (1−α)·p_{k−1}; m_k ≠ g_k in the toy
→ "refuted"; m_k = g_k in every toy row → "supported".
"""

from __future__ import annotations

from analyses.claims.registry import NOT_MEASURED, Claim, ClaimInputs, Outcome, register, skipped
from analyses.claims.text import fmt
from analyses.minimizers import ToyCheck
from analyses.verdict import Evidence, ToyFigures, Verdict

KEY = "lemma2_analytic"


def rule(inputs: ClaimInputs) -> Verdict:
    """Refuted when m_k ≠ g_k in the exact toy, supported when they agree."""
    toy = inputs.get("toy_check", ToyCheck)
    if toy is None:
        return skipped(KEY, "toy_check", inputs)
    row = toy.rows[0]
    figures = ToyFigures(toy.alpha, row.epsilon, row.kl_p_py, row.ce_py_p, tuple(row.m), tuple(row.g), row.tv_m_g)
    if toy.minimizers_differ:
        return Verdict(KEY, "refuted", Evidence("toy_differ", toy=figures))
    return Verdict(KEY, "supported", Evidence("toy_agree", toy=figures))


def measured(ev: Evidence) -> str:
    """The toy's first row: KL(p‖p_y), CE(p_y, p), m_k, g_k and TV(m_k, g_k)."""
    toy = ev.toy
    if toy is None:
        return "-"
    return (
        f"two-token toy (alpha={fmt(toy.alpha)}, eps={fmt(toy.epsilon)}): KL(p||p_y) = "
        f"{fmt(toy.kl_p_py)}, CE(p_y, p) = {fmt(toy.ce_py_p)}; m_k = "
        f"({', '.join(map(fmt, toy.m))}), g_k = ({', '.join(map(fmt, toy.g))}), "
        f"TV(m_k, g_k) = {fmt(toy.tv_m_g)}"
    )


REASONS = {
    "skipped": lambda ev: ev.skipped or "no data",
    "toy_differ": lambda ev: "the implemented (forward) loss is minimized by m_k = alpha p_y + (1-alpha) "
    "p_(k-1) (closed form), which differs from Lemma 2's g_k in the exact toy",
    "toy_agree": lambda ev: "m_k = g_k in every toy row",
}

CLAIM = register(Claim(
    key=KEY,
    title="Lemma 2 (analytic): g_k is the optimum of the implemented loss",
    paper="The local optimum of chunk k is the geometric mean p*_k ∝ p_y^α · p_(k-1)^(1-α) (Lemma 2, Eq. 15).",
    question="Is the geometric mean g_k the minimizer of the loss that implementations train (cross-entropy)?",
    primary="the exact two-token toy (no runs)",
    outcomes={
        "supported": Outcome("m_k = g_k: the implemented loss has Lemma 2's optimum", "holds"),
        "refuted": Outcome("the implemented loss is minimized by m_k, which differs from g_k", "fails"),
        "not measured": NOT_MEASURED,
    },
    rule=rule,
    measured=measured,
    short=lambda ev: "-" if ev.toy is None else f"TV(m_k, g_k) = {fmt(ev.toy.tv_m_g)} (eps = {fmt(ev.toy.epsilon)})",
    reason=lambda ev: REASONS[ev.reason](ev),
    tests=("tests/analyses/test_analyses_minimizers.py::test_the_analytic_row_is_decided_by_the_toy_alone",
           "tests/analyses/test_analyses_minimizers.py::test_toy_check_matches_the_review"),
))
