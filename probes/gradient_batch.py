"""Probe ``gradient_batch``: Ĝ_t on a separate batch ``multiple`` times the training batch (docs/THEOREM1.md).

The rate row of Theorem 1 fits the decay of Ĝ_t = ⟨g^{(1)}_t, g^{(2)}_t⟩, the inner product of the
training step's two half-batch gradients (``train/grad_sq_unbiased``, docs/MATH.md "Theorem 1").
Its noise × noise term has variance ∝ 1/b² in the batch size b. This probe measures the same
quantity on more sequences: at ω^t, for t ≡ 0 (mod ``every``), it draws two halves of
``multiple`` · b / 2 training-split blocks each (``draw_halves``: a generator keyed on the seed and
t, each half without replacement, the halves independent), computes on each half i the gradient
the training step follows (``own_gradient``: ZeroLock, each chunk's local loss ℓ_k w.r.t. its own
adapters on detached inputs; backprop, the global loss L), g^{(i)} = S_i / n_i with S_i the
gradient summed over half i's n_i labelled tokens, and logs

* ``probe/gradient_batch/{k}/grad_sq_unbiased`` = ⟨g^{(1)}_k, g^{(2)}_k⟩ and
  ``probe/gradient_batch/grad_sq_unbiased``, their sum over chunks.

Because the halves are independent draws of the training split, E⟨g^{(1)}, g^{(2)}⟩ = ‖∇R(ω^t)‖²
exactly, R the training split's mean loss (per chunk: ‖∇_{ω_k} R_k‖²); the estimate can be
negative. With ``multiple`` = 1 on the step's own halves it is the step's Ĝ_t (tested).

Record t carries the values at ω^t, like ``train/grad_sq_unbiased`` and ``probes.gradients``:
they are measured in ``after_step(t-1)`` (``on_start`` for the first step) and logged with step
t. Gradients come from ``torch.autograd.grad``; the draws use the probe's own generator, so
``.grad``, the optimizers, the training RNG and the batch order are untouched. The probe runs,
like every hook, in eval mode (adapter and model dropout off; the step's gradient when those
are 0, as on every shipped recipe). Each half is processed in passes of ``rows_per_pass`` rows
(default: the step's half, so no pass holds more activations than a training pass); the summed
gradients are kept in float32 (two gradient copies) and the inner products accumulated on the
device in float64 and read once (besides the one read per pass of the labelled-token count
inside ``training.gradients``). Cost: ``multiple`` / ``every`` training gradients per step.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import torch

from probes.base import AtIterateProbe
from probes.registry import register
from zerolock_theory.data import blocks_to_batch
from zerolock_theory.records import GRADIENT_BATCH
from zerolock_theory.training.gradients import Blocks, count_labelled
from zerolock_theory.training.hooks import HookContext
from zerolock_theory.training.steps import TrainStep

__all__ = ["GradientBatchProbe", "batch_inner", "draw_halves", "gradient_batch_metrics", "own_gradient"]

_key = GRADIENT_BATCH.key
Batch = dict[str, torch.Tensor]


def draw_halves(train_blocks: torch.Tensor, rows: int, seed: int, t: int) -> list[Batch]:
    """Two halves of ``rows // 2`` and ``rows - rows // 2`` blocks of ``train_blocks`` ([n, seq_len+1]),
    each drawn without replacement by one generator keyed on (``seed``, ``t``), as shifted batches."""
    n = train_blocks.shape[0]
    sizes = (rows // 2, rows - rows // 2)
    if sizes[0] < 1 or sizes[1] > n:
        raise ValueError(f"gradient_batch needs 2 <= rows <= 2 x {n} train blocks, got {rows}")
    # The CPU generator keeps only 32 seed bits, so (seed, t) is hashed into them (as DataStream does).
    key = hashlib.sha256(f"zerolock-gradient-batch:{seed}:{t}".encode()).digest()
    gen = torch.Generator().manual_seed(int.from_bytes(key[:4], "little"))
    return [blocks_to_batch(train_blocks[torch.randperm(n, generator=gen)[:size]]) for size in sizes]


def own_gradient(step_fn: TrainStep) -> Callable[[Batch], Blocks]:
    """The gradient the step's update follows: ∇_{ω_k} L for backprop, ∇_{ω_k} ℓ_k on detached inputs for ZeroLock."""
    return step_fn.global_gradient if step_fn.name == "backprop" else step_fn.local_gradients


