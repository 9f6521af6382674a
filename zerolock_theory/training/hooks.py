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
* in a population (``training.population_loop``), optionally ``prepare_members(hooks, ctxs, step)``,
  a static method of the hook's class, once for all members after update ``step`` and before their
  ``after_step``: ``hooks`` and ``ctxs`` are every member's instance and context, and the model,
  outside member mode, applies member s's adapters to its rows of a stacked batch. It returns
  nothing; what it computes, each member's ``after_step`` reads (its values must be those the
  member's ``after_step`` would compute alone);
* ``on_checkpoint(ctx, step)`` before the checkpoint of ``step`` completed updates is saved, so a
  hook can make durable what it wrote (the readout store syncs): a resume from that checkpoint
  finds it. A resumed hook rebuilds its state in ``on_start`` (``ctx.start_step``);
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
class ProbeCache:
    """What the probes share within a run, one typed field per kind (``probes.readout_pass``,
    ``probes.kernels``): computed once, read by every probe that needs it."""

    batch: Any = None  # probes.readout_pass.ProbeBatch: the run's fixed probe positions
    readouts: tuple[int, torch.Tensor] | None = None  # (step, log p̃ float32 [K+1, N, V])
    hiddens: tuple[int, list[torch.Tensor]] | None = None  # (step, h_0..h_K of the same forward)
    p0: Any = None  # probes.readout_pass._P0: log p_0 and what it was read from, reused while unchanged
    kernel_sums: tuple[tuple[int, float, float, float], Any] | None = None  # ((step, α, ε_g, ε_m), KernelSums)
    kernel_features: dict[str, Any] = field(default_factory=dict)  # the eager kernel's per-step features


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
    cache: ProbeCache = field(default_factory=ProbeCache)  # shared per-step results (readouts, kernel sums)


@runtime_checkable
class Hook(Protocol):
    """An instrument driven by the loop (every probe is one)."""

    name: str

    def on_start(self, ctx: HookContext) -> None: ...

    def after_step(self, ctx: HookContext, step: int, metrics: dict[str, Any]) -> dict[str, Any]: ...

    def on_checkpoint(self, ctx: HookContext, step: int) -> None: ...

    def on_end(self, ctx: HookContext) -> None: ...
