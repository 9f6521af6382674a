"""The loss of one chunk's readout: a pure ``chunk_loss`` and its sliced backward.

Every loss the package trains on or measures is a readout loss (docs/MATH.md, "Local losses"):
chunk k's output h_k is read out to p_k and compared with the label distribution p_y^ε and, for
ZeroLock, the detached upstream readout p_{k-1}. ``LossSpec.local`` is ZeroLock's ℓ_k (the
method's α of chunk k and direction); ``LossSpec.global_`` is the global loss L = CE(p_y^ε, p_K) (α = 1,
forward). Losses are summed over labelled positions and divided by n, the labelled tokens of
the whole minibatch.

The loss over the vocabulary and its gradient with respect to the logits come from
``fused_loss.loss_and_grad`` in one pass (closed-form gradient, block by block of positions;
``theory.losses.local_loss_from_logits`` is the reference it equals to float rounding). The
target p_{k-1} travels as ``Prev`` (chunk k−1's logits, in the readout's dtype, and their
log-sum-exp as max and log max p), never as fp32 log-probabilities. ``sliced_backward`` computes the loss slice by
slice of the sequence (``readout_chunk_size``) into a leaf copy of h_k and then pushes the
leaf's gradient through the chunk, so at most one slice of logits exists at a time; unsliced,
the gradient dℓ/dz is written over the previous readout's logits (or over z itself when no
later chunk reads it), so a ZeroLock step allocates no [N, V] tensor for its losses beyond
the readouts.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from zerolock_theory.config import MethodConfig, alpha_of, one_alpha
from zerolock_theory.models.chunking import ChunkedLM
from zerolock_theory.training.fused_loss import Prev, loss_and_grad, working_set

__all__ = [
    "SUM_KEYS", "ChunkLoss", "LossSpec", "NonFiniteLossError", "Prev", "Readout", "check_finite", "chunk_loss",
    "prev_log_probs", "prev_readout", "sliced_backward", "sliced_backward_totals",
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
    def local(cls, method: MethodConfig, k: int | None = None) -> LossSpec:
        """ZeroLock's local loss ℓ_k of chunk k (its own α: ``config.alpha_of``); without k, the
        one α of every chunk (a ``ValueError`` when ``method.alpha`` is a list of different values)."""
        alpha = one_alpha(method, "a local loss without its chunk") if k is None else alpha_of(method, k)
        return cls(alpha, method.direction, method.epsilon, method.p0)

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
    """log p_{k-1} (detached, fp32) from h_{k-1}; p_0 is the embedding readout or uniform (the
    evaluation's form, for ``local_loss_from_logits``)."""
    if h_prev is None:
        return None
    with torch.no_grad():
        logits = chunked.readout(h_prev).float()
        if k == 1 and p0 == "uniform":
            return torch.full_like(logits, -math.log(logits.shape[-1]))
        return F.log_softmax(logits, dim=-1)


def prev_readout(readout: Readout, spec: LossSpec, h_prev: torch.Tensor | None, k: int) -> Prev | None:
    """The target p_{k-1} read out from h_{k-1} (detached, in the readout's dtype): None when α = 1
    or without h_{k-1}; the uniform p_0 for chunk 1 when ``spec.p0`` is uniform."""
    if spec.alpha >= 1.0 or h_prev is None:
        return None
    if k == 1 and spec.p0 == "uniform":
        return Prev(None)
    with torch.no_grad(), readout.autocast():
        return Prev(readout.chunked.readout(h_prev), owned=True)


@dataclass(frozen=True)
class ChunkLoss:
    """A readout loss with its graph, its terms' sums on the device, and the readout as the next
    chunk's target (``Prev``, detached).

    ``totals`` holds Σ term / n of each ``SUM_KEYS`` term, float64 on the loss's device (the
    float32 sum widened, so the values equal ``float(sum) / n``); reading ``sums`` copies them
    to the host (one synchronisation).
    """

    loss: torch.Tensor
    totals: torch.Tensor
    prev: Prev

    @property
    def sums(self) -> dict[str, float]:
        """The terms' sums / n as floats, keyed by ``SUM_KEYS``."""
        return dict(zip(SUM_KEYS, self.totals.tolist(), strict=True))


class _WithGradient(torch.autograd.Function):
    """``value`` as a function of ``logits`` whose gradient is the given ``grad`` (computed in the
    forward pass: the loss is the graph's last operation). A population's ``value`` is one loss per
    member [S] (rows in S equal groups, member by member): each member's rows take its own
    incoming gradient."""

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, value: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(grad)
        return value.clone()

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (grad,) = ctx.saved_tensors
        g = g.to(grad.dtype)
        if g.ndim == 1:  # a population: member s's rows times g[s]
            g = g.repeat_interleave(grad.shape[0] // g.shape[0]).view(-1, *[1] * (grad.ndim - 1))
        return grad * g, None, None


def _terms(spec: LossSpec, logits: torch.Tensor, labels: torch.Tensor, prev: Prev | None, n: float | torch.Tensor,
           grad: bool, out: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """(Σ term / n of each ``SUM_KEYS`` term, float64; d(Σ loss / n)/dz; the norm) of ``logits``.

    A population (``models.population``) passes n as a float64 tensor [S]: the rows are S equal
    groups, member by member, and group s is normalised by n[s]; the sums are then [4, S]."""
    if not isinstance(n, torch.Tensor):
        terms, dz, norm = loss_and_grad(logits.detach(), labels, prev, spec.alpha, spec.direction, spec.epsilon,
                                       1.0 / n, grad=grad, out=out)
        return terms.reshape(len(SUM_KEYS), -1).sum(-1).double() / n, dz, norm
    groups = n.shape[0]
    scale = (1.0 / n).float().repeat_interleave(labels.numel() // groups)  # each position its member's 1/n
    terms, dz, norm = loss_and_grad(logits.detach(), labels, prev, spec.alpha, spec.direction, spec.epsilon,
                                   scale, grad=grad, out=out)
    return terms.reshape(len(SUM_KEYS), groups, -1).sum(-1).double() / n, dz, norm


def chunk_loss(readout: Readout, spec: LossSpec, hidden: torch.Tensor, h_prev: torch.Tensor | None,
               labels: torch.Tensor, k: int, n: float | torch.Tensor, prev: Prev | None = None) -> ChunkLoss:
    """Chunk k's readout loss on ``hidden``, summed over labelled positions / n (no backward).

    ``prev`` is the target p_{k-1} when already at hand (``ChunkLoss.prev`` of chunk k−1);
    otherwise it is read out from ``h_prev``.
    """
    if prev is None:
        prev = prev_readout(readout, spec, h_prev, k)
    with readout.autocast():
        logits = readout.chunked.readout(hidden)
    grad = torch.is_grad_enabled() and logits.requires_grad
    totals, dz, norm = _terms(spec, logits, labels, prev, n, grad)
    loss = totals[0].float()
    if dz is not None:  # loss_and_grad held its working set for a meter; dz stays saved from here
        loss = _WithGradient.apply(logits, loss, dz)
    return ChunkLoss(loss, totals, Prev(logits.detach(), norm))


def sliced_backward(readout: Readout, spec: LossSpec, hidden: torch.Tensor, h_prev: torch.Tensor | None,
                    labels: torch.Tensor, k: int, n: float | torch.Tensor,
                    prev: Prev | None = None) -> tuple[dict[str, float], Prev | None]:
    """Backpropagate ``chunk_loss`` into ``hidden``'s graph slice by slice; return the sums and,
    when the loss ran as one slice and α < 1, the readout as the next chunk's target (else None)."""
    totals, prev = sliced_backward_totals(readout, spec, hidden, h_prev, labels, k, n, prev)
    return dict(zip(SUM_KEYS, totals.tolist(), strict=True)), prev


def sliced_backward_totals(readout: Readout, spec: LossSpec, hidden: torch.Tensor, h_prev: torch.Tensor | None,
                           labels: torch.Tensor, k: int, n: float | torch.Tensor,
                           prev: Prev | None = None, keep: bool | None = None) -> tuple[torch.Tensor, Prev | None]:
    """``sliced_backward`` with the sums left on the device (``ChunkLoss.totals``, added slice by
    slice in float64): no host synchronisation.

    ``prev`` (used only unsliced) may be overwritten when ``owned``: the returned target is, and
    is meant for the next chunk's call alone. ``keep``: whether the next chunk reads this readout
    as its target (its α < 1); None = this chunk's ``spec.alpha`` < 1 (one α for every chunk)."""
    leaf = hidden.detach().requires_grad_(True)
    slices = readout.slices(hidden.shape[1])
    whole = len(slices) == 1
    keep = spec.alpha < 1.0 if keep is None else keep  # keep: z is the next chunk's target
    totals: torch.Tensor | None = None
    kept: Prev | None = None
    for s in slices:
        with readout.autocast():
            logits = readout.chunked.readout(leaf[:, s])
        target = prev if whole and prev is not None else prev_readout(
            readout, spec, None if h_prev is None else h_prev[:, s], k)
        out = target.logits if target is not None and target.owned else None if whole and keep else logits.detach()
        part, dz, norm = _terms(spec, logits, labels[:, s], target, n, True, out)
        held = working_set(logits, None if target is None else target.logits, dz)  # the loss's peak
        logits.backward(dz)
        totals = part if totals is None else totals + part
        kept = Prev(logits.detach(), norm, owned=True) if whole and keep else None
        del held, logits, target, dz, out  # this slice's working set is spent before the next one (or the backward)
    held = working_set(None if kept is None else kept.logits)  # the next chunk's target lives through this backward
    hidden.backward(leaf.grad)
    del held
    assert totals is not None  # a sequence has at least one position
    return totals, kept