def _summed_gradient(step_fn: TrainStep, half: Batch, rows_per_pass: int, device: torch.device) -> Blocks:
    """S = Σ_s n_s·g_s over passes s of at most ``rows_per_pass`` rows (g_s normalised by its n_s labelled tokens)."""
    grad, total = own_gradient(step_fn), None
    for start in range(0, half["input_ids"].shape[0], rows_per_pass):
        part = {k: v[start : start + rows_per_pass] for k, v in half.items()}
        n = count_labelled(part["labels"])  # the rows are still on the host: no device read
        if n == 0:
            continue
        with step_fn.autocast():
            blocks = grad({k: v.to(device) for k, v in part.items()})
        if total is None:
            total = [[g.detach().float() * n for g in b] for b in blocks]
        else:
            for acc, b in zip(total, blocks, strict=True):
                for a, g in zip(acc, b, strict=True):
                    a.add_(g.detach().float(), alpha=n)
    assert total is not None  # the caller checked that the half has a labelled token
    return total


def batch_inner(step_fn: TrainStep, halves: list[Batch], rows_per_pass: int, device: torch.device
                ) -> list[float] | None:
    """Per chunk ⟨g^{(1)}_k, g^{(2)}_k⟩ with g^{(i)} = S_i / n_i the mean gradient of half i (module docstring).

    The halves' rows are on the host; the dot products are added on the device in float64,
    tensor by tensor, and read once. None without two halves or when a half has no labelled token.
    """
    if rows_per_pass < 1:
        raise ValueError(f"rows_per_pass must be >= 1, got {rows_per_pass}")
    counts = [count_labelled(h["labels"]) for h in halves]
    if len(halves) != 2 or min(counts) == 0:
        return None
    with torch.enable_grad():
        first, second = (_summed_gradient(step_fn, h, rows_per_pass, device) for h in halves)
    inner = [sum(torch.dot(a.double().reshape(-1), b.double().reshape(-1)) for a, b in zip(x, y, strict=True))
             for x, y in zip(first, second, strict=True)]
    scale = 1.0 / (counts[0] * counts[1])
    return [v * scale for v in torch.stack(inner).tolist()]  # the measurement's one read


def gradient_batch_metrics(inner: list[float] | None, chunks: int) -> dict[str, float | None]:
    """The probe's keys: per chunk ⟨g^{(1)}_k, g^{(2)}_k⟩ and the sum; all null when ``inner`` is None."""
    values = inner if inner is not None else [None] * chunks
    out: dict[str, float | None] = {_key(k, "grad_sq_unbiased"): v for k, v in enumerate(values, start=1)}
    out[_key(None, "grad_sq_unbiased")] = None if inner is None else sum(inner)
    return out


@register("gradient_batch")
@dataclass
class GradientBatchProbe(AtIterateProbe):
    """Ĝ_t on ``multiple`` × the training batch of fresh training sequences every ``every`` steps."""

    name: ClassVar[str] = "gradient_batch"
    every: int = 8
    multiple: int = 8
    rows_per_pass: int | None = None  # rows per forward pass; None: the step's half batch
    seed: int | None = None  # keys the draws with t; None: the run seed

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError(f"gradient_batch.every must be >= 1, got {self.every}")
        if self.multiple < 1:
            raise ValueError(f"gradient_batch.multiple must be >= 1, got {self.multiple}")
        if self.rows_per_pass is not None and self.rows_per_pass < 1:
            raise ValueError(f"gradient_batch.rows_per_pass must be >= 1, got {self.rows_per_pass}")
        self.pending: dict[str, float | None] = {}
        self.total_steps = 0

    def _measure(self, ctx: HookContext, t: int) -> dict[str, float | None]:
        b = ctx.config.data.batch_size
        seed = ctx.config.run.seed if self.seed is None else self.seed
        halves = draw_halves(ctx.data.train_blocks, self.multiple * b, seed, t)
        inner = batch_inner(ctx.step_fn, halves, self.rows_per_pass or b - b // 2, ctx.device)
        return gradient_batch_metrics(inner, ctx.chunked.num_chunks)
