"""The step against the output's gradient: does a method's step lower the output CE at first order?

docs/MATH.md, "Why it fails where it fails". At parameters ω, on one batch B, for each chunk k:

* g_k^ZL, the direction the method's SGD step follows on ω_k (``step_direction``): ZeroLock's
  ∇_{ω_k} ℓ_k on the detached input (0 for a frozen chunk); the un-detached twin's ∇_{ω_k} J;
  backprop's g_k^out;
* g_k^out = ∇_{ω_k} CE(p_y^ε, p_K), the output's CE through every chunk (backprop's gradient).

An SGD step ω_k ← ω_k − η·g_k^ZL changes the output CE by

    ΔCE = −η Σ_k ⟨g_k^out, g_k^ZL⟩ + O(η²)

(``ChunkAlignment.predicted``, ``predicted_change``). If Σ_k ⟨g_k^out, g_k^ZL⟩ ≤ 0 at ω⁰, no step
size lowers the output CE: the first-order term does not, and the O(η²) term is what remains.
Guarantees (tests/training/test_alignment.py): the prediction equals the measured change
(``measured_change``) to first order (within 5% at η = 1e-4 on a tiny model); the cosine is 1
when the local loss is the output's CE (α = 1, K = 1) and for backprop's own step.

Along a run: ``train_steps`` takes the method's own training steps on the training stream, as the
training loop does (the same parameters, bit for bit, after the same steps), so the alignment can
be read at ω^t for a few registered t, not only at ω⁰.

Every inner product and norm is taken in float64 over each chunk's trainable parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from zerolock_theory.config import MethodConfig
from zerolock_theory.theory.losses import IGNORE_INDEX
from zerolock_theory.training.gradients import (
    Blocks,
    global_and_local_gradients,
    global_gradient,
    labelled_tokens,
)
from zerolock_theory.training.losses import Readout
from zerolock_theory.training.undetached import undetached_loss

if TYPE_CHECKING:
    from zerolock_theory.data import DataStream
    from zerolock_theory.training.steps import TrainStep

__all__ = ["LOWERS", "NOT_DISTINGUISHED", "RAISES", "ChunkAlignment", "first_order_outcome", "measure_alignment", "measured_change", "output_ce", "predicted_change",
           "step_direction", "train_steps"]

Batch = dict[str, torch.Tensor]


@dataclass(frozen=True)
class ChunkAlignment:
    """Chunk k's ⟨g_k^out, g_k^ZL⟩ and both norms (float64)."""

    chunk: int
    inner: float
    norm_step: float
    norm_out: float

    @property
    def cosine(self) -> float:
        """cos(g_k^out, g_k^ZL); NaN when either gradient is 0 (a frozen chunk, LoRA's A at B = 0)."""
        denom = self.norm_step * self.norm_out
        return self.inner / denom if denom > 0 else math.nan

    def predicted(self, lr: float) -> float:
        """−η·⟨g_k^out, g_k^ZL⟩: chunk k's share of the first-order change of the output CE."""
        return -lr * self.inner


LOWERS, RAISES, NOT_DISTINGUISHED = (
    "ZeroLock's step lowers the output CE at first order",
    "ZeroLock's step raises the output CE at first order",
    "not distinguished",
)
"""The outcome words of an interval of Σ⟨g^out, g^ZL⟩ (or of one chunk's term) over seeds."""


def first_order_outcome(low: float, high: float) -> str:
    """The words for an interval [low, high] of the inner product ⟨g^out, g^ZL⟩: above 0 lowers the
    output CE at first order, below 0 raises it, containing 0 is not distinguished."""
    if low > 0:
        return LOWERS
    if high < 0:
        return RAISES
    return NOT_DISTINGUISHED


def predicted_change(chunks: list[ChunkAlignment], lr: float) -> float:
    """ΔCE ≈ −η Σ_k ⟨g_k^out, g_k^ZL⟩ of one SGD step of size η along the method's direction."""
    return sum(c.predicted(lr) for c in chunks)


def _split(grads: tuple[torch.Tensor, ...], params: Blocks) -> Blocks:
    out, i = [], 0
    for ps in params:
        out.append(list(grads[i: i + len(ps)]))
        i += len(ps)
    return out


