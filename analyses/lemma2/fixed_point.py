"""Which target does training reach? The fixed-point experiment's decision (docs/MATH.md, "Lemma 2").

One chunk k is trained alone (the other chunks frozen) on a fixed batch, its inputs h_{k-1}
and readouts p_{k-1} computed once, with the forward loss ℓ^F_k and, separately from the
same start p^0 (chunk k's readout before training), with the reverse loss ℓ^R_k (ε > 0),
until the local loss stops falling (``zerolock_theory.app.workflows.fixed_point``). For each
training d ∈ {F, R}, the reached readout p^d is compared with both targets, exactly (full
vocabulary, one ε; means over the batch's positions):

    D_d = TV(p^d, m_k) − TV(p^d, g_k),      per seed  C = D_F − D_R
        = (TV(p^F, m) − TV(p^R, m)) + (TV(p^R, g) − TV(p^F, g))

(C < 0: the forward-trained readout is the closer one to m_k and the reverse-trained one
the closer one to g_k.) Levels of D_d alone say little (m_k puts mass ≈ α on the label,
which a chunk rarely reaches); the contrast cancels what both trainings share. C detects the
direction of movement, not arrival: when each training reaches its own target exactly, C =
−2·TV(m_k, g_k) (mean over positions), so ``FixedPointSeed.fraction`` = C / (−2·TV(m_k, g_k)) says
how much of that C shows, and ``progress_forward`` = 1 − TV(p^F, m_k)/TV(p^0, m_k) (reverse: with
g_k) how far each training moved toward its own loss's minimizer (1: reached it).

Label part. A move that uses no label also gives C < 0: an arithmetic move from p^0 toward
p_{k-1} nears m_k = α·p_y^ε + (1−α)·p_{k-1} and a geometric one nears g_k. So each reached readout
is also compared with the targets built from the batch's labels permuted among its positions
(``NULL_PERMUTATIONS`` seeded permutations, mean): D̃_d. The label part of a training is
D_d − D̃_d, and of a seed C_label = (D_F − D̃_F) − (D_R − D̃_R): what the labels add. A label-free
move has C_label ≈ 0 (its distances to true-label and permuted-label targets agree). Records
with the permuted distances (``zerolock_theory.app.workflows.fixed_point_controls``) decide on
C_label (``statistic`` "label part"); older records without them on C ("contrast").

Label-blind guard. TV(·, g_k) also falls when a readout merely flattens (g_k ∝
(p_y^ε)^α·p_{k-1}^{1-α} is p_{k-1} at temperature 1/(1-α) up to the label), so two trainings
that flatten by different amounts could move C either way without any label information.
Each reached readout is therefore compared with its entropy-matched null p̃^d, the start p^0
at the temperature τ_d whose mean entropy equals that of p^d: the residual
ρ_d = TV(p^d, p̃^d) is 0 for a readout that is the start at some temperature, and a seed
counts only when ρ_F and ρ_R both exceed ``RESIDUAL_FLOOR`` (the others are listed as
label-blind).

Decision, with a t-interval of the statistic over the counted seeds (``analyses.stats.seeds.seed_interval``):

* "each loss moves toward its own optimum": the interval lies below −``CONTRAST_FLOOR``;
* "opposite": the interval lies above +``CONTRAST_FLOOR``;
* "no difference detected": otherwise;
* "not testable": fewer than ``MIN_SEEDS`` counted seeds (too few seeds, or label-blind
  reached readouts: a flattened readout never gives a verdict for either target).

Its p-value (``p_value``, for the table's multiplicity correction) is the two-sided t-test of
the statistic's mean against the floor on the side of its estimate (−``CONTRAST_FLOOR`` below 0,
+``CONTRAST_FLOOR`` above): p < 1 − level exactly when the interval clears that floor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from analyses.results import Interval, Result, register
from analyses.stats.multiplicity import t_test_p
from analyses.stats.seeds import MIN_SEEDS, seed_interval
from zerolock_theory.theory.lemma2 import entropy_matching_temperature, readout_distances, temper

__all__ = ["CONTRAST_FLOOR", "NULL_PERMUTATIONS", "OUTCOMES", "RESIDUAL_FLOOR", "label_permutations", "FixedPointResult", "FixedPointSeed", "Reached", "fixed_point_decision",
           "reached"]

OUTCOMES: tuple[str, ...] = ("each loss moves toward its own optimum", "opposite", "no difference detected", "not testable")
CONTRAST_FLOOR = 1e-3
"""TV units: a contrast whose interval does not clear this margin is "no difference detected"."""
RESIDUAL_FLOOR = 1e-2
"""TV units: a reached readout within this of its entropy-matched null carries no label information."""
NULL_TOLERANCE = 1e-10
"""Bisection tolerance (log τ) of the entropy-matched null."""
NULL_PERMUTATIONS = 4
"""Label permutations among the batch's positions whose targets give the label part's D̃_d."""
ARM_OUTCOMES: tuple[str, ...] = ("toward its own optimum", "toward the other's", "no difference detected", "not testable")
"""One arm's outcome (the CE arm's own optimum is m_k, the reverse arm's g_k)."""


