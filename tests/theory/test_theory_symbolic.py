"""The sympy derivations hold and render readably."""

from __future__ import annotations

import sympy as sp

from zerolock_theory.theory.symbolic import (
    Derivation,
    all_derivations,
    mirror_counterexample,
    two_token_check,
)


def test_every_derivation_holds() -> None:
    derivations = all_derivations()
    assert len(derivations) == 14
    failed = [d.name for d in derivations if not d.holds]
    assert not failed, failed
    names = " ".join(d.name for d in derivations)
    for part in ("forward minimizer, V=2", "reverse minimizer, V=3", "two-token", "Lemma 1"):
        assert part in names


def test_two_token_values_are_exact() -> None:
    check = dict(two_token_check().steps)
    assert check["KL(p ‖ p_y)"] == sp.oo
    assert check["CE(p_y, p)"] == sp.log(2)
    assert check["g_k (α > 0)"] == sp.Tuple(1, 0)


def test_counterexample_gap_is_nonzero_and_exact() -> None:
    steps = dict(mirror_counterexample().steps)
    assert sp.simplify(steps["step_1 − m_1"] - (sp.E - 3) / (4 * (1 + sp.E))) == 0
    assert float(steps["step_1 − m_1"]) < -0.018


def test_render_marks_status() -> None:
    text = two_token_check().render()
    assert text.startswith("[PASS] two-token check") and "oo" in text
    pretty = all_derivations()[0].render(pretty=True)
    assert pretty.startswith("[PASS]")
    failing = Derivation("x", "claim", (("value", sp.Integer(1)),), False)
    assert failing.render().startswith("[FAIL] x")
