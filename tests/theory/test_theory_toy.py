"""The one two-token toy: its known values, and the three users agree on it."""

from __future__ import annotations

import math

import pytest

from analyses.descriptive.movement import toy_check
from zerolock_theory.theory.symbolic import two_token_check
from zerolock_theory.theory.toy import two_token_case


def test_known_values_at_one_hot():
    case = two_token_case(0.5, 0.0)
    assert case.kl_p_py == math.inf and case.ce_py_p == pytest.approx(math.log(2), abs=1e-15)
    assert case.g.tolist() == [1.0, 0.0] and case.m.tolist() == [0.75, 0.25]
    assert case.tv_m_g == 0.25 and case.reverse_degenerate


@pytest.mark.parametrize("alpha", [0.25, 0.5, 0.9])
def test_tv_between_minimizers_is_half_of_one_minus_alpha(alpha):
    assert two_token_case(alpha, 0.0).tv_m_g == pytest.approx((1 - alpha) / 2, abs=1e-15)


def test_users_agree():
    numeric = two_token_case(0.5, 0.0)
    row = toy_check(0.5).rows[0]
    assert row.m == numeric.m.tolist() and row.g == numeric.g.tolist() and row.tv_m_g == numeric.tv_m_g
    exact = dict(two_token_check().steps)
    assert float(exact["CE(p_y, p)"]) == pytest.approx(numeric.ce_py_p, abs=1e-15)
