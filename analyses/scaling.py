"""Assumption 5 by step scaling (docs/MATH.md, "Assumption 5", step scaling).

Reads the ``scaling`` probe's keys (``zerolock_theory.metric_keys.scaling_key``): at each
scaled step t and factor c, φ(c), q(c) and ρ(c) = max(φ(c), 0)/q(c) at ω^t + c·Δω_t.

Per run (one seed), over its scaled steps with defined values:

* ``share_positive`` = fraction of scaled steps with φ′ > 0, φ′ = φ(c_min)/c_min;
* ``slope`` = median over the steps with ρ(c) > 0 at ≥ 3 factors of the least-squares slope
  of log ρ(c) on log c (−1 when φ is first order and φ′ > 0, 0 when ρ stays bounded);
* ``c_rho`` = median over steps of c·ρ(c) per factor (the figure; → φ′/q″ when first order).

Over the seeds of one group: t-intervals of the mean of each statistic
(``analyses.seeds.seed_interval``; fewer than 3 seeds → ``None``). Verdict
(``scaling_verdict``), with S the share interval and s the slope interval:

* ``not testable`` — S is ``None`` (fewer than 3 seeds with scaled steps);
* ``bounded`` — S = [0, 0] (φ′ ≤ 0 at every scaled step: ρ(c) = 0 for small c), or s lies
  above −0.5 (ρ stays bounded as the step shrinks);
* ``first order`` — s lies below −0.5 and S above 0: ρ(c) grows like 1/c on a positive
  share of steps, so no step-size-uniform C_fo exists (η_t → 0 along the theorem's schedule);
* ``inconclusive`` — otherwise (also when fewer than 3 seeds have a slope).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.io import numeric_column
from analyses.results import Interval, NotMeasured, Result, register
from analyses.seeds import seed_interval, share_interval
from analyses.verdict import GroupFigures
from zerolock_theory.metric_keys import OBJECTIVES, scaling_factors, scaling_key

__all__ = ["GroupScaling", "SeedScaling", "StepScaling", "group_scaling", "scaling_verdict", "seed_scaling"]

MIN_FACTORS = 3
SLOPE_SPLIT = -0.5  # halfway between bounded (0) and first order (−1)


@dataclass(frozen=True)
class SeedScaling:
    """One run's step-scaling statistics (module docstring)."""

    run: str
    n_steps: int
    share_positive: float
    slope: float
    n_slope_steps: int
    factors: list[float]
    c_rho: list[float | None]


def _slope(c: np.ndarray, rho: np.ndarray) -> float:
    ok = np.isfinite(rho) & (rho > 0)
    if ok.sum() < MIN_FACTORS:
        return math.nan
    return float(np.polyfit(np.log(c[ok]), np.log(rho[ok]), 1)[0])


def seed_scaling(frame: pd.DataFrame, obj: str, run: str = "run") -> SeedScaling:
    """The per-seed statistics of one run; ``NotMeasured`` without scaled steps."""
    factors = scaling_factors(frame.columns, obj)
    if len(factors) < 2:
        raise NotMeasured(f"{run}: no probe/scaling/{obj} keys (probe 'scaling' off)")
    c = np.asarray(factors)
    phi = np.stack([numeric_column(frame, scaling_key(obj, f, "phi"), where=run) for f in factors], 1)
    rho = np.stack([numeric_column(frame, scaling_key(obj, f, "ratio"), where=run) for f in factors], 1)
    rows = np.isfinite(phi).all(axis=1)
    phi, rho = phi[rows], rho[rows]
    if not len(phi):
        raise NotMeasured(f"{run}: probe/scaling/{obj} undefined at every scaled step")
    positive = phi[:, -1] > 0
    slopes = np.array([_slope(c, r) for r in rho[positive]])
    slopes = slopes[np.isfinite(slopes)]
    with np.errstate(invalid="ignore"):
        c_rho = np.nanmedian(np.where(np.isfinite(rho), rho, np.nan) * c, axis=0)
    return SeedScaling(
        run=run,
        n_steps=int(len(phi)),
        share_positive=float(positive.mean()),
        slope=float(np.median(slopes)) if slopes.size else math.nan,
        n_slope_steps=int(slopes.size),
        factors=factors,
        c_rho=[None if not math.isfinite(v) else float(v) for v in c_rho],
    )


def scaling_verdict(share: Interval | None, slope: Interval | None) -> str:
    """``not testable`` / ``bounded`` / ``first order`` / ``inconclusive`` (module docstring)."""
    if share is None:
        return "not testable"
    if share.high <= 0.0:
        return "bounded"
    if slope is None:
        return "inconclusive"
    if slope.high < SLOPE_SPLIT and share.low > 0.0:
        return "first order"
    if slope.low > SLOPE_SPLIT:
        return "bounded"
    return "inconclusive"


@dataclass(frozen=True)
class GroupScaling:
    """Step scaling over the seeds of one group and its verdict."""

    group: str
    trained: str
    seeds: list[SeedScaling]
    share_positive: Interval | None
    slope: Interval | None
    verdict: str

    def figures(self) -> GroupFigures:
        """The group's figures (``analyses.verdict.GroupFigures``), stated by ``analyses.claims.text``."""
        return GroupFigures(self.group, self.trained, "scaling", self.verdict, len(self.seeds),
                            "slope of log rho(c) on log c", self.slope, share=self.share_positive)


@register
@dataclass(frozen=True)
class StepScaling(Result):
    """Assumption 5 for one objective: the primary group first, then descriptive groups."""

    kind = "step_scaling"
    objective: str
    groups: list[GroupScaling]
    excluded: list[str]

    @property
    def primary(self) -> GroupScaling:
        """The pre-registered group (the objective's own training direction)."""
        return self.groups[0]


def group_scaling(
    runs: Sequence[tuple[str, pd.DataFrame]], obj: str, *, group: str = "", trained: str = "", level: float = 0.95
) -> GroupScaling:
    """Per-seed statistics of each run, intervals over seeds, the verdict; ``NotMeasured`` if no run has the keys."""
    if obj not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {obj!r}")
    seeds, reasons = [], []
    for name, frame in runs:
        try:
            seeds.append(seed_scaling(frame, obj, name))
        except NotMeasured as exc:
            reasons.append(str(exc))
    if not seeds:
        raise NotMeasured("; ".join(reasons) or f"no run for probe/scaling/{obj}")
    share = share_interval([s.share_positive for s in seeds], level)
    slope = seed_interval([s.slope for s in seeds], level)
    return GroupScaling(group, trained, seeds, share, slope, scaling_verdict(share, slope))
