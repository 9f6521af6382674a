"""Which target does training reach? The fixed-point experiment's decision (docs/MATH.md, "Lemma 2").

One chunk k is trained alone (the other chunks frozen) on a fixed batch, its inputs h_{k-1}
and readouts p_{k-1} computed once, with the forward loss ℓ^F_k and, separately from the
same start, with the reverse loss ℓ^R_k (ε > 0), until the local loss stops falling
(``zerolock_theory.workflows.fixed_point``). For each training d ∈ {F, R}, the reached
readout p^d is compared with both targets, exactly (full vocabulary, one ε):

    D_d = TV(p^d, m_k) − TV(p^d, g_k)      (mean over the batch's positions)

Per seed, the contrast C = D_F − D_R = (TV(p^F, m) − TV(p^R, m)) + (TV(p^R, g) − TV(p^F, g)),
the sum of an m column (forward-trained closer to m_k than reverse-trained: < 0) and a g
column (reverse-trained closer to g_k than forward-trained: < 0). Levels of D_d alone say
little (m_k puts mass ≈ α on the label, which a chunk rarely reaches); the contrast cancels
what both trainings share.

Decision, with a t-interval of C over seeds (``analyses.seeds.seed_interval``):

* "each loss reaches its own optimum": the interval lies below 0 and both columns' means are
  ≤ 0 (each training is the closer one to its own target);
* "opposite": the interval lies above 0 and both columns' means are ≥ 0;
* "undecided": the interval excludes 0 but the columns disagree in sign (one training moved
  in a way that brings it closer to both targets, e.g. a label-blind flattening);
* "no difference detected": the interval covers 0;
* "not testable": fewer than ``MIN_SEEDS`` seeds with a finite contrast.

A label-blind change that both trainings share (the same flattening of p_{k-1}) gives C = 0
exactly, seed by seed, hence "no difference detected"; the column guard keeps trainings that
flatten by different amounts from producing a verdict for either target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from analyses.results import Interval, Result, register
from analyses.seeds import MIN_SEEDS, seed_interval
from zerolock_theory.theory.lemma2 import readout_distances

__all__ = ["OUTCOMES", "FixedPointResult", "FixedPointSeed", "Reached", "fixed_point_decision", "reached"]

OUTCOMES: tuple[str, ...] = (
    "each loss reaches its own optimum", "opposite", "undecided", "no difference detected", "not testable",
)


@dataclass(frozen=True)
class Reached:
    """One training of one seed: where it stopped and the reached readout's distances to the targets."""

    direction: str
    steps: int
    converged: bool  # the stopping criterion was met before the step limit
    loss_start: float
    loss_end: float  # the best local loss seen (the reached readout's)
    tv_m: float  # TV(p^d, m_k), mean over positions
    tv_g: float  # TV(p^d, g_k)

    @property
    def difference(self) -> float:
        """D_d = TV(p^d, m_k) − TV(p^d, g_k)."""
        return self.tv_m - self.tv_g


def reached(direction: str, log_prev: torch.Tensor, log_p: torch.Tensor, labels: torch.Tensor, alpha: float,
            epsilon: float, *, steps: int = 0, converged: bool = True, loss_start: float = float("nan"),
            loss_end: float = float("nan")) -> Reached:
    """``Reached`` from log p_{k-1} and the reached log p^d ([N, V], full vocabulary) and labels [N]."""
    dist = readout_distances(log_prev, log_p, labels, alpha, epsilon)
    return Reached(direction, steps, converged, loss_start, loss_end,
                   float(dist["tv_m"].mean()), float(dist["tv_g"].mean()))


@dataclass(frozen=True)
class FixedPointSeed:
    """One seed: both trainings from the same start, and the start's own distances."""

    seed: int
    forward: Reached
    reverse: Reached
    start_tv_m: float  # TV(p_k at the start, m_k)
    start_tv_g: float
    tv_m_g: float  # TV(m_k, g_k)
    seconds: float = 0.0

    @property
    def contrast(self) -> float:
        """C = D_F − D_R."""
        return self.forward.difference - self.reverse.difference

    @property
    def m_column(self) -> float:
        """TV(p^F, m_k) − TV(p^R, m_k)."""
        return self.forward.tv_m - self.reverse.tv_m

    @property
    def g_column(self) -> float:
        """TV(p^R, g_k) − TV(p^F, g_k)."""
        return self.reverse.tv_g - self.forward.tv_g


@register
@dataclass(frozen=True)
class FixedPointResult(Result):
    """The fixed-point experiment on one chunk: per-seed records, the contrast's interval, the outcome."""

    kind = "fixed_point"
    outcome: str
    chunk: int
    alpha: float
    epsilon: float
    seeds: list[FixedPointSeed]
    contrast: Interval | None
    m_column: float
    g_column: float
    converged: int  # trainings (two per seed) that met the stopping criterion
    settings: dict[str, str] = field(default_factory=dict)


def fixed_point_decision(seeds: Sequence[FixedPointSeed], chunk: int, alpha: float, epsilon: float,
                         level: float = 0.95, settings: dict[str, str] | None = None) -> FixedPointResult:
    """The decision of the module docstring over the seeds' records."""
    finite = [s for s in seeds if np.isfinite(s.contrast)]
    interval = seed_interval([s.contrast for s in finite], level, min_seeds=MIN_SEEDS)
    m_col = float(np.mean([s.m_column for s in finite])) if finite else float("nan")
    g_col = float(np.mean([s.g_column for s in finite])) if finite else float("nan")
    if interval is None:
        outcome = "not testable"
    elif interval.high < 0:
        outcome = OUTCOMES[0] if m_col <= 0 and g_col <= 0 else "undecided"
    elif interval.low > 0:
        outcome = "opposite" if m_col >= 0 and g_col >= 0 else "undecided"
    else:
        outcome = "no difference detected"
    converged = sum(int(s.forward.converged) + int(s.reverse.converged) for s in seeds)
    return FixedPointResult(outcome, int(chunk), float(alpha), float(epsilon), list(seeds), interval, m_col, g_col,
                            converged, dict(settings or {}))
