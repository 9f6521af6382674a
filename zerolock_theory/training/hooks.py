"""The hook protocol: the only way instruments attach to the training loop.

The caller hands ``setup(config, out, hooks=...)`` a list of hooks (the CLI builds the
probes named in the run config's ``[probes]`` table; see ``probes.registry``). The loop calls,
for every hook:

* ``on_start(ctx)`` once, after setup (``ctx.start_step`` > 0 on resume);
* optionally ``before_step(ctx, step)`` before update ``step``, while the model holds ω^step
  (only hooks that define it are called; it returns nothing and must leave the parameters
  as it found them, bit for bit);
* ``after_step(ctx, step, metrics)`` after update ``step`` (ω^t → ω^{t+1}); it returns a
  dict of ``probe/...`` metrics merged into that step's record;
* ``on_checkpoint(ctx, step)`` after a checkpoint of ``step`` completed updates, returning
  resumable state (a dict, saved inside the checkpoint);
* ``on_end(ctx)`` once, also when training fails.

The loop runs every hook in eval mode, under a forked RNG, with gradients of the trained
parameters left untouched, so hooks cannot change training.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch

from zerolock_theory.config import TrainConfig
from zerolock_theory.data import LMData
from zerolock_theory.models.chunking import ChunkedLM
from zerolock_theory.training.steps import TrainStep

__all__ = ["Hook", "HookContext"]


@dataclass
class HookContext:
    """What a hook may read: the run's objects, never its optimizers."""

    config: TrainConfig
    run_dir: Path
    chunked: ChunkedLM
    step_fn: TrainStep  # the step object: autocast, readout, method, params (probes' gradients)
    data: LMData  # eval and probe batches
    device: torch.device
    start_step: int = 0
    resume_state: dict[str, Any] = field(default_factory=dict)  # hook name -> its saved state
    cache: dict[str, Any] = field(default_factory=dict)  # shared per-step results (e.g. readouts)


@runtime_checkable
class Hook(Protocol):
    """An instrument driven by the loop (every probe is one)."""

    name: str

    def on_start(self, ctx: HookContext) -> None: ...

    def after_step(self, ctx: HookContext, step: int, metrics: dict[str, Any]) -> dict[str, Any]: ...

    def on_checkpoint(self, ctx: HookContext, step: int) -> dict[str, Any]: ...

    def on_end(self, ctx: HookContext) -> None: ...
