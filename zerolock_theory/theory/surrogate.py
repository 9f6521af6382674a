"""Surrogate objectives of Lemma 3 (docs/MATH.md, "Surrogate objectives and Lemma 3").

At iteration t the upstream readouts p^t_{k-1} are frozen, so are the targets built from
them. With p_k = p_k(ω_k) the chunk readouts (differentiable):

* paper:       R^t(ω) = Σ_k KL(p_k(ω_k) ‖ g^t_k)
* implemented: R̄^t(ω) = Σ_k KL(m^t_k ‖ p_k(ω_k))

Each chunk's KL is averaged over its N positions (mean over positions, sum over chunks),
matching the per-position average of the training losses. Since
ℓ^R_k(p) = KL(p ‖ g_k) − log Z_k and ℓ^F_k(p) = KL(m_k ‖ p) + const, the gradients in p_k
(hence in ω_k) equal those of the local losses.

Readouts and targets are given as a K×N×V tensor or as a list of K per-chunk tensors
[..., V]; ``log_input=True`` means both hold log-probabilities (use it when training:
log-softmax is finite where a softmax underflows). Targets are detached here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import torch

from zerolock_theory.theory.divergences import kl
from zerolock_theory.theory.targets import arithmetic_target, geometric_target
from zerolock_theory.vocab import OBJECTIVES

__all__ = [
    "OBJECTIVES",
    "chunk_surrogate_terms",
    "frozen_targets",
    "implemented_surrogate",
    "paper_surrogate",
    "surrogate",
]

Objective = Literal["paper", "implemented"]
Chunks = torch.Tensor | Sequence[torch.Tensor]


def check_objective(objective: str) -> None:
    """Raise ``ValueError`` unless ``objective`` is "paper" or "implemented"."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")


def _as_list(chunks: Chunks, name: str) -> list[torch.Tensor]:
    """K per-chunk tensors from a [K, ..., V] tensor or a sequence."""
    if torch.is_tensor(chunks):
        if chunks.ndim < 2:
            raise ValueError(f"{name} must have shape [K, ..., V], got {tuple(chunks.shape)}")
        return list(chunks.unbind(0))
    out = list(chunks)
    if not out:
        raise ValueError(f"{name} is empty: need at least one chunk")
    return out


def _position_mean(values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Mean over all positions, or over those where ``mask`` is True."""
    if mask is None:
        return values.mean()
    mask = mask.to(torch.bool)
    if mask.shape != values.shape:
        raise ValueError(f"mask shape {tuple(mask.shape)} != positions {tuple(values.shape)}")
    if not bool(mask.any()):
        raise ValueError("mask selects no positions")
    return torch.where(mask, values, torch.zeros_like(values)).sum() / mask.sum()


def chunk_surrogate_terms(
    readouts: Chunks,
    targets: Chunks,
    objective: Objective,
    *,
    log_input: bool = False,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-chunk terms [K]: mean_n KL(p_k ‖ g_k) (paper) or mean_n KL(m_k ‖ p_k) (implemented)."""
    check_objective(objective)
    ps, ts = _as_list(readouts, "readouts"), _as_list(targets, "targets")
    if len(ps) != len(ts):
        raise ValueError(f"{len(ps)} readouts but {len(ts)} targets")
    terms = []
    for k, (p, t) in enumerate(zip(ps, ts, strict=True), start=1):
        if p.shape != t.shape:
            raise ValueError(f"chunk {k}: readout {tuple(p.shape)} != target {tuple(t.shape)}")
        t = t.detach()
        div = (
            kl(p, t, log_input=log_input) if objective == "paper" else kl(t, p, log_input=log_input)
        )
        terms.append(_position_mean(div, mask))
    return torch.stack(terms)


def surrogate(
    readouts: Chunks,
    targets: Chunks,
    objective: Objective,
    *,
    log_input: bool = False,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """R^t (objective="paper") or R̄^t (objective="implemented"): the sum of the chunk terms."""
    terms = chunk_surrogate_terms(readouts, targets, objective, log_input=log_input, mask=mask)
    return terms.sum()


def paper_surrogate(
    readouts: Chunks, targets: Chunks, *, log_input: bool = False, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """R^t(ω) = Σ_k mean_n KL(p_k(ω_k) ‖ g^t_k), with ``targets`` the frozen g^t_k."""
    return surrogate(readouts, targets, "paper", log_input=log_input, mask=mask)


def implemented_surrogate(
    readouts: Chunks, targets: Chunks, *, log_input: bool = False, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """R̄^t(ω) = Σ_k mean_n KL(m^t_k ‖ p_k(ω_k)), with ``targets`` the frozen m^t_k."""
    return surrogate(readouts, targets, "implemented", log_input=log_input, mask=mask)


def _log_mixture(log_y: torch.Tensor, log_prev: torch.Tensor, alpha: float) -> torch.Tensor:
    """log m_k = log(α p_y + (1-α) p_{k-1}) from log-probabilities, with 0·p dropped exactly."""
    if alpha == 1.0:
        return log_y.clone()
    if alpha == 0.0:
        return log_prev.clone()
    return torch.logaddexp(log_y + math.log(alpha), log_prev + math.log1p(-alpha))


def frozen_targets(
    p_y: torch.Tensor,
    upstream: Chunks,
    alpha: float,
    objective: Objective,
    *,
    log_input: bool = False,
) -> list[torch.Tensor]:
    """Detached targets from upstream readouts p^t_0..p^t_{K-1}: g^t_k (paper) or m^t_k (implemented).

    ``p_y`` [..., V] broadcasts against each upstream chunk. With ``log_input=True`` both
    inputs and the returned targets are log-probabilities.
    """
    check_objective(objective)
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    out = []
    for prev in _as_list(upstream, "upstream"):
        prev, y = prev.detach(), p_y.detach().to(prev.dtype)
        if objective == "paper":
            log_g = geometric_target(y, prev, alpha, log_input=log_input)[0]
            out.append(log_g if log_input else log_g.exp())
        elif log_input:
            out.append(_log_mixture(y, prev, float(alpha)))
        else:
            out.append(arithmetic_target(y, prev, alpha))
    return out
