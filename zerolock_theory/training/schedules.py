"""Learning-rate schedules η_t as pure functions of the step (stateless, so resumable)."""

from __future__ import annotations

import math

from zerolock_theory.config import OptimConfig

__all__ = ["learning_rate"]


def learning_rate(optim: OptimConfig, step: int, total_steps: int) -> float:
    """η_t for step t (0-based).

    * ``constant``: η_0 (after linear warmup, if any);
    * ``cosine``: linear warmup, then η_0·(r + (1-r)·½(1 + cos(π·progress))), r = min_lr_ratio;
    * ``inv_sqrt``: η_0/√(t+1), the step sizes of Theorem 1 (after warmup, if any).
    """
    base = optim.lr
    if optim.warmup_steps and step < optim.warmup_steps:
        return base * (step + 1) / optim.warmup_steps
    if optim.schedule == "constant":
        return base
    if optim.schedule == "inv_sqrt":
        return base / math.sqrt(step - optim.warmup_steps + 1)
    span = max(1, total_steps - optim.warmup_steps)
    progress = min(1.0, (step - optim.warmup_steps) / span)
    ratio = optim.min_lr_ratio
    return base * (ratio + (1.0 - ratio) * 0.5 * (1.0 + math.cos(math.pi * progress)))
