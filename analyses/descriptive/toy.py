"""Lemma 2 (analytic): the exact two-token toy as a result (docs/MATH.md, "Lemma 2 on the implemented loss").

p_y = (1,0), p_{k-1} = p = (½,½) (``zerolock_theory.theory.toy``), at ε = 0 and 0.1:
KL(p ‖ p_y), CE(p_y, p), ℓ^R_k(p), ℓ^F_k(p), the minimizers g_k (Lemma 2, reverse) and m_k
(forward) and TV(m_k, g_k). At ε = 0: KL(p ‖ p_y) = +inf, CE(p_y, p) = log 2, g_k = e_y,
m_k = α·e_y + (1-α)·p_{k-1}. m_k ≠ g_k: Lemma 2 does not describe the implemented loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from analyses.results import Result, declare, register
from zerolock_theory.theory.toy import two_token_case

__all__ = ["ToyCheck", "ToyRow", "toy_check"]


@dataclass(frozen=True)
class ToyRow:
    """The two-token check at one label smoothing ε."""

    epsilon: float
    p_y: list[float]
    m: list[float]
    g: list[float]
    kl_p_py: float
    ce_py_p: float
    reverse_loss: float
    forward_loss: float
    tv_m_g: float


@register
@dataclass(frozen=True)
class ToyCheck(Result):
    """The two-token check (p_y = (1, 0), p = (0.5, 0.5)) computed with ``zerolock_theory``."""

    kind = "toy_check"
    alpha: float
    p_prev: list[float]
    p: list[float]
    rows: list[ToyRow]
    minimizers_differ: bool


TOY_CHECK = declare("toy_check", ToyCheck, builtin=True)


def toy_check(alpha: float = 0.5, epsilons: Sequence[float] = (0.0, 0.1)) -> ToyCheck:
    """``zerolock_theory.theory.toy.two_token_case`` at each ε, as a result (module docstring).

    Guarantees: at ε = 0, ``kl_p_py == inf``, ``ce_py_p == log 2``, ``g == [1, 0]``; every row
    has ``m = α·p_y^ε + (1-α)·p_{k-1}``; ``minimizers_differ`` is true when TV(m_k, g_k) > 1e-9
    in some row.
    """
    cases = [two_token_case(alpha, eps) for eps in epsilons]
    rows = [
        ToyRow(
            epsilon=c.epsilon,
            p_y=c.p_y.tolist(),
            m=c.m.tolist(),
            g=c.g.tolist(),
            kl_p_py=c.kl_p_py,
            ce_py_p=c.ce_py_p,
            reverse_loss=c.reverse_loss,
            forward_loss=c.forward_loss,
            tv_m_g=c.tv_m_g,
        )
        for c in cases
    ]
    differ = any(r.tv_m_g > 1e-9 for r in rows)
    return ToyCheck(float(alpha), cases[0].p_prev.tolist(), cases[0].p.tolist(), rows, differ)