def label_free_move(log_start: torch.Tensor, log_prev: torch.Tensor, step: float, kind: str) -> torch.Tensor:
    """log of the move from p^0 toward p_{k-1} that uses no label: "arithmetic" (1−s)·p^0 + s·p_{k-1},
    "geometric" ∝ (p^0)^{1−s}·p_{k-1}^s (s = ``step`` in [0, 1])."""
    start, prev = log_start.double(), log_prev.double()
    if kind == "arithmetic":
        if step >= 1.0:
            return prev.clone()
        return torch.logaddexp(start + math.log1p(-step), prev + math.log(step)) if step > 0 else start.clone()
    if kind == "geometric":
        return torch.log_softmax((1.0 - step) * start + step * prev, dim=-1)
    raise ValueError(f"kind must be 'arithmetic' or 'geometric', got {kind!r}")


@dataclass(frozen=True)
class Reached:
    """One training of one seed: where it stopped, the reached readout's distances, its null residual."""

    direction: str
    steps: int
    converged: bool  # the stopping criterion was met before the step limit
    loss_start: float
    loss_end: float  # the best local loss seen (the reached readout's)
    tv_m: float  # TV(p^d, m_k), mean over positions
    tv_g: float  # TV(p^d, g_k)
    residual: float  # ρ_d = TV(p^d, p̃^d), p̃^d = p^0 at the entropy-matched temperature
    temperature: float  # τ_d
    tv_m_permuted: float = math.nan  # TV(p^d, m_k) with the labels permuted (mean over NULL_PERMUTATIONS)
    tv_g_permuted: float = math.nan

    @property
    def difference(self) -> float:
        """D_d = TV(p^d, m_k) − TV(p^d, g_k)."""
        return self.tv_m - self.tv_g

    @property
    def label_difference(self) -> float:
        """D_d − D̃_d: the part of D_d the labels add (NaN without the permuted distances)."""
        return self.difference - (self.tv_m_permuted - self.tv_g_permuted)


def label_permutations(labels: torch.Tensor, seed: int, count: int = NULL_PERMUTATIONS) -> list[torch.Tensor]:
    """``count`` seeded permutations of ``labels`` among their positions (the label part's null)."""
    gen = torch.Generator().manual_seed(10_000 + int(seed))
    return [labels[torch.randperm(labels.numel(), generator=gen).to(labels.device)] for _ in range(count)]


def reached(direction: str, log_prev: torch.Tensor, log_start: torch.Tensor, log_p: torch.Tensor,
            labels: torch.Tensor, alpha: float, epsilon: float, *, steps: int = 0, converged: bool = True,
            loss_start: float = float("nan"), loss_end: float = float("nan"),
            permuted: Sequence[torch.Tensor] = ()) -> Reached:
    """``Reached`` from log p_{k-1}, the start log p^0 and the reached log p^d ([N, V], full vocabulary);
    ``permuted``: label permutations (``label_permutations``) whose targets give the label part's null."""
    dist = readout_distances(log_prev, log_p, labels, alpha, epsilon)
    tau = entropy_matching_temperature(log_start, float(dist["entropy"].mean()), tol=NULL_TOLERANCE)
    residual = 0.5 * (log_p.double().exp() - temper(log_start, tau).exp()).abs().sum(-1).mean()
    null = [readout_distances(log_prev, log_p, other, alpha, epsilon) for other in permuted]
    tv_m_null = sum(float(d["tv_m"].mean()) for d in null) / len(null) if null else math.nan
    tv_g_null = sum(float(d["tv_g"].mean()) for d in null) / len(null) if null else math.nan
    return Reached(direction, steps, converged, loss_start, loss_end, float(dist["tv_m"].mean()),
                   float(dist["tv_g"].mean()), float(residual), tau, tv_m_null, tv_g_null)