def step_direction(readout: Readout, method: MethodConfig, params: Blocks, batch: Batch) -> tuple[Blocks, Blocks]:
    """(g^ZL, g^out) per chunk at the current parameters: the method's SGD direction and the
    output CE's gradient (no ``.grad``, no optimizer)."""
    if method.name == "backprop":
        glob = global_gradient(readout, method, params, batch)
        step = glob
    elif not method.detach:
        glob = global_gradient(readout, method, params, batch)
        total, _ = undetached_loss(readout, method, batch, labelled_tokens(batch))
        step = _split(torch.autograd.grad(total, [p for ps in params for p in ps], allow_unused=True), params)
        step = [[torch.zeros_like(p) if g is None else g for g, p in zip(gs, ps, strict=True)]
                for gs, ps in zip(step, params, strict=True)]
    else:
        glob, step = global_and_local_gradients(readout, method, params, batch)
    for k in method.frozen_chunks:  # a frozen chunk does not move
        step[k - 1] = [torch.zeros_like(g) for g in step[k - 1]]
    return step, glob


def _dot(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return float(sum(torch.dot(x.double().reshape(-1), y.double().reshape(-1)) for x, y in zip(a, b, strict=True)))


def measure_alignment(readout: Readout, method: MethodConfig, params: Blocks, batch: Batch) -> list[ChunkAlignment]:
    """Each chunk's ``ChunkAlignment`` on ``batch`` at the current parameters."""
    step, glob = step_direction(readout, method, params, batch)
    return [ChunkAlignment(k, _dot(g_out, g_step), math.sqrt(_dot(g_step, g_step)), math.sqrt(_dot(g_out, g_out)))
            for k, (g_step, g_out) in enumerate(zip(step, glob, strict=True), start=1)]


@torch.no_grad()
def output_ce(readout: Readout, method: MethodConfig, batch: Batch) -> float:
    """CE(p_y^ε, p_K) per labelled token on ``batch`` (the loss g^out differentiates), in the logits'
    dtype when wider than float32 (the fused loss works in float32: too coarse for a tiny step)."""
    chunked, labels = readout.chunked, batch["labels"]
    logits = chunked(batch["input_ids"], batch.get("attention_mask"))
    log_p = torch.log_softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), -1)
    mask = labels != IGNORE_INDEX
    picked = -log_p.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    eps = method.epsilon
    per_token = (1.0 - eps) * picked - eps * log_p.mean(-1) if eps > 0 else picked
    return float(per_token[mask].sum() / max(1, int(mask.sum())))


def measured_change(readout: Readout, method: MethodConfig, params: Blocks, batch: Batch, lr: float,
                    step: Blocks | None = None) -> float:
    """CE(ω − η·g^ZL) − CE(ω) on ``batch``: one SGD step along the method's direction (``step``, the
    first half of ``step_direction``, computed here when not given), measured; the parameters are
    restored afterwards, bit for bit."""
    if step is None:
        step, _ = step_direction(readout, method, params, batch)
    before = output_ce(readout, method, batch)
    saved = [[p.detach().clone() for p in ps] for ps in params]
    try:
        with torch.no_grad():
            for ps, gs in zip(params, step, strict=True):
                for p, g in zip(ps, gs, strict=True):
                    p.sub_(lr * g.to(p.dtype))
        after = output_ce(readout, method, batch)
    finally:
        with torch.no_grad():
            for ps, copies in zip(params, saved, strict=True):
                for p, c in zip(ps, copies, strict=True):
                    p.copy_(c)
    return after - before


def train_steps(step_fn: TrainStep, stream: DataStream, start: int, n: int, device: torch.device | str = "cpu") -> int:
    """Take ``n`` training steps of ``step_fn`` (a ``TrainStep``) on ``stream``'s next batches,
    numbered ``start`` … ``start + n − 1`` (the schedule reads the number), as the training loop
    does; returns ``start + n``. The model is in train mode afterwards."""
    step_fn.readout.chunked.train()
    for step in range(start, start + n):
        batch = {k: v.to(device) for k, v in stream.next_batch().items()}
        step_fn.train_step(batch, step)
    return start + n
