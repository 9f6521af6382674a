"""Assumption 5 decided by the share of scaled steps with φ′ > 0 (docs/MATH.md, "Assumption 5").

Question: is the stability ratio ρ_t = max(φ_t, 0)/q_t bounded uniformly in the step size,
as Assumption 5 (sup_t ρ_t ≤ C_fo(α) < ∞) requires? Along η_t → 0, φ(c) = c·φ′ + O(c²) and
q(c) = c²·q″ + O(c³), so any scaled step with φ′ > 0 gives ρ(c) ~ 1/c: unbounded.

Reads the ``scaling`` probe (``zerolock_theory.metric_keys.scaling_key``): φ(c) at
ω^t + c·Δω_t (``actual``) and at ω^t + c·u_t, u_t a random direction with the update's norm
per chunk (``random``), for factors c_1 > … > c_n (n ≥ ``MIN_FACTORS``).

**φ′ of one scaled step.** With s(c) = φ(c)/c = φ′ + b·c + d·c² + O(c³), the quadratic
through s at the three smallest factors, evaluated at c = 0 (Richardson extrapolation of
order 2), is φ̂′; it is exact when φ is a cubic in c. The same through the next three
factors up gives φ̂′_prev, and err = |φ̂′ − φ̂′_prev| estimates its error (float noise
included: s(c) amplifies it by 1/c). With S = max_c |s(c)| and τ = max(err, ``RESOLUTION``·S)
the step is

* ``positive`` when φ̂′ > τ, ``non-positive`` when φ̂′ < −τ, or when |φ̂′| ≤ τ and
  err ≤ ``RESOLUTION``·S (φ′ is zero at the design's resolution: φ(c) = O(c²));
* ``unresolved`` otherwise (the factors cannot tell the sign), or where some φ(c) is not finite.

**Per seed**: resolved and positive counts, for each direction, and the paired indicator
differences 1[actual positive] − 1[random positive] at the steps resolved in both. A seed
counts when it has ≥ ``MIN_STEPS`` resolved actual scaled steps.

**Over the counted seeds** (``analyses.shares``): the pooled share of positive steps with a
seed-respecting Clopper–Pearson interval, the same for the random baseline, and the paired
difference (actual − random) with a cluster-robust t-interval. Outcome (``OUTCOMES``):

* ``not testable`` — fewer than ``MIN_SEEDS`` counted seeds (``few_seeds``); or no positive
  step but some unresolved (``unresolved``: "holds" needs every scaled step resolved); or
  positive steps but fewer than ``MIN_SEEDS`` seeds with a random baseline (``no_baseline``);
* ``holds`` — no positive step, every scaled step of the counted seeds resolved;
* ``fails systematically`` — positive steps and the difference interval lies above 0: the
  update moves the targets against its own descent more often than a random direction;
* ``fails, generically`` — positive steps, the difference interval reaches 0: as for any
  update whose first-order drift is sometimes positive.

The slope of log ρ(c) on log c (median per seed over the positive steps, t-interval over
seeds) is a smoothness check: −1 whenever φ′ > 0. It is descriptive and decides nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.io import numeric_column
from analyses.results import Interval, NotMeasured, Result, register
from analyses.seeds import MIN_SEEDS, seed_interval
from analyses.shares import cluster_share_interval, paired_difference_interval
from zerolock_theory.metric_keys import OBJECTIVES, scaling_factors, scaling_key, scaling_step_key

__all__ = ["MIN_FACTORS", "MIN_STEPS", "OUTCOMES", "RESOLUTION", "DirectionCounts", "GroupScaling",
           "SeedScaling", "StepScaling", "classify_steps", "group_from_seeds", "group_scaling", "phi_prime",
           "scaling_outcome", "seed_from_arrays", "seed_scaling"]

OUTCOMES: tuple[str, ...] = ("holds", "fails, generically", "fails systematically", "not testable")
REASONS: tuple[str, ...] = ("resolved", "few_seeds", "unresolved", "no_baseline", "above_random", "not_above_random")
MIN_FACTORS = 4
"""Factors needed per scaled step: three for φ̂′, a fourth for its error."""
MIN_STEPS = 30
"""Resolved scaled steps a seed needs to count (the full suite scales ≥ 30 steps per run)."""
RESOLUTION = 1e-3
"""|φ′| below this fraction of max_c |φ(c)/c| is zero at the design's resolution."""
POSITIVE, NONPOSITIVE, UNRESOLVED = 1, 0, -1
# legacy words of analyses/claims.py and reports/findings.py until they read ``outcome``


