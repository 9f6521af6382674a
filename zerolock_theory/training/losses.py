"""The loss of one chunk's readout: a pure ``chunk_loss`` and its sliced backward.

Every loss the package trains on or measures is a readout loss (docs/MATH.md, "Local
losses"): chunk k's output h_k is read out to p_k and compared with the label distribution
p_y^ε and, for ZeroLock, the detached upstream readout p_{k-1}. ``LossSpec.local`` is ZeroLock's
ℓ_k (the method's α and direction); ``LossSpec.global_`` is the global loss L = CE(p_y^ε, p_K)
(α = 1, forward). Losses are summed over labelled positions and divided by n, the labelled
tokens of the whole minibatch.

``sliced_backward`` computes the loss slice by slice of the sequence (``readout_chunk_size``)
into a leaf copy of h_k and then pushes the leaf's gradient through the chunk, so at most one
slice of fp32 logits exists at a time.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from zerolock_theory.config import MethodConfig
from zerolock_theory.models.chunking import ChunkedLM
from zerolock_theory.theory.losses import local_loss_from_logits

__all__ = [
    "SUM_KEYS", "ChunkLoss", "LossSpec", "NonFiniteLossError", "Readout", "check_finite", "chunk_loss",
    "prev_log_probs", "sliced_backward", "sliced_backward_totals",
]

SUM_KEYS = ("loss", "task", "consistency", "ce")
"""The per-chunk loss terms reported as metrics (``chunk/{k}/{key}``)."""


class NonFiniteLossError(RuntimeError):
    """A loss or gradient became NaN or infinite; training stops with the step and chunk."""


def check_finite(value: float, step: int, what: str) -> None:
    """``NonFiniteLossError`` naming the step and ``what`` when ``value`` is NaN or infinite."""
    if not math.isfinite(value):
        raise NonFiniteLossError(f"step {step}: {what} is {value}; lower the learning rate or check the data")


@dataclass(frozen=True)
class LossSpec:
    """Which readout loss: weight α of the task term, direction, label smoothing ε, p_0."""

    alpha: float
    direction: str
    epsilon: float
    p0: str

    @classmethod
    def local(cls, method: MethodConfig) -> LossSpec:
        """ZeroLock's local loss ℓ_k."""
        return cls(method.alpha, method.direction, method.epsilon, method.p0)

    @classmethod
    def global_(cls, method: MethodConfig) -> LossSpec:
        """The global loss L = CE(p_y^ε, p_K) (what backprop trains)."""
        return cls(1.0, "forward", method.epsilon, method.p0)


@dataclass(frozen=True)
class Readout:
    """The chunked model's readout with its autocast dtype and sequence slice size."""

    chunked: ChunkedLM
    autocast_dtype: torch.dtype | None = None
    slice_size: int | None = None

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """bf16/fp16 autocast when configured, else a no-op."""
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        device = next(self.chunked.parameters()).device.type
        return torch.autocast(device_type=device, dtype=self.autocast_dtype)

    def slices(self, length: int) -> list[slice]:
        """The sequence positions in slices of ``slice_size`` (one slice when unset)."""
        size = self.slice_size or length
        return [slice(start, min(length, start + size)) for start in range(0, length, size)]


def prev_log_probs(chunked: ChunkedLM, h_prev: torch.Tensor | None, k: int, p0: str) -> torch.Tensor | None:
    """log p_{k-1} (detached) from h_{k-1}; p_0 is the embedding readout or uniform."""
    if h_prev is None:
        return None
    with torch.no_grad():
        logits = chunked.readout(h_prev).float()
        if k == 1 and p0 == "uniform":
            return torch.full_like(logits, -math.log(logits.shape[-1]))
        return F.log_softmax(logits, dim=-1)


@dataclass(frozen=True)
class ChunkLoss:
    """A readout loss with its graph, its terms' sums on the device, and log p_k (detached).

    ``totals`` holds Σ term / n of each ``SUM_KEYS`` term, float64 on the loss's device (the
    float32 sum widened, so the values equal ``float(sum) / n``); reading ``sums`` copies them
    to the host (one synchronisation).
    """

    loss: torch.Tensor
    totals: torch.Tensor
    log_p: torch.Tensor

    @property
    def sums(self) -> dict[str, float]:
        """The terms' sums / n as floats, keyed by ``SUM_KEYS``."""
        return dict(zip(SUM_KEYS, self.totals.tolist(), strict=True))


def chunk_loss(readout: Readout, spec: LossSpec, hidden: torch.Tensor, h_prev: torch.Tensor | None,
               labels: torch.Tensor, k: int, n: float, log_prev: torch.Tensor | None = None) -> ChunkLoss:
    """Chunk k's readout loss on ``hidden``, summed over labelled positions / n (no backward).

    ``log_prev`` is log p_{k-1} when already at hand; otherwise it is read out from ``h_prev``.
    """
    if log_prev is None:
        log_prev = prev_log_probs(readout.chunked, h_prev, k, spec.p0)
    with readout.autocast():
        logits = readout.chunked.readout(hidden)
    terms = local_loss_from_logits(logits, labels, log_prev, spec.alpha, spec.direction, spec.epsilon)
    totals = torch.stack([getattr(terms, key).detach().sum() for key in SUM_KEYS]).double() / n
    return ChunkLoss(terms.loss.sum() / n, totals, terms.log_p.detach())


def sliced_backward(readout: Readout, spec: LossSpec, hidden: torch.Tensor, h_prev: torch.Tensor | None,
                    labels: torch.Tensor, k: int, n: float,
                    log_prev: torch.Tensor | None = None) -> tuple[dict[str, float], torch.Tensor | None]:
    """Backpropagate ``chunk_loss`` into ``hidden``'s graph slice by slice; return the sums and,
    when the loss ran as one slice, log p_k for the next chunk (else None)."""
    totals, log_p = sliced_backward_totals(readout, spec, hidden, h_prev, labels, k, n, log_prev)
    return dict(zip(SUM_KEYS, totals.tolist(), strict=True)), log_p


def sliced_backward_totals(readout: Readout, spec: LossSpec, hidden: torch.Tensor, h_prev: torch.Tensor | None,
                           labels: torch.Tensor, k: int, n: float,
                           log_prev: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``sliced_backward`` with the sums left on the device (``ChunkLoss.totals``, added slice by
    slice in float64): no host synchronisation."""
    leaf = hidden.detach().requires_grad_(True)
    slices = readout.slices(hidden.shape[1])
    totals: torch.Tensor | None = None
    part = None
    for s in slices:
        part = chunk_loss(readout, spec, leaf[:, s], None if h_prev is None else h_prev[:, s], labels[:, s], k, n,
                          log_prev if len(slices) == 1 else None)
        part.loss.backward()
        totals = part.totals if totals is None else totals + part.totals
    hidden.backward(leaf.grad)
    assert totals is not None and part is not None  # a sequence has at least one position
    return totals, part.log_p if len(slices) == 1 else None
