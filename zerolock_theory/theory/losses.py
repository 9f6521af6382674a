"""Local losses ℓ^F and ℓ^R (docs/MATH.md, "Local losses").

Two layers:

* ``local_loss`` works on probability vectors (the exact objects of docs/MATH.md) and is what the
  identities, minimizers and probes use.
* ``local_loss_from_logits`` is the training form: chunk logits, integer labels (−100 =
  no label), the detached previous readout as log-probabilities, label smoothing ε. It
  returns per-position terms so a caller can sum over slices of a sequence.

Degenerate case: the reverse direction with a one-hot target (ε = 0) is +inf wherever p
puts mass off y. ``local_loss`` returns ``inf`` there (``on_degenerate="inf"``) or raises
``DegenerateObjectiveError`` (``on_degenerate="raise"``), never NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F

from zerolock_theory.theory.divergences import cross_entropy, kl
from zerolock_theory.vocab import DIRECTIONS

__all__ = [
    "DIRECTIONS",
    "DegenerateObjectiveError",
    "LossTerms",
    "check_local_loss",
    "local_loss",
    "local_loss_from_logits",
]

Direction = Literal["forward", "reverse"]
IGNORE_INDEX = -100


class DegenerateObjectiveError(ValueError):
    """The reverse objective is +inf: KL(p ‖ e_y) with a one-hot target (ε = 0)."""


def check_direction(direction: str) -> None:
    """Raise ``ValueError`` unless ``direction`` is "forward" or "reverse"."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")


def check_local_loss(direction: str, alpha: float, epsilon: float, *, has_prev: bool) -> None:
    """Refuse what no local loss can compute: an unknown direction, the reverse task term with
    ε = 0 (+inf for every non-one-hot readout) and a missing p_{k-1} when α < 1."""
    check_direction(direction)
    if direction == "reverse" and epsilon <= 0.0 and alpha > 0.0:
        raise DegenerateObjectiveError(
            "reverse direction with epsilon = 0 is +inf for every non-one-hot readout; "
            "set label smoothing epsilon > 0"
        )
    if not has_prev and alpha < 1.0:
        raise ValueError("the previous readout p_(k-1) is required when alpha < 1")


def _weighted(weight: float, value: torch.Tensor) -> torch.Tensor:
    """weight·value with 0·inf = 0 (a term with zero weight is absent)."""
    return torch.zeros_like(value) if weight == 0.0 else weight * value


def local_loss(
    p: torch.Tensor,
    p_y: torch.Tensor,
    p_prev: torch.Tensor,
    alpha: float,
    direction: Direction = "forward",
    *,
    on_degenerate: Literal["inf", "raise"] = "inf",
) -> torch.Tensor:
    """ℓ^F_k(p) = α·CE(p_y, p) + (1-α)·KL(p_{k-1} ‖ p)  or  ℓ^R_k(p) = α·KL(p ‖ p_y) + (1-α)·KL(p ‖ p_{k-1}).

    Probabilities over the last dim; leading dims broadcast. Returns one value per row.
    """
    check_direction(direction)
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    if direction == "forward":
        return _weighted(alpha, cross_entropy(p_y, p)) + _weighted(1.0 - alpha, kl(p_prev, p))
    out = _weighted(alpha, kl(p, p_y)) + _weighted(1.0 - alpha, kl(p, p_prev))
    if on_degenerate == "raise" and bool(torch.isinf(out).any()):
        raise DegenerateObjectiveError(
            "reverse objective is +inf: KL(p || p_y) is infinite where p_y has zeros "
            "(one-hot labels); reverse-KL training needs label smoothing epsilon > 0"
        )
    return out


@dataclass
class LossTerms:
    """Per-position terms of a chunk's local loss (positions without a label are zero)."""

    loss: torch.Tensor  # α·task + (1-α)·consistency, the trained objective
    task: torch.Tensor  # CE(p_y^ε, p) forward, KL(p ‖ p_y^ε) reverse
    consistency: torch.Tensor  # KL(p_{k-1} ‖ p) forward, KL(p ‖ p_{k-1}) reverse
    ce: torch.Tensor  # CE(e_y, p): the real task loss, for logging
    mask: torch.Tensor  # bool, positions that carry a label
    log_p: torch.Tensor  # fp32 log-softmax of the logits, [..., V] (all positions)


def local_loss_from_logits(
    logits: torch.Tensor,
    labels: torch.Tensor,
    log_p_prev: torch.Tensor | None,
    alpha: float,
    direction: Direction = "forward",
    epsilon: float = 0.0,
) -> LossTerms:
    """Training form of ℓ^F / ℓ^R per position.

    ``logits`` [..., V] (any float dtype; computed in fp32), ``labels`` [...] with −100 for
    no label, ``log_p_prev`` [..., V] detached log p_{k-1} (``None`` only when α = 1).
    Label smoothing: p_y^ε = (1-ε)·e_y + ε/V. The reverse direction needs ε > 0.
    """
    check_local_loss(direction, alpha, epsilon, has_prev=log_p_prev is not None)
    log_p = F.log_softmax(logits.float(), dim=-1)
    vocab = log_p.shape[-1]
    mask = labels != IGNORE_INDEX
    safe_labels = torch.where(mask, labels, torch.zeros_like(labels)).long()
    log_p_label = log_p.gather(-1, safe_labels.unsqueeze(-1)).squeeze(-1)
    ce = -log_p_label
    if direction == "forward":
        task = (1.0 - epsilon) * ce - (epsilon / vocab) * log_p.sum(-1) if epsilon > 0 else ce
    else:
        prob = log_p.exp()
        log_off = math.log(epsilon / vocab)
        log_on = math.log(1.0 - epsilon + epsilon / vocab)
        neg_entropy = (prob * log_p).sum(-1)
        task = neg_entropy - (log_off + log_p_label.exp() * (log_on - log_off))
    if alpha < 1.0:
        log_prev = log_p_prev.float()
        if direction == "forward":
            # KL(p_{k-1} ‖ p) = Σ p_{k-1} log p_{k-1} − Σ p_{k-1} log p: the first sum is a constant of
            # the graph (0·log 0 = 0 where p_{k-1} has zeros, log = −inf), so only the second is differentiated
            with torch.no_grad():
                prob_prev = log_prev.exp()
                neg_entropy_prev = torch.where(prob_prev > 0, prob_prev * log_prev, 0.0).sum(-1)
            consistency = neg_entropy_prev - (prob_prev * log_p).sum(-1)
        else:
            consistency = (prob * (log_p - log_prev)).sum(-1)  # p = exp(log p), from the task term
    else:
        consistency = torch.zeros_like(ce)
    loss = _weighted(alpha, task) + _weighted(1.0 - alpha, consistency)
    zero = torch.zeros_like(ce)
    return LossTerms(
        loss=torch.where(mask, loss, zero),
        task=torch.where(mask, task, zero),
        consistency=torch.where(mask, consistency, zero),
        ce=torch.where(mask, ce, zero),
        mask=mask,
        log_p=log_p,
    )
