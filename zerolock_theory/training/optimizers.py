"""One optimizer per chunk, stepped together at the schedule's learning rate η_t."""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch

from zerolock_theory.config import OptimConfig
from zerolock_theory.training.losses import NonFiniteLossError
from zerolock_theory.training.schedules import learning_rate

__all__ = ["ChunkOptimizers", "build_optimizer"]


def build_optimizer(params: list[torch.nn.Parameter], optim: OptimConfig) -> torch.optim.Optimizer:
    """SGD (momentum, weight decay) or AdamW (betas, weight decay) over ``params`` at ``optim.lr``."""
    if optim.name == "sgd":
        return torch.optim.SGD(params, lr=optim.lr, momentum=optim.momentum, weight_decay=optim.weight_decay)
    return torch.optim.AdamW(params, lr=optim.lr, betas=optim.betas, weight_decay=optim.weight_decay)


class ChunkOptimizers:
    """The optimizers of chunks ``chunks`` (1-based), one per chunk, in chunk order.

    Iterating (or indexing) gives the torch optimizers, for their state dicts.
    """

    def __init__(self, params: list[list[torch.nn.Parameter]], optim: OptimConfig, total_steps: int,
                 optimizers: list[torch.optim.Optimizer] | None = None, chunks: list[int] | None = None) -> None:
        self.params, self.config, self.total_steps = params, optim, total_steps
        self.optimizers = optimizers if optimizers is not None else [build_optimizer(p, optim) for p in params]
        self.chunks = chunks if chunks is not None else list(range(1, len(params) + 1))

    def only(self, k: int) -> ChunkOptimizers:
        """Chunk k's optimizer alone (a pipeline stage), built with all the others."""
        i = self.chunks.index(k)
        return ChunkOptimizers([self.params[i]], self.config, self.total_steps, [self.optimizers[i]], [k])

    def __iter__(self) -> Iterator[torch.optim.Optimizer]:
        return iter(self.optimizers)

    def __getitem__(self, i: int) -> torch.optim.Optimizer:
        return self.optimizers[i]

    def __len__(self) -> int:
        return len(self.optimizers)

    def step(self, step: int, grad_sq: list[float]) -> float:
        """Check, clip and apply each chunk's accumulated gradient at η_t; return η_t.

        ``grad_sq`` holds each chunk's ‖∇‖² (``gradients.grad_sq``); a non-finite one raises
        ``NonFiniteLossError`` before any chunk steps.
        """
        for k, value in zip(self.chunks, grad_sq, strict=True):
            if not math.isfinite(value):
                raise NonFiniteLossError(f"step {step}: chunk {k} gradient is not finite")
        lr = learning_rate(self.config, step, self.total_steps)
        for opt, params in zip(self.optimizers, self.params, strict=True):
            if self.config.max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(params, self.config.max_grad_norm)
            for group in opt.param_groups:
                group["lr"] = lr
            opt.step()
            opt.zero_grad(set_to_none=True)
        return lr