@dataclass(frozen=True)
class FixedPointSeed:
    """One seed: both trainings from the same start, and the start's own distances."""

    seed: int
    forward: Reached
    reverse: Reached
    start_tv_m: float  # TV(p^0, m_k)
    start_tv_g: float
    tv_m_g: float  # TV(m_k, g_k)
    seconds: float = 0.0

    @property
    def contrast(self) -> float:
        """C = D_F − D_R."""
        return self.forward.difference - self.reverse.difference

    @property
    def label_contrast(self) -> float:
        """C_label = (D_F − D̃_F) − (D_R − D̃_R) (NaN without the permuted distances)."""
        return self.forward.label_difference - self.reverse.label_difference

    @property
    def fraction(self) -> float:
        """C / (−2·TV(m_k, g_k)): 1 when each training reaches its own target exactly."""
        return self.contrast / (-2.0 * self.tv_m_g) if self.tv_m_g > 0 else math.nan

    @property
    def progress_forward(self) -> float:
        """1 − TV(p^F, m_k)/TV(p^0, m_k): how far the CE training moved toward m_k (1: reached)."""
        return 1.0 - self.forward.tv_m / self.start_tv_m if self.start_tv_m > 0 else math.nan

    @property
    def progress_reverse(self) -> float:
        """1 − TV(p^R, g_k)/TV(p^0, g_k): how far the reverse training moved toward g_k."""
        return 1.0 - self.reverse.tv_g / self.start_tv_g if self.start_tv_g > 0 else math.nan

    def label_blind(self, floor: float = RESIDUAL_FLOOR) -> bool:
        """Whether a reached readout is within ``floor`` of its entropy-matched null."""
        return min(self.forward.residual, self.reverse.residual) <= floor


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
    contrast: Interval | None  # over the counted seeds
    counted: int
    label_blind: list[int]  # seeds left out by the guard
    floor: float
    residual_floor: float
    converged: int  # trainings (two per seed) that met the stopping criterion
    settings: dict[str, str] = field(default_factory=dict)
    statistic: str = "contrast"  # what decided: "label part" (C_label) or "contrast" (C, older records)
    label_contrast: Interval | None = None  # C_label over the counted seeds, when recorded
    fraction: Interval | None = None  # C / (−2·TV(m_k, g_k)) over the counted seeds
    progress_forward: Interval | None = None  # 1 − TV(p^F, m_k)/TV(p^0, m_k) over the counted seeds
    progress_reverse: Interval | None = None  # 1 − TV(p^R, g_k)/TV(p^0, g_k)
    p_value: float | None = None  # two-sided t-test of the deciding statistic against the floor on its side

    @property
    def decisive(self) -> Interval | None:
        """The interval that decided (C_label or C)."""
        return self.label_contrast if self.statistic == "label part" else self.contrast


def fixed_point_decision(seeds: Sequence[FixedPointSeed], chunk: int, alpha: float, epsilon: float,
                         level: float = 0.95, settings: dict[str, str] | None = None,
                         floor: float = CONTRAST_FLOOR, residual_floor: float = RESIDUAL_FLOOR) -> FixedPointResult:
    """The decision of the module docstring over the seeds' records."""
    blind = [s.seed for s in seeds if s.label_blind(residual_floor)]
    counted = [s for s in seeds if not s.label_blind(residual_floor)]
    raw = seed_interval([s.contrast for s in counted], level, min_seeds=MIN_SEEDS)
    labelled = bool(counted) and all(math.isfinite(s.label_contrast) for s in counted)
    values = [s.label_contrast if labelled else s.contrast for s in counted]
    interval = seed_interval(values, level, min_seeds=MIN_SEEDS)
    p_value = None
    if interval is not None:
        p_value = t_test_p(values, -floor if interval.estimate < 0 else floor)
    if interval is None:
        outcome = "not testable"
    elif interval.high < -floor:
        outcome = OUTCOMES[0]
    elif interval.low > floor:
        outcome = "opposite"
    else:
        outcome = "no difference detected"
    converged = sum(int(s.forward.converged) + int(s.reverse.converged) for s in seeds)
    def over(name: str) -> Interval | None:
        return seed_interval([getattr(s, name) for s in counted], level, min_seeds=MIN_SEEDS)

    return FixedPointResult(outcome, int(chunk), float(alpha), float(epsilon), list(seeds), raw, len(counted),
                            blind, float(floor), float(residual_floor), converged, dict(settings or {}),
                            "label part" if labelled else "contrast", interval if labelled else None,
                            over("fraction"), over("progress_forward"), over("progress_reverse"), p_value)
