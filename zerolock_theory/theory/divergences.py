"""Divergences between distributions on the simplex (docs/MATH.md, "Local losses").

Every function reduces over the last dimension and broadcasts over the leading ones. Inputs
are probabilities by default; pass ``log_input=True`` when the caller holds
log-probabilities (``-inf`` marks a zero). Conventions, exactly:

* ``0 · log 0 = 0`` (a zero-mass coordinate of the first argument contributes nothing);
* ``KL(p ‖ q) = CE(p, q) = +inf`` where some ``p(v) > 0`` has ``q(v) = 0``;
* no NaN for valid inputs, also in gradients of the finite terms.
"""

from __future__ import annotations

import math

import torch

__all__ = ["cross_entropy", "entropy", "jensen_shannon", "kl", "total_variation"]


def _as_pair(p: torch.Tensor, log_input: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Return ``(prob, log_prob)`` for either representation, with log 0 = -inf."""
    if log_input:
        return p.exp(), p
    # log of a zero is −inf; the inner where keeps its gradient 0 (not 0/0 = NaN)
    positive = p > 0
    return p, torch.where(
        positive, torch.log(torch.where(positive, p, torch.ones_like(p))), -torch.inf
    )


def _weighted_log(weight: torch.Tensor, log_value: torch.Tensor) -> torch.Tensor:
    """Σ weight·log_value over the last dim with 0·(anything) = 0 and NaN-free gradients."""
    support = weight > 0
    safe = torch.where(support, log_value, torch.zeros_like(log_value))
    return torch.where(support, weight * safe, torch.zeros_like(weight)).sum(-1)


def entropy(p: torch.Tensor, *, log_input: bool = False) -> torch.Tensor:
    """Shannon entropy H(p) = −Σ_v p(v) log p(v), in nats."""
    prob, log_prob = _as_pair(p, log_input)
    return -_weighted_log(prob, log_prob)


def cross_entropy(p: torch.Tensor, q: torch.Tensor, *, log_input: bool = False) -> torch.Tensor:
    """CE(p, q) = −Σ_v p(v) log q(v); ``+inf`` when q misses mass of p."""
    prob_p, _ = _as_pair(p, log_input)
    _, log_q = _as_pair(q, log_input)
    return -_weighted_log(prob_p, log_q)


def kl(p: torch.Tensor, q: torch.Tensor, *, log_input: bool = False) -> torch.Tensor:
    """KL(p ‖ q) = Σ_v p(v) (log p(v) − log q(v)); ``+inf`` when q misses mass of p."""
    prob_p, log_p = _as_pair(p, log_input)
    _, log_q = _as_pair(q, log_input)
    support = prob_p > 0
    diff = torch.where(support, log_p, torch.zeros_like(log_p)) - torch.where(
        support, log_q, torch.zeros_like(log_q)
    )
    out = torch.where(support, prob_p * diff, torch.zeros_like(prob_p)).sum(-1)
    # Rounding can leave tiny negatives for p ≈ q; KL is non-negative by Gibbs' inequality.
    return out.clamp_min(0.0)


def total_variation(p: torch.Tensor, q: torch.Tensor, *, log_input: bool = False) -> torch.Tensor:
    """TV(p, q) = ½ Σ_v |p(v) − q(v)|, in [0, 1]."""
    prob_p, _ = _as_pair(p, log_input)
    prob_q, _ = _as_pair(q, log_input)
    return 0.5 * (prob_p - prob_q).abs().sum(-1)


def jensen_shannon(p: torch.Tensor, q: torch.Tensor, *, log_input: bool = False) -> torch.Tensor:
    """JS(p, q) = ½ KL(p ‖ μ) + ½ KL(q ‖ μ), μ = (p + q)/2; symmetric, in [0, log 2]."""
    prob_p, _ = _as_pair(p, log_input)
    prob_q, _ = _as_pair(q, log_input)
    mid = 0.5 * (prob_p + prob_q)
    out = 0.5 * kl(prob_p, mid) + 0.5 * kl(prob_q, mid)
    return out.clamp(0.0, math.log(2.0))
