"""Proposition 1 as algebra: the implied inequalities hold for every readout pair; the unscaled
transcription fails at an exact optimum (docs/MATH.md, "Proposition 1 and depth")."""

from __future__ import annotations

import math

import pytest
import sympy as sp
from hypothesis import given

from analyses.proposition1.identity import IDENTITY_TOL, implied_slack, transcription_counterexample
from tests.strategies import readout_pair_case
from zerolock_theory.theory.symbolic import proposition1_slack, proposition1_transcription


@given(readout_pair_case("forward"))
def test_forward_implied_inequality_for_every_readout(case):
    p_prev, p, target, alpha = case
    slack = implied_slack("forward", p_prev, p, target, alpha)
    assert float(slack.violation(alpha)) <= 1e-9 * max(1.0, float(slack.task))  # CE_k <= CE_(k-1) + delta/alpha
    assert float(slack.residual(alpha)) <= 1e-9 * max(1.0, float(slack.task_prev))  # the slack identity
    assert float(slack.rhs) >= -1e-12 and float(slack.delta) >= -1e-12


@given(readout_pair_case("reverse"))
def test_reverse_implied_inequality_for_every_readout(case):
    p_prev, p, target, alpha = case
    slack = implied_slack("reverse", p_prev, p, target, alpha)
    assert float(slack.violation(alpha)) <= 1e-9 * max(1.0, float(slack.task))  # KL(p_k||t) <= ... + delta/alpha
    assert float(slack.residual(alpha)) <= 1e-9 * max(1.0, float(slack.task_prev))
    assert float(slack.rhs) >= -1e-12 and float(slack.delta) >= -1e-12


def test_the_slack_identities_are_exact_in_sympy():
    derivations = proposition1_slack(3)
    assert [d.holds for d in derivations] == [True, True]
    assert all(dict(d.steps)["difference"] == 0 for d in derivations)


def test_the_transcription_fails_at_an_exact_optimum():
    counter = transcription_counterexample()
    assert counter.delta == pytest.approx(0.0, abs=1e-15)  # p_k = g_k exactly
    assert counter.false and counter.ce - counter.ce_prev == pytest.approx(0.0127450, abs=1e-6)
    assert counter.implied_violation < 0  # the implied form (KL to t, delta/alpha) holds there
    exact = proposition1_transcription()
    steps = dict(exact.steps)
    assert exact.holds and steps["δ_k"] == 0
    assert float(steps["CE_k − CE_{k-1}"]) == pytest.approx(counter.ce - counter.ce_prev, rel=1e-12)
    assert sp.simplify(steps["CE_{k-1}"] + sp.log(sp.Rational(99, 100))) == 0


def test_a_confident_previous_readout_is_what_breaks_the_transcription():
    # below the target's label mass, the reverse optimum raises p(y): CE falls, the transcription holds there
    assert not transcription_counterexample(p_prev_label=0.9).false
    assert transcription_counterexample(p_prev_label=0.99, vocab=5).false
    assert math.isclose(IDENTITY_TOL, 1e-9)
