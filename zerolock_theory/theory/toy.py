"""The exact two-token toy (docs/MATH.md, "Local losses" and "Lemma 2 on the implemented loss").

Two tokens, p_y = e_1 = (1, 0) (label-smoothed to p_y^ε), p_{k-1} = p = (½, ½). The one
definition of the toy, used by ``analyses.descriptive.movement.toy_check`` (the Lemma 2 row),
``zerolock theory toy`` (the CLI) and ``theory.symbolic.two_token_check`` (exact, sympy).

At ε = 0: KL(p ‖ p_y) = +inf while CE(p_y, p) = log 2; g_k = e_y for α > 0 and
m_k = α·e_y + (1-α)·p_{k-1}, so TV(m_k, g_k) = (1-α)/2 (0.25 at α = ½): the implemented
(forward) loss's minimizer m_k is not Lemma 2's g_k.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import torch

from zerolock_theory.theory.divergences import cross_entropy, kl, total_variation
from zerolock_theory.theory.losses import local_loss
from zerolock_theory.theory.targets import arithmetic_target, geometric_target, label_smooth

__all__ = ["P", "P_PREV", "P_Y", "TwoTokenCase", "two_token_case"]

P_Y: tuple[Fraction, Fraction] = (Fraction(1), Fraction(0))
P_PREV: tuple[Fraction, Fraction] = (Fraction(1, 2), Fraction(1, 2))
P: tuple[Fraction, Fraction] = (Fraction(1, 2), Fraction(1, 2))


@dataclass(frozen=True)
class TwoTokenCase:
    """The toy at one (α, ε), in float64: the losses at p and both minimizers."""

    alpha: float
    epsilon: float
    p_y: torch.Tensor
    p_prev: torch.Tensor
    p: torch.Tensor
    kl_p_py: float  # KL(p ‖ p_y^ε)
    ce_py_p: float  # CE(p_y^ε, p)
    reverse_loss: float  # ℓ^R_k(p)
    forward_loss: float  # ℓ^F_k(p)
    m: torch.Tensor  # m_k = α·p_y^ε + (1-α)·p_{k-1}, the forward minimizer
    g: torch.Tensor  # g_k ∝ (p_y^ε)^α·p_{k-1}^{1-α}, the reverse minimizer (Lemma 2)
    tv_m_g: float
    reverse_degenerate: bool  # ε = 0 and α > 0: ℓ^R is +inf off e_y


def _tensor(values: tuple[Fraction, ...]) -> torch.Tensor:
    return torch.tensor([float(v) for v in values], dtype=torch.float64)


def two_token_case(alpha: float = 0.5, epsilon: float = 0.0) -> TwoTokenCase:
    """The toy at (α, ε) (module docstring)."""
    p_y = label_smooth(_tensor(P_Y), epsilon)
    p_prev, p = _tensor(P_PREV), _tensor(P)
    m = arithmetic_target(p_y, p_prev, alpha)
    g = geometric_target(p_y, p_prev, alpha)[0].exp()
    return TwoTokenCase(
        alpha=float(alpha),
        epsilon=float(epsilon),
        p_y=p_y,
        p_prev=p_prev,
        p=p,
        kl_p_py=float(kl(p, p_y)),
        ce_py_p=float(cross_entropy(p_y, p)),
        reverse_loss=float(local_loss(p, p_y, p_prev, alpha, "reverse")),
        forward_loss=float(local_loss(p, p_y, p_prev, alpha, "forward")),
        m=m,
        g=g,
        tv_m_g=float(total_variation(m, g)),
        reverse_degenerate=bool(alpha > 0 and (p_y == 0).any()),
    )
