"""Lemma 2 on the implemented loss: the exact quantities (docs/MATH.md, "Lemma 2 on the implemented loss").

* ``reverse_identity``: the residual of ℓ^R_k(p) = KL(p ‖ g_k) − log Z_k and the excess
  ℓ^R_k(p) − ℓ^R_k(g_k) ≥ 0 at random points p, for one (p_y^ε, p_{k-1}, α): the identity
  proves that g_k is the reverse loss's unique minimizer (Lemma 2 as stated).
* ``forward_identity``: the same for ℓ^F_k(p) = KL(m_k ‖ p) + H(m_k) − (1-α)·H(p_{k-1}):
  m_k is the forward (cross-entropy) loss's minimizer.
* ``readout_distances``: per position, TV(m_k, g_k), TV(p_k, m_k), TV(p_k, g_k) and H(p_k)
  from log-readouts over the full vocabulary, with p_y^ε = (1-ε)·e_y + ε/V (ONE ε for
  both targets), in float64, a block of positions at a time.
* ``temper`` / ``entropy_matching_temperature``: the entropy-matched null of the
  descriptive tracking statistic: untrained readouts at the temperature τ whose mean entropy
  equals a given (trained) mean entropy. τ > 1 flattens; no label information enters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from zerolock_theory.theory.divergences import entropy, kl
from zerolock_theory.theory.losses import local_loss
from zerolock_theory.theory.targets import arithmetic_target, geometric_target

__all__ = [
    "BLOCK_ELEMS",
    "IdentityCheck",
    "entropy_matching_temperature",
    "forward_identity",
    "readout_distances",
    "reverse_identity",
    "temper",
]

BLOCK_ELEMS = 1 << 22
"""float64 coordinates per block of positions in ``readout_distances`` (32 MiB per array)."""


@dataclass(frozen=True)
class IdentityCheck:
    """One case: the largest |identity residual| and the smallest ℓ(p) − ℓ(target) over the points."""

    residual: float
    min_excess: float
    target_loss: float


def _random_points(vocab: int, n: int, generator: torch.Generator) -> torch.Tensor:
    """n points of Δ_V: Dirichlet(1) draws, half of them sharpened (float64, full support)."""
    gamma = -torch.log(torch.rand(n, vocab, generator=generator, dtype=torch.float64).clamp_min(1e-300))
    gamma[: n // 2] = gamma[: n // 2] ** 4
    gamma = gamma.clamp_min(1e-12)
    return gamma / gamma.sum(-1, keepdim=True)


def reverse_identity(
    p_y: torch.Tensor, p_prev: torch.Tensor, alpha: float, *, n_points: int = 64, seed: int = 0,
    target: torch.Tensor | None = None,
) -> IdentityCheck:
    """ℓ^R_k(p) − [KL(p ‖ g_k) − log Z_k] and ℓ^R_k(p) − ℓ^R_k(g_k) at ``n_points`` random p.

    ``p_y`` must be label-smoothed (ε > 0: ℓ^R is finite everywhere). ``target`` replaces g_k
    (a calibration hook: any other point makes the residual or the excess fail).
    """
    log_g, log_z = geometric_target(p_y, p_prev, alpha)
    g = log_g.exp() if target is None else target
    points = _random_points(p_y.shape[-1], n_points, torch.Generator().manual_seed(seed))
    loss = local_loss(points, p_y, p_prev, alpha, "reverse")
    residual = (loss - (kl(points, g) - log_z)).abs().max()
    at_target = local_loss(g, p_y, p_prev, alpha, "reverse")
    return IdentityCheck(float(residual), float((loss - at_target).min()), float(at_target))


def forward_identity(
    p_y: torch.Tensor, p_prev: torch.Tensor, alpha: float, *, n_points: int = 64, seed: int = 0,
    target: torch.Tensor | None = None,
) -> IdentityCheck:
    """ℓ^F_k(p) − [KL(m_k ‖ p) + H(m_k) − (1-α)·H(p_{k-1})] and ℓ^F_k(p) − ℓ^F_k(m_k) at random p."""
    m = arithmetic_target(p_y, p_prev, alpha) if target is None else target
    points = _random_points(p_y.shape[-1], n_points, torch.Generator().manual_seed(seed))
    loss = local_loss(points, p_y, p_prev, alpha, "forward")
    closed = kl(m, points) + entropy(m) - (1.0 - alpha) * entropy(p_prev)
    at_target = local_loss(m, p_y, p_prev, alpha, "forward")
    return IdentityCheck(float((loss - closed).abs().max()), float((loss - at_target).min()), float(at_target))


def _label_log_target(log_prev: torch.Tensor, idx: torch.Tensor, alpha: float, epsilon: float) -> torch.Tensor:
    """log g_k ∝ α·log p_y^ε + (1-α)·log p_{k-1}, normalised (p_y^ε takes two values)."""
    vocab = log_prev.shape[-1]
    off, on = epsilon / vocab, 1.0 - epsilon + epsilon / vocab
    log_g = (1.0 - alpha) * log_prev + alpha * math.log(off)
    log_g = log_g.scatter_add(-1, idx, torch.full_like(idx, alpha * math.log(on / off), dtype=log_g.dtype))
    return log_g - torch.logsumexp(log_g, dim=-1, keepdim=True)


def _mixture(prev: torch.Tensor, idx: torch.Tensor, alpha: float, epsilon: float) -> torch.Tensor:
    """m_k = α·p_y^ε + (1-α)·p_{k-1}."""
    vocab = prev.shape[-1]
    off, on = epsilon / vocab, 1.0 - epsilon + epsilon / vocab
    m = (1.0 - alpha) * prev + alpha * off
    return m.scatter_add(-1, idx, torch.full_like(idx, alpha * (on - off), dtype=m.dtype))


def readout_distances(
    log_prev: torch.Tensor, log_p: torch.Tensor | None, labels: torch.Tensor, alpha: float, epsilon: float,
) -> dict[str, torch.Tensor]:
    """Per position (float64 [N]): ``tv_m_g`` = TV(m_k, g_k) and, given ``log_p`` (p_k),
    ``tv_m`` = TV(p_k, m_k), ``tv_g`` = TV(p_k, g_k), ``entropy`` = H(p_k).

    ``log_prev`` / ``log_p``: [N, V] log-probabilities over the FULL vocabulary (exact: no
    top-k); ``labels`` [N]; m_k and g_k both from p_y^ε with the one ``epsilon`` in (0, 1]
    (g_k = e_y for every α > 0 at ε = 0: the degenerate case is refused).
    """
    if not 0.0 < epsilon <= 1.0:
        raise ValueError(f"epsilon must lie in (0, 1] (g_k needs a label-smoothed p_y), got {epsilon}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    n, vocab = log_prev.shape
    size = max(1, BLOCK_ELEMS // max(1, vocab))
    names = ("tv_m_g",) if log_p is None else ("tv_m_g", "tv_m", "tv_g", "entropy")
    out: dict[str, list[torch.Tensor]] = {name: [] for name in names}
    for start in range(0, n, size):
        rows = slice(start, min(n, start + size))
        lp = log_prev[rows].double()
        idx = labels[rows].long().unsqueeze(-1).to(lp.device)
        g = _label_log_target(lp, idx, alpha, epsilon).exp()
        m = _mixture(lp.exp(), idx, alpha, epsilon)
        out["tv_m_g"].append(0.5 * (m - g).abs().sum(-1))
        if log_p is not None:
            lk = log_p[rows].double()
            p = lk.exp()
            out["tv_m"].append(0.5 * (p - m).abs().sum(-1))
            out["tv_g"].append(0.5 * (p - g).abs().sum(-1))
            out["entropy"].append(entropy(lk, log_input=True))
    return {name: torch.cat(values) for name, values in out.items()}


def temper(log_p: torch.Tensor, tau: float) -> torch.Tensor:
    """log softmax(log p / τ): the readout at temperature τ (τ > 1 flattens, label-blind)."""
    if not tau > 0.0:
        raise ValueError(f"temperature must be > 0, got {tau}")
    return torch.log_softmax(log_p.double() / tau, dim=-1)


def _mean_entropy(log_p: torch.Tensor, tau: float) -> float:
    return float(entropy(temper(log_p, tau), log_input=True).mean())


def entropy_matching_temperature(
    log_p: torch.Tensor, target_entropy: float, *, low: float = 1e-2, high: float = 1e3, tol: float = 1e-10,
) -> float:
    """τ with mean_n H(softmax(log p_n / τ)) = ``target_entropy`` (bisection in log τ).

    The mean entropy rises with τ (from the number of tied modes at τ → 0 to log V at
    τ → ∞); a target outside [H(τ = low), H(τ = high)] returns the nearer end. Bisection
    stops when the bracket's ratio is below 1 + ``tol``.
    """
    lo, hi = math.log(low), math.log(high)
    if target_entropy <= _mean_entropy(log_p, low):
        return low
    if target_entropy >= _mean_entropy(log_p, high):
        return high
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if _mean_entropy(log_p, math.exp(mid)) < target_entropy:
            lo = mid
        else:
            hi = mid
    return math.exp(0.5 * (lo + hi))
