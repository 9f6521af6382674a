"""Numerical minimization over the simplex, independent of the closed forms.

docs/MATH.md ("Local losses") gives closed-form minimizers: m_k for ℓ^F and g_k for ℓ^R. This
module checks them from the other side: it minimizes a loss over p ∈ Δ_V numerically and
never evaluates m_k or g_k.

Method: p = softmax([z, 0]) on a face of the simplex (the coordinates in ``support``), so
the V_s − 1 free logits z are unconstrained and the parametrization has no null direction.
scipy's trust-region Newton-CG (``trust-ncg``) minimizes the loss in float64 with the exact
gradient and Hessian from torch autograd (V is small here), to a gradient norm of 1e-12;
L-BFGS-B continues from there if the trust region stalls.

Faces: ``loss_domain`` returns the coordinates a local loss can use.

* forward: coordinates rewarded by a term with positive weight (p_y > 0 when α > 0,
  p_{k-1} > 0 when α < 1). Mass elsewhere enters no term and only takes mass from the
  rewarded coordinates, so a minimizer puts none there.
* reverse: coordinates where ℓ^R is finite (p_y > 0 when α > 0 and p_{k-1} > 0 when α < 1);
  mass anywhere else makes a KL term +inf. An empty domain (disjoint supports) means
  ℓ^R = +inf on the whole simplex: ``DegenerateObjectiveError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.optimize
import torch

from zerolock_theory.theory.losses import (
    DegenerateObjectiveError,
    Direction,
    check_direction,
    local_loss,
)

__all__ = [
    "MinimizeResult",
    "as_distribution",
    "loss_domain",
    "minimize_local_loss",
    "minimize_on_simplex",
]

Objective = Callable[[torch.Tensor], torch.Tensor]
VectorLike = torch.Tensor | np.ndarray | Sequence[float]


@dataclass(frozen=True)
class MinimizeResult:
    """A numerical minimizer: the point ``p`` (float64, [V]), the loss there, solver status."""

    p: torch.Tensor
    value: float
    success: bool
    message: str
    n_iter: int

    def __post_init__(self) -> None:
        if self.p.ndim != 1:
            raise ValueError(f"p must be a vector, got shape {tuple(self.p.shape)}")
        if self.n_iter < 0:
            raise ValueError(f"n_iter must be >= 0, got {self.n_iter}")


def as_distribution(x: VectorLike, name: str = "p") -> torch.Tensor:
    """A 1-D float64 tensor that is a probability vector; ``ValueError`` otherwise."""
    vec = x.detach().cpu() if torch.is_tensor(x) else torch.from_numpy(np.asarray(x, dtype=float))
    vec = vec.to(torch.float64)
    if vec.ndim != 1 or vec.numel() < 2:
        raise ValueError(f"{name} must be a vector with at least 2 entries")
    if not bool(torch.isfinite(vec).all()) or bool((vec < 0).any()):
        raise ValueError(f"{name} must have finite, non-negative entries")
    if abs(float(vec.sum()) - 1.0) > 1e-6:
        raise ValueError(f"{name} must sum to 1, sums to {float(vec.sum())}")
    return vec


def loss_domain(
    p_y: VectorLike, p_prev: VectorLike, alpha: float, direction: Direction
) -> torch.Tensor:
    """Boolean mask of the simplex face a minimizer of the local loss lives on (see module doc)."""
    check_direction(direction)
    y = as_distribution(p_y, "p_y")
    prev = as_distribution(p_prev, "p_prev")
    if y.shape != prev.shape:
        raise ValueError("p_y and p_prev must have the same length")
    use_y = torch.full_like(y, float(alpha) > 0.0, dtype=torch.bool)
    use_prev = torch.full_like(y, float(alpha) < 1.0, dtype=torch.bool)
    if direction == "forward":
        return (use_y & (y > 0)) | (use_prev & (prev > 0))
    return (~use_y | (y > 0)) & (~use_prev | (prev > 0))


def _embed(z: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """Map free logits z (length V_s − 1) to p ∈ Δ_V supported on ``support``."""
    logits = torch.cat([z, z.new_zeros(1)])
    full = torch.zeros(support.shape[0], dtype=torch.float64)
    return full.index_put((support.nonzero().squeeze(-1),), torch.softmax(logits, dim=0))


def _value_and_grad(
    z_np: np.ndarray, objective: Objective, support: torch.Tensor
) -> tuple[float, np.ndarray]:
    """Loss and its gradient in the free logits (``inf`` and zeros where not finite)."""
    z = torch.tensor(z_np, dtype=torch.float64, requires_grad=True)
    value = objective(_embed(z, support))
    if not bool(torch.isfinite(value)):
        return float("inf"), np.zeros_like(z_np)
    (grad,) = torch.autograd.grad(value, z)
    return float(value.detach()), grad.numpy().copy()


def _hessian(z_np: np.ndarray, objective: Objective, support: torch.Tensor) -> np.ndarray:
    """Exact Hessian of the loss in the free logits (torch autograd; V is small here)."""

    def fun(t: torch.Tensor) -> torch.Tensor:
        return objective(_embed(t, support))

    z = torch.tensor(z_np, dtype=torch.float64)
    return torch.autograd.functional.hessian(fun, z).numpy().copy()


def minimize_on_simplex(
    objective: Objective,
    vocab_size: int,
    *,
    support: torch.Tensor | Sequence[bool] | None = None,
    max_iter: int = 1_000,
    gtol: float = 1e-10,
) -> MinimizeResult:
    """Minimize ``objective`` (a torch function of p ∈ Δ_V, float64, [V] → scalar) numerically.

    ``support`` restricts p to a face of the simplex (default: all coordinates). The start
    is the uniform distribution on that face, where the objective must be finite.
    """
    if vocab_size < 2:
        raise ValueError(f"vocab_size must be >= 2, got {vocab_size}")
    mask = torch.ones(vocab_size, dtype=torch.bool) if support is None else torch.as_tensor(support)
    mask = mask.to(torch.bool).cpu()
    if mask.shape != (vocab_size,):
        raise ValueError(f"support must have shape ({vocab_size},), got {tuple(mask.shape)}")
    n_free = int(mask.sum()) - 1
    if n_free < 0:
        raise ValueError("support is empty")
    z0 = np.zeros(n_free)
    start_value, _ = _value_and_grad(z0, objective, mask)
    if not np.isfinite(start_value):
        raise ValueError("objective is not finite at the uniform point of the support")
    if n_free == 0:
        point = _embed(torch.zeros(0, dtype=torch.float64), mask)
        return MinimizeResult(point, start_value, True, "support has one point", 0)
    res = scipy.optimize.minimize(
        _value_and_grad,
        z0,
        args=(objective, mask),
        jac=True,
        hess=_hessian,
        method="trust-ncg",
        options={"maxiter": max_iter, "gtol": gtol},
    )
    z = res.x
    if not res.success:  # e.g. a flat or ill-conditioned region: continue with L-BFGS-B
        res = scipy.optimize.minimize(
            _value_and_grad,
            z,
            args=(objective, mask),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter, "ftol": 1e-16, "gtol": gtol},
        )
        z = res.x
    value, grad = _value_and_grad(z, objective, mask)
    p = _embed(torch.tensor(z, dtype=torch.float64), mask)
    converged = bool(np.isfinite(value) and np.abs(grad).max() < 1e-8)
    return MinimizeResult(p, value, converged, str(res.message), int(res.nit))


def minimize_local_loss(
    p_y: VectorLike,
    p_prev: VectorLike,
    alpha: float,
    direction: Direction = "forward",
    **kwargs,
) -> MinimizeResult:
    """Numerical minimizer of ℓ^F_k (forward) or ℓ^R_k (reverse) for one position.

    Evaluates the loss through ``losses.local_loss`` only. Raises
    ``DegenerateObjectiveError`` when ℓ^R is +inf on the whole simplex.
    """
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    y = as_distribution(p_y, "p_y")
    prev = as_distribution(p_prev, "p_prev")
    domain = loss_domain(y, prev, alpha, direction)
    if not bool(domain.any()):
        raise DegenerateObjectiveError(
            "reverse objective is +inf on the whole simplex: p_y and p_prev have disjoint supports"
        )

    def objective(p: torch.Tensor) -> torch.Tensor:
        return local_loss(p, y, prev, float(alpha), direction)

    return minimize_on_simplex(objective, y.numel(), support=domain, **kwargs)
