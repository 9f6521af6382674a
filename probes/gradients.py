"""Probe ``gradients``: the global gradient and its alignment with the local ones (docs/MATH.md, "Theorem 1").

On the probe batch, at ω^t, for t ≡ 0 (mod ``every``), ZeroLock and backprop alike (the
per-step quantity of Theorem 1 is Ĝ_t, logged by the training step itself):

* ``probe/gradient/global_sq`` = G^glob_t = ‖∇_ω L(ω^t)‖², L = CE(p_y^ε, p_K) by backprop
  through all chunks (``training.gradients.global_gradient``); per chunk ``probe/gradient/{k}/global_sq``;
* ``probe/gradient/{k}/cos`` = cos(∇_{ω_k} ℓ_k, ∇_{ω_k} L), ℓ_k the chunk's local loss on
  detached inputs (``training.gradients.local_gradients``); null when either gradient is zero;
  ``probe/gradient/{k}/local_sq`` and ``probe/gradient/local_sq`` = Σ_k ‖∇_{ω_k} ℓ_k‖²
  (also for backprop). Both come from one forward pass (``global_and_local_gradients``).

Record t carries the values at ω^t, like ``train/grad_norm_sq`` (G_t): they are measured in
``after_step(t-1)`` (``on_start`` for the first step) and logged with step t. Gradients come
from ``torch.autograd.grad``: no ``.grad``, optimizer or training RNG is touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from probes.base import AtIterateProbe
from probes.readout_pass import DEFAULT_N_POSITIONS, probe_batch
from probes.registry import register
from zerolock_theory.records import GRADIENT
from zerolock_theory.training.gradients import global_and_local_gradients
from zerolock_theory.training.hooks import HookContext

__all__ = ["GradientProbe", "gradient_metrics"]

_key = GRADIENT.key


def _flat(blocks: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([g.detach().reshape(-1).double() for g in blocks])


def gradient_metrics(
    global_blocks: list[list[torch.Tensor]], local_blocks: list[list[torch.Tensor]] | None
) -> dict[str, float | None]:
    """Squared norms per chunk and in total, and the per-chunk cosine when local blocks are given."""
    out: dict[str, float | None] = {}
    total = 0.0
    for k, blocks in enumerate(global_blocks, start=1):
        sq = float(_flat(blocks).pow(2).sum())
        out[_key(k, "global_sq")] = sq
        total += sq
    out[_key(None, "global_sq")] = total
    if local_blocks is None:
        return out
    local_total = 0.0
    for k, (glob, loc) in enumerate(zip(global_blocks, local_blocks, strict=True), start=1):
        g, lo = _flat(glob), _flat(loc)
        norms = float(g.norm()) * float(lo.norm())
        out[_key(k, "local_sq")] = float(lo.pow(2).sum())
        out[_key(k, "cos")] = float(torch.dot(g, lo)) / norms if norms > 0 else None
        local_total += out[_key(k, "local_sq")]  # type: ignore[operator]
    out[_key(None, "local_sq")] = local_total
    return out


@register("gradients")
@dataclass
class GradientProbe(AtIterateProbe):
    """G^glob_t and cos(local, global) per chunk every ``every`` steps."""

    name: ClassVar[str] = "gradients"
    every: int = 10
    n_positions: int = DEFAULT_N_POSITIONS
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError(f"gradients.every must be >= 1, got {self.every}")
        self.pending: dict[str, float | None] = {}
        self.total_steps = 0

    def _measure(self, ctx: HookContext, t: int) -> dict[str, float | None]:
        batch = probe_batch(ctx, self.n_positions, self.seed).as_dict()
        with torch.enable_grad():
            step = ctx.step_fn
            glob, loc = global_and_local_gradients(step.readout, step.method, step.params, batch)
        return gradient_metrics(glob, loc)
