"""Targets of the local losses (docs/MATH.md, "Local losses").

* ``label_smooth``: p_y^ε = (1-ε)·e_y + ε/V.
* ``arithmetic_target``: m_k = α·p_y + (1-α)·p_{k-1}, minimizer of the forward loss ℓ^F.
* ``geometric_target``: g_k = p_y^α · p_{k-1}^{1-α} / Z_k, minimizer of the reverse loss ℓ^R
  (the paper's Lemma 2), returned in log space together with log Z_k.
"""

from __future__ import annotations

import torch

__all__ = ["arithmetic_target", "geometric_target", "label_smooth", "one_hot"]


def _check_alpha(alpha: float) -> None:
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")


def one_hot(labels: torch.Tensor, vocab_size: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """e_y for integer ``labels`` of any shape; returns shape ``labels.shape + (V,)``."""
    return torch.nn.functional.one_hot(labels.long(), vocab_size).to(dtype)


def label_smooth(p_y: torch.Tensor, epsilon: float) -> torch.Tensor:
    """p_y^ε = (1-ε)·p_y + ε/V for a distribution ``p_y`` over the last dim."""
    if not 0.0 <= float(epsilon) <= 1.0:
        raise ValueError(f"epsilon must lie in [0, 1], got {epsilon}")
    vocab = p_y.shape[-1]
    return (1.0 - epsilon) * p_y + epsilon / vocab


def arithmetic_target(p_y: torch.Tensor, p_prev: torch.Tensor, alpha: float) -> torch.Tensor:
    """m_k = α·p_y + (1-α)·p_{k-1} (probabilities in, probabilities out)."""
    _check_alpha(alpha)
    return alpha * p_y + (1.0 - alpha) * p_prev


def _scaled_log(weight: float, log_p: torch.Tensor) -> torch.Tensor:
    """weight·log p with 0·(−inf) = 0: a zero weight removes the factor entirely."""
    if weight == 0.0:
        return torch.zeros_like(log_p)
    return weight * log_p


def geometric_target(
    p_y: torch.Tensor, p_prev: torch.Tensor, alpha: float, *, log_input: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return ``(log g_k, log Z_k)`` with g_k ∝ p_y^α · p_{k-1}^{1-α}.

    Computed in log space: log Z_k = logsumexp(α log p_y + (1-α) log p_{k-1}). When the
    supports of p_y and p_{k-1} are disjoint (α ∈ (0,1)), Z_k = 0: then log Z_k = −inf and
    g_k is undefined; ``log g_k`` is returned as −inf everywhere (no mass), never NaN.
    """
    _check_alpha(alpha)
    log_y = p_y if log_input else torch.log(p_y)
    log_prev = p_prev if log_input else torch.log(p_prev)
    unnorm = _scaled_log(alpha, log_y) + _scaled_log(1.0 - alpha, log_prev)
    log_z = torch.logsumexp(unnorm, dim=-1, keepdim=True)
    finite = torch.isfinite(log_z)
    log_g = torch.where(finite, unnorm - torch.where(finite, log_z, torch.zeros_like(log_z)), unnorm)
    return log_g, log_z.squeeze(-1)