def _extrapolate(c: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Value at c = 0 of the quadratic through (c_j, s[:, j]), j = 0..2 (Lagrange weights)."""
    out = np.zeros(s.shape[0])
    for i in range(3):
        others = [j for j in range(3) if j != i]
        weight = np.prod([c[j] / (c[j] - c[i]) for j in others])
        out = out + weight * s[:, i]
    return out


def phi_prime(c: np.ndarray, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(φ̂′, err, S) per row of ``phi`` [steps, factors] at factors ``c`` (largest first)."""
    s = phi / c
    n = c.size
    estimate = _extrapolate(c[n - 3:], s[:, n - 3:])
    err = np.abs(estimate - _extrapolate(c[n - 4:n - 1], s[:, n - 4:n - 1]))
    return estimate, err, np.abs(s).max(axis=1)


def classify_steps(c: Sequence[float], phi: np.ndarray, resolution: float = RESOLUTION) -> np.ndarray:
    """``POSITIVE`` / ``NONPOSITIVE`` / ``UNRESOLVED`` per scaled step (module docstring)."""
    c = np.asarray(c, dtype=float)
    phi = np.atleast_2d(np.asarray(phi, dtype=float))
    if c.size < MIN_FACTORS or phi.shape[1] != c.size:
        raise ValueError(f"need >= {MIN_FACTORS} factors, one phi column each")
    finite = np.isfinite(phi).all(axis=1)
    out = np.full(phi.shape[0], UNRESOLVED)
    if not finite.any():
        return out
    with np.errstate(invalid="ignore", divide="ignore"):
        est, err, scale = phi_prime(c, phi[finite])
    floor = resolution * scale
    tau = np.maximum(err, floor)
    cls = np.where(est > tau, POSITIVE, np.where((est < -tau) | (err <= floor), NONPOSITIVE, UNRESOLVED))
    out[finite] = cls
    return out


@dataclass(frozen=True)
class DirectionCounts:
    """One seed, one direction: scaled steps logged, resolved and with φ′ > 0."""

    n_steps: int
    n_resolved: int
    n_positive: int

    @property
    def share(self) -> float:
        """n_positive / n_resolved (NaN without resolved steps)."""
        return self.n_positive / self.n_resolved if self.n_resolved else math.nan


@dataclass(frozen=True)
class SeedScaling:
    """One run's step scaling (module docstring); ``paired_actual``/``paired_random`` are the
    indicators 1[φ′ > 0] at the steps resolved in both directions, in step order."""

    run: str
    actual: DirectionCounts
    random: DirectionCounts | None
    counted: bool
    paired_actual: list[int]
    paired_random: list[int]
    slope: float
    n_slope_steps: int
    factors: list[float]
    c_rho: list[float | None]


def _slope(c: np.ndarray, rho: np.ndarray) -> float:
    ok = np.isfinite(rho) & (rho > 0)
    if ok.sum() < 3:
        return math.nan
    return float(np.polyfit(np.log(c[ok]), np.log(rho[ok]), 1)[0])


def _table(frame: pd.DataFrame, obj: str, direction: str, run: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(c, φ [steps, factors], ρ [steps, factors]) over the rows that scaled this step."""
    factors = scaling_factors(frame.columns, obj, direction)
    if len(factors) < MIN_FACTORS:
        raise NotMeasured(f"{run}: fewer than {MIN_FACTORS} factors in probe/scaling/{obj} ({direction})")
    cols = [numeric_column(frame, scaling_key(obj, f, "phi", direction), where=run) for f in factors]
    phi = np.stack(cols, 1)
    rho = np.stack([numeric_column(frame, scaling_key(obj, f, "ratio", direction), where=run) for f in factors], 1)
    flag = scaling_step_key(obj, "defined", direction)
    if flag in frame.columns:  # a scaled step logs ``defined``, even where every φ(c) is null
        logged = np.asarray(frame[flag].notna())
    else:
        logged = np.asarray(pd.concat([frame[scaling_key(obj, f, "phi", direction)] for f in factors], axis=1)
                            .notna().any(axis=1))
    return np.asarray(factors), phi[logged], rho[logged]


def seed_from_arrays(
    run: str, c: np.ndarray, phi: np.ndarray, rho: np.ndarray, phi_random: np.ndarray | None,
    *, min_steps: int = MIN_STEPS,
) -> SeedScaling:
    """``SeedScaling`` from φ [steps, factors], ρ and the random baseline's φ at the same steps (or None)."""
    cls = classify_steps(c, phi)
    actual = DirectionCounts(len(cls), int((cls != UNRESOLVED).sum()), int((cls == POSITIVE).sum()))
    random, pa, pr = None, [], []
    if phi_random is not None:
        cls_r = classify_steps(c, phi_random)
        random = DirectionCounts(len(cls_r), int((cls_r != UNRESOLVED).sum()), int((cls_r == POSITIVE).sum()))
        both = (cls != UNRESOLVED) & (cls_r != UNRESOLVED)
        pa, pr = (cls[both] == POSITIVE).astype(int).tolist(), (cls_r[both] == POSITIVE).astype(int).tolist()
    slopes = np.array([_slope(c, r) for r in rho[cls == POSITIVE]])
    slopes = slopes[np.isfinite(slopes)]
    with np.errstate(invalid="ignore"):
        c_rho = np.nanmedian(np.where(np.isfinite(rho), rho, np.nan) * c, axis=0) if len(rho) else rho
    return SeedScaling(
        run=run, actual=actual, random=random, counted=actual.n_resolved >= min_steps,
        paired_actual=pa, paired_random=pr,
        slope=float(np.median(slopes)) if slopes.size else math.nan, n_slope_steps=int(slopes.size),
        factors=c.tolist(), c_rho=[None if not math.isfinite(v) else float(v) for v in c_rho],
    )


def seed_scaling(frame: pd.DataFrame, obj: str, run: str = "run", *, min_steps: int = MIN_STEPS) -> SeedScaling:
    """The per-seed counts, pairs and descriptive slope; ``NotMeasured`` without scaled steps."""
    if not scaling_factors(frame.columns, obj):
        raise NotMeasured(f"{run}: no probe/scaling/{obj} keys (probe 'scaling' off)")
    c, phi, rho = _table(frame, obj, "actual", run)
    if not len(phi):
        raise NotMeasured(f"{run}: no scaled step in probe/scaling/{obj}")
    phi_r = None
    if scaling_factors(frame.columns, obj, "random"):
        cr, phi_r, _ = _table(frame, obj, "random", run)
        if len(phi_r) != len(phi) or not np.array_equal(cr, c):
            raise NotMeasured(f"{run}: the random baseline of probe/scaling/{obj} is not at the same steps and factors")
    return seed_from_arrays(run, c, phi, rho, phi_r, min_steps=min_steps)


def scaling_outcome(
    seeds: int, positive: int, unresolved: int, difference: Interval | None, *, min_seeds: int = MIN_SEEDS
) -> tuple[str, str]:
    """(outcome, reason code) from the counted seeds' totals and the actual − random interval."""
    if seeds < min_seeds:
        return "not testable", "few_seeds"
    if positive == 0:
        return ("holds", "resolved") if unresolved == 0 else ("not testable", "unresolved")
    if difference is None:
        return "not testable", "no_baseline"
    if difference.low > 0.0:
        return "fails systematically", "above_random"
    return "fails, generically", "not_above_random"


@dataclass(frozen=True)
class GroupScaling:
    """Assumption 5 over the seeds of one group: counts, shares, the difference, the outcome."""

    group: str
    trained: str
    seeds: list[SeedScaling]
    n_counted: int  # seeds with >= MIN_STEPS resolved scaled steps
    n_resolved: int  # over the counted seeds
    n_positive: int
    n_unresolved: int  # over every seed with scaled steps
    share_positive: Interval | None  # pooled share, seed-respecting Clopper–Pearson
    random_share: Interval | None
    difference: Interval | None  # actual − random, paired by seed and step
    slope: Interval | None  # descriptive: slope of log ρ(c) on log c
    outcome: str
    reason: str
    min_steps: int = MIN_STEPS




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
    runs: Sequence[tuple[str, pd.DataFrame]], obj: str, *, group: str = "", trained: str = "",
    level: float = 0.95, min_steps: int = MIN_STEPS,
) -> GroupScaling:
    """Per-seed counts, the shares and their difference over the counted seeds, the outcome;
    ``NotMeasured`` if no run has the keys."""
    if obj not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {obj!r}")
    seeds, reasons = [], []
    for name, frame in runs:
        try:
            seeds.append(seed_scaling(frame, obj, name, min_steps=min_steps))
        except NotMeasured as exc:
            reasons.append(str(exc))
    if not seeds:
        raise NotMeasured("; ".join(reasons) or f"no run for probe/scaling/{obj}")
    return group_from_seeds(seeds, group=group, trained=trained, level=level, min_steps=min_steps)


def group_from_seeds(
    seeds: Sequence[SeedScaling], *, group: str = "", trained: str = "", level: float = 0.95,
    min_steps: int = MIN_STEPS,
) -> GroupScaling:
    """The shares, their difference and the outcome over the counted seeds (module docstring)."""
    seeds = list(seeds)
    counted = [s for s in seeds if s.counted]
    share = cluster_share_interval([s.actual.n_positive for s in counted], [s.actual.n_resolved for s in counted],
                                   level)
    baseline = [s for s in counted if s.random is not None and s.paired_random]
    random = cluster_share_interval([s.random.n_positive for s in baseline],  # type: ignore[union-attr]
                                    [s.random.n_resolved for s in baseline], level)  # type: ignore[union-attr]
    difference = paired_difference_interval([s.paired_actual for s in baseline],
                                            [s.paired_random for s in baseline], level)
    positive = sum(s.actual.n_positive for s in counted)
    unresolved = sum(s.actual.n_steps - s.actual.n_resolved for s in seeds)  # a seed below MIN_STEPS included
    outcome, reason = scaling_outcome(len(counted), positive, unresolved, difference)
    slope = seed_interval([s.slope for s in seeds], level)
    return GroupScaling(group, trained, seeds, len(counted), sum(s.actual.n_resolved for s in counted), positive,
                        unresolved, share, random, difference, slope, outcome, reason, min_steps)
