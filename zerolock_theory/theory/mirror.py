"""Lemma 1: the local optimum as one mirror-descent step (docs/MATH.md, "Lemma 1").

    p*_k = argmin_{p ∈ Δ_V} ⟨∇L(p_{k-1}), p − p_{k-1}⟩ + (1/α)·D_ψ(p, p_{k-1})

Two geometries, each with its closed-form step (functions of the gradient ∇L(p_{k-1})):

* ``entropy_mirror_step``: ψ = negative entropy, D_ψ = KL: p* ∝ p_{k-1}·exp(−α∇L(p_{k-1})).
* ``euclidean_mirror_step``: ψ = ½‖·‖², D_ψ = ½‖p − q‖²: p* = Π_Δ(p_{k-1} − α∇L(p_{k-1})),
  the Euclidean projection onto the simplex (the identity when the step stays on Δ_V).

and the gradients of the three losses of docs/MATH.md (``grad_reverse_kl``, ``grad_half_sq``,
``grad_forward_ce``). The lemma's cases:

* entropy step on L = KL(p ‖ p_y) gives g_k (``lemma1_reverse``);
* Euclidean step on L = ½‖p − p_y‖² gives m_k (``lemma1_euclidean``);
* entropy step on L = CE(p_y, p) gives p ∝ p_{k-1}·exp(α·p_y/p_{k-1}), which is NOT m_k
  (``lemma1_forward_entropy``).

All functions reduce over the last dim and broadcast over leading ones.
"""

from __future__ import annotations

from typing import Literal

import torch

from zerolock_theory.theory.divergences import kl

__all__ = [
    "entropy_mirror_step",
    "euclidean_mirror_step",
    "grad_forward_ce",
    "grad_half_sq",
    "grad_reverse_kl",
    "lemma1_euclidean",
    "lemma1_forward_entropy",
    "lemma1_reverse",
    "mirror_objective",
    "project_to_simplex",
]

Geometry = Literal["entropy", "euclidean"]


def _check_alpha(alpha: float) -> None:
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")


def grad_reverse_kl(p: torch.Tensor, p_y: torch.Tensor) -> torch.Tensor:
    """∇_p KL(p ‖ p_y) = log(p / p_y) + 1 (+inf where p_y = 0 < p, −inf where p = 0)."""
    return torch.log(p) - torch.log(p_y) + 1.0


def grad_half_sq(p: torch.Tensor, p_y: torch.Tensor) -> torch.Tensor:
    """∇_p ½‖p − p_y‖² = p − p_y."""
    return p - p_y


def grad_forward_ce(p: torch.Tensor, p_y: torch.Tensor) -> torch.Tensor:
    """∇_p CE(p_y, p) = −p_y / p, with 0 where p_y = 0 (the term is absent there)."""
    ratio = p_y / torch.where(p_y > 0, p, torch.ones_like(p))
    return torch.where(p_y > 0, -ratio, torch.zeros_like(p))


def entropy_mirror_step(p_prev: torch.Tensor, grad: torch.Tensor, alpha: float) -> torch.Tensor:
    """p* ∝ p_{k-1}·exp(−α·grad): the KL-geometry step, computed in log space.

    Coordinates with p_{k-1} = 0 stay at 0 (KL(p ‖ p_{k-1}) is +inf otherwise); a
    coordinate whose gradient is +inf gets no mass. α = 0 returns p_{k-1}.
    """
    _check_alpha(alpha)
    if alpha == 0.0:
        return p_prev.clone()
    support = p_prev > 0
    safe_grad = torch.where(support, grad, torch.zeros_like(grad))
    log_prev = torch.where(support, torch.log(p_prev), torch.zeros_like(p_prev))
    logits = torch.where(support, log_prev - alpha * safe_grad, torch.full_like(p_prev, -torch.inf))
    log_z = torch.logsumexp(logits, dim=-1, keepdim=True)
    finite = torch.isfinite(log_z)  # no mass left anywhere: return zeros, never NaN
    return torch.where(finite, (logits - torch.where(finite, log_z, 0.0)).exp(), 0.0)


def project_to_simplex(x: torch.Tensor) -> torch.Tensor:
    """Euclidean projection Π_Δ(x) = argmin_{p ∈ Δ_V} ‖p − x‖² (sort-based, exact)."""
    vocab = x.shape[-1]
    sorted_x, _ = torch.sort(x, dim=-1, descending=True)
    cumsum = sorted_x.cumsum(-1) - 1.0
    index = torch.arange(1, vocab + 1, dtype=x.dtype, device=x.device)
    active = sorted_x - cumsum / index > 0
    rho = active.to(x.dtype).cumsum(-1).argmax(-1, keepdim=True)  # last active index
    theta = cumsum.gather(-1, rho) / (rho + 1).to(x.dtype)
    return (x - theta).clamp_min(0.0)


def euclidean_mirror_step(p_prev: torch.Tensor, grad: torch.Tensor, alpha: float) -> torch.Tensor:
    """p* = Π_Δ(p_{k-1} − α·grad): the step in the geometry of ψ = ½‖·‖²."""
    _check_alpha(alpha)
    return project_to_simplex(p_prev - alpha * grad)


def mirror_objective(
    p: torch.Tensor,
    p_prev: torch.Tensor,
    grad: torch.Tensor,
    alpha: float,
    geometry: Geometry,
) -> torch.Tensor:
    """⟨grad, p − p_{k-1}⟩ + (1/α)·D_ψ(p, p_{k-1}) for α > 0: the objective Lemma 1 minimizes."""
    if not 0.0 < float(alpha) <= 1.0:
        raise ValueError(f"alpha must lie in (0, 1] for the mirror objective, got {alpha}")
    linear = (grad * (p - p_prev)).sum(-1)
    if geometry == "entropy":
        return linear + kl(p, p_prev) / alpha
    if geometry == "euclidean":
        return linear + 0.5 * (p - p_prev).pow(2).sum(-1) / alpha
    raise ValueError(f"geometry must be 'entropy' or 'euclidean', got {geometry!r}")


def lemma1_reverse(p_y: torch.Tensor, p_prev: torch.Tensor, alpha: float) -> torch.Tensor:
    """Entropy step on L = KL(p ‖ p_y): equals g_k = p_y^α p_{k-1}^{1-α} / Z_k."""
    return entropy_mirror_step(p_prev, grad_reverse_kl(p_prev, p_y), alpha)


def lemma1_euclidean(p_y: torch.Tensor, p_prev: torch.Tensor, alpha: float) -> torch.Tensor:
    """Euclidean step on L = ½‖p − p_y‖²: equals m_k = α p_y + (1-α) p_{k-1} (no projection needed)."""
    return euclidean_mirror_step(p_prev, grad_half_sq(p_prev, p_y), alpha)


def lemma1_forward_entropy(p_y: torch.Tensor, p_prev: torch.Tensor, alpha: float) -> torch.Tensor:
    """Entropy step on the forward loss L = CE(p_y, p): p ∝ p_{k-1}·exp(α p_y / p_{k-1}), not m_k."""
    return entropy_mirror_step(p_prev, grad_forward_ce(p_prev, p_y), alpha)
