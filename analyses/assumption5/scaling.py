"""Assumption 5 decided by the share of scaled steps with φ′ > 0 (docs/MATH.md, "Assumption 5").

Question: is the stability ratio ρ_t = max(φ_t, 0)/q_t bounded uniformly in the step size,
as Assumption 5 (sup_t ρ_t ≤ C_fo(α) < ∞) requires? Along η_t → 0, φ(c) = c·φ′ + O(c²) and
q(c) = c²·q″ + O(c³), so any scaled step with φ′ > 0 gives ρ(c) ~ 1/c: unbounded.

Reads the ``scaling`` probe (``zerolock_theory.records.SCALING``): φ(c) at
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

**Per seed**: resolved and positive counts for each direction (the update, a random u_t and,
where recorded, the antithetic −u_t), the paired indicator differences 1[actual positive] −
1[random positive] at the steps resolved in both, and ρ_t = ρ(c = 1) along the run
(``analyses.assumption5.along_run``). A seed counts when it has ≥ ``MIN_STEPS`` resolved actual scaled steps.

**Three statements over the counted seeds** (docs/ASSUMPTION5_PROPOSITION1.md):

* **along the run** (the paper's statement, the row's outcome ``OUTCOMES``): the trend γ of
  ρ_t on log(t+1) with a seed interval, ``analyses.assumption5.along_run``: ``grows``, ``no growth``,
  ``not testable``;
* **uniform in the step size at fixed iterates** (a stronger formalisation): it fails at every
  scaled step with φ′ > 0 (ρ(c) ~ 1/c); ``UNIFORM_OUTCOMES``: ``holds`` (no positive step,
  every step of the counted seeds resolved), ``fails at some scaled steps``, ``not testable``
  (fewer than ``MIN_SEEDS`` counted seeds; or no positive step but some unresolved);
* **more often than chance?** φ′(−u) = −φ′(u), so a random direction's share is ½ exactly:
  the pooled share of φ′ > 0 among the steps with a sign (zero limits left out; seed-respecting
  Clopper–Pearson, ``analyses.stats.shares``) against ½, ``CHANCE_OUTCOMES``. ``share_positive``
  is that same share (the one shown is the one tested), ``n_zero`` the resolved steps left out; ``chance_p`` is its two-sided p (the same interval's duality).
  The antithetic pairs check the classifier: at steps where both ±u resolve non-zero,
  exactly one must be positive (``antithetic_pairs``, ``antithetic_one_positive``).

The random direction's share and the paired difference (actual − random) are kept beside,
descriptively. The slope of log ρ(c) on log c (median per seed over the positive steps,
t-interval over seeds) is a smoothness check: −1 whenever φ′ > 0. It decides nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analyses.assumption5.along_run import AlongRun, SeedAlong, along_run, seed_along_of
from analyses.assumption5.data import ScalingRun, scaling_run
from analyses.assumption5.drift_order import DriftOrder, drift_order, seed_order_of
from analyses.assumption5.drift_sum import DriftSum, drift_sum, seed_drift_sum_of
from analyses.assumption5.step_limits import (
    MIN_FACTORS,
    MIN_STEPS,
    RESOLUTION,
    phi_prime,
    scaling_table,
    step_signs,
    table_of,
)
from analyses.results import Interval, NotMeasured, Result, declare, register
from analyses.stats.seeds import MIN_SEEDS, seed_interval
from analyses.stats.shares import (
    cluster_share_interval,
    cluster_share_p,
    paired_difference_interval,
)
from zerolock_theory.vocab import OBJECTIVES

__all__ = ["CHANCE_OUTCOMES", "MIN_FACTORS", "MIN_STEPS", "OUTCOMES", "RESOLUTION", "UNIFORM_OUTCOMES",
           "DirectionCounts", "GroupScaling", "SeedScaling", "StepScaling", "chance_outcome",
           "classify_steps", "group_from_seeds", "group_scaling", "group_scaling_of", "phi_prime", "scaling_outcome",
           "scaling_table", "seed_from_arrays", "seed_scaling", "seed_scaling_of", "step_signs"]

OUTCOMES: tuple[str, ...] = ("grows", "no growth", "not testable")
"""The row's outcome: ρ_t along the run (``analyses.assumption5.along_run``)."""
UNIFORM_OUTCOMES: tuple[str, ...] = ("holds", "fails at some scaled steps", "not testable")
CHANCE_OUTCOMES: tuple[str, ...] = ("more often than chance", "less often than chance",
                                    "not distinguished from chance", "not testable")
REASONS: tuple[str, ...] = ("resolved", "few_seeds", "unresolved", "positive")
POSITIVE, NONPOSITIVE, UNRESOLVED = 1, 0, -1
# legacy words of analyses/registry.py and reports/findings.py until they read ``outcome``


def classify_steps(c: Sequence[float], phi: np.ndarray, resolution: float = RESOLUTION) -> np.ndarray:
    """``POSITIVE`` / ``NONPOSITIVE`` / ``UNRESOLVED`` per scaled step (module docstring)."""
    return _classes(step_signs(c, phi, resolution))


def _classes(signs: np.ndarray) -> np.ndarray:
    """``step_signs``' +1 / −1 / 0 / NaN as ``POSITIVE`` / ``NONPOSITIVE`` / ``UNRESOLVED``."""
    return np.where(np.isnan(signs), UNRESOLVED, np.where(signs > 0, POSITIVE, NONPOSITIVE))


@dataclass(frozen=True)
class DirectionCounts:
    """One seed, one direction: scaled steps logged, resolved, with φ′ > 0, and with φ′ zero at the
    design's resolution (resolved, neither sign)."""

    n_steps: int
    n_resolved: int
    n_positive: int
    n_zero: int = 0

    @property
    def n_signed(self) -> int:
        """Resolved steps with a non-zero φ′: what the share against ½ counts over."""
        return self.n_resolved - self.n_zero

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
    antithetic: DirectionCounts | None = None
    antithetic_pairs: int = 0  # steps where both ±u resolve non-zero
    antithetic_one_positive: int = 0  # of those, pairs with exactly one positive


def _slope(c: np.ndarray, rho: np.ndarray) -> float:
    ok = np.isfinite(rho) & (rho > 0)
    if ok.sum() < 3:
        return math.nan
    return float(np.polyfit(np.log(c[ok]), np.log(rho[ok]), 1)[0])


def _counts(signs: np.ndarray) -> DirectionCounts:
    resolved = np.isfinite(signs)
    return DirectionCounts(len(signs), int(resolved.sum()), int((signs[resolved] > 0).sum()),
                           int((signs[resolved] == 0).sum()))


def seed_from_arrays(
    run: str, c: np.ndarray, phi: np.ndarray, rho: np.ndarray, phi_random: np.ndarray | None,
    *, min_steps: int = MIN_STEPS, phi_antithetic: np.ndarray | None = None,
) -> SeedScaling:
    """``SeedScaling`` from φ [steps, factors], ρ and the random and antithetic directions' φ at the
    same steps (or None)."""
    signs = step_signs(c, phi)
    cls = _classes(signs)
    plus = None if phi_random is None else step_signs(c, phi_random)
    anti, pairs, one = None, 0, 0
    if plus is not None and phi_antithetic is not None:
        minus = step_signs(c, phi_antithetic)
        anti = _counts(minus)
        both = np.isfinite(plus) & np.isfinite(minus) & (plus != 0) & (minus != 0)
        pairs, one = int(both.sum()), int(((plus[both] > 0) != (minus[both] > 0)).sum())
    actual = _counts(signs)
    random, pa, pr = None, [], []
    if plus is not None:
        cls_r = _classes(plus)
        random = _counts(plus)
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
        antithetic=anti, antithetic_pairs=pairs, antithetic_one_positive=one,
    )


def seed_scaling_of(data: ScalingRun, *, min_steps: int = MIN_STEPS) -> SeedScaling:
    """The per-seed counts, pairs and descriptive slope of a run's ``scaling`` probe
    (``analyses.assumption5.data.scaling_run``); ``NotMeasured`` without scaled steps."""
    run, obj = data.run, data.objective
    if not data.actual.factors.size:
        raise NotMeasured(f"{run}: no probe/scaling/{obj} keys (probe 'scaling' off)")
    c, phi, rho = table_of(data.actual, obj, run)
    if not len(phi):
        raise NotMeasured(f"{run}: no scaled step in probe/scaling/{obj}")
    other: dict[str, np.ndarray | None] = {}
    for scaled in (data.random, data.antithetic):
        direction = scaled.direction
        other[direction] = None
        if scaled.factors.size:
            cr, other[direction], _ = table_of(scaled, obj, run)
            if len(other[direction]) != len(phi) or not np.array_equal(cr, c):
                raise NotMeasured(f"{run}: the {direction} direction of probe/scaling/{obj} is not at the same "
                                  "steps and factors")
    return seed_from_arrays(run, c, phi, rho, other["random"], min_steps=min_steps,
                            phi_antithetic=other["antithetic"])


def seed_scaling(frame: pd.DataFrame, obj: str, run: str = "run", *, min_steps: int = MIN_STEPS) -> SeedScaling:
    """``seed_scaling_of`` a run's metrics."""
    return seed_scaling_of(scaling_run(frame, obj, run), min_steps=min_steps)


def scaling_outcome(seeds: int, positive: int, unresolved: int, *, min_seeds: int = MIN_SEEDS) -> tuple[str, str]:
    """The uniform-in-step statement: (outcome, reason code) from the counted seeds' totals."""
    if seeds < min_seeds:
        return "not testable", "few_seeds"
    if positive == 0:
        return ("holds", "resolved") if unresolved == 0 else ("not testable", "unresolved")
    return "fails at some scaled steps", "positive"


def chance_outcome(share: Interval | None) -> str:
    """``CHANCE_OUTCOMES`` from the share's interval against ½."""
    if share is None:
        return "not testable"
    if share.low > 0.5:
        return "more often than chance"
    if share.high < 0.5:
        return "less often than chance"
    return "not distinguished from chance"


@dataclass(frozen=True)
class GroupScaling:
    """Assumption 5 over the seeds of one group: the three statements (module docstring).

    ``outcome``/``reason`` are the row's: ρ_t along the run (``along``). ``uniform`` is the
    uniform-in-step statement, ``chance`` the share against ½ with ``chance_p``."""

    group: str
    trained: str
    seeds: list[SeedScaling]
    n_counted: int  # seeds with >= MIN_STEPS resolved scaled steps
    n_resolved: int  # over the counted seeds
    n_positive: int
    n_unresolved: int  # over every seed with scaled steps
    share_positive: Interval | None  # pooled share among the steps with a non-zero φ′ (the one tested against ½)
    random_share: Interval | None  # descriptive: ½ by symmetry
    difference: Interval | None  # descriptive: actual − random, paired by seed and step
    slope: Interval | None  # descriptive: slope of log ρ(c) on log c
    outcome: str
    reason: str
    min_steps: int = MIN_STEPS
    along: AlongRun | None = None
    uniform: str = "not testable"
    uniform_reason: str = "few_seeds"
    chance: str = "not testable"
    chance_p: float | None = None
    antithetic_pairs: int = 0
    antithetic_one_positive: int = 0
    order: DriftOrder | None = None  # the drift's order over the same runs (Theorem 1 (b))
    drift_sum: DriftSum | None = None  # Σ drift at the step taken against Σ η_t² along the run (Theorem 1 (b))
    n_zero: int = 0  # resolved steps of the counted seeds with φ′ zero at the resolution (left out of the share)

    @property
    def p_value(self) -> float | None:
        """The row's p (γ = 0 along the run), for the table's Holm correction."""
        return None if self.along is None else self.along.p_value


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


SCALING = {o: declare(f"scaling_{o}", StepScaling, builtin=True) for o in OBJECTIVES}
"""The step-scaling analysis of each objective's runs."""


def group_scaling_of(
    runs: Sequence[ScalingRun], obj: str, *, group: str = "", trained: str = "",
    level: float = 0.95, min_steps: int = MIN_STEPS,
) -> GroupScaling:
    """Per-seed counts and trends over runs read for ``obj`` (``analyses.assumption5.data.scaling_run``),
    then ``group_from_seeds``; ``NotMeasured`` if no run has the keys."""
    if obj not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {obj!r}")

    seeds, along, orders, sums, reasons = [], [], [], [], []
    for data in runs:
        try:
            seeds.append(seed_scaling_of(data, min_steps=min_steps))
        except NotMeasured as exc:
            reasons.append(str(exc))
            continue
        orders.append(seed_order_of(data))
        sums.append(seed_drift_sum_of(data))
        try:
            along.append(seed_along_of(data, min_steps=min_steps))
        except NotMeasured as exc:
            reasons.append(str(exc))
    if not seeds:
        raise NotMeasured("; ".join(reasons) or f"no run for probe/scaling/{obj}")
    found = group_from_seeds(seeds, group=group, trained=trained, level=level, min_steps=min_steps, along=along)
    return replace(found, order=drift_order(orders, level, min_steps=min_steps),
                   drift_sum=drift_sum(sums, level, min_steps=min_steps))


def group_scaling(
    runs: Sequence[tuple[str, pd.DataFrame]], obj: str, *, group: str = "", trained: str = "",
    level: float = 0.95, min_steps: int = MIN_STEPS,
) -> GroupScaling:
    """``group_scaling_of`` ``(name, metrics frame)`` pairs."""
    if obj not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {obj!r}")
    return group_scaling_of([scaling_run(frame, obj, name) for name, frame in runs], obj, group=group,
                            trained=trained, level=level, min_steps=min_steps)


def group_from_seeds(
    seeds: Sequence[SeedScaling], *, group: str = "", trained: str = "", level: float = 0.95,
    min_steps: int = MIN_STEPS, along: Sequence[SeedAlong] = (),
) -> GroupScaling:
    """The three statements over the counted seeds (module docstring)."""
    seeds = list(seeds)
    counted = [s for s in seeds if s.counted]
    x, n = [s.actual.n_positive for s in counted], [s.actual.n_resolved for s in counted]
    signed = [s.actual.n_signed for s in counted]  # the steps with a sign (zero limits left out)
    share = cluster_share_interval(x, signed, level)  # the share shown is the share tested against ½
    baseline = [s for s in counted if s.random is not None and s.paired_random]
    random = cluster_share_interval([s.random.n_positive for s in baseline],  # type: ignore[union-attr]
                                    [s.random.n_resolved for s in baseline], level)  # type: ignore[union-attr]
    difference = paired_difference_interval([s.paired_actual for s in baseline],
                                            [s.paired_random for s in baseline], level)
    positive = sum(x)
    unresolved = sum(s.actual.n_steps - s.actual.n_resolved for s in seeds)  # a seed below MIN_STEPS included
    uniform, uniform_reason = scaling_outcome(len(counted), positive, unresolved)
    trend = along_run(along, level) if along else None
    outcome, reason = ("not testable", "no_along") if trend is None else (trend.outcome, trend.reason)
    if outcome == "grows" and uniform == "holds":  # growth without a first-order term: a warm-up, not 1/η_t
        reason = "grows_second_order"
    slope = seed_interval([s.slope for s in seeds], level)
    return GroupScaling(
        group, trained, seeds, len(counted), sum(n), positive, unresolved, share, random, difference, slope,
        outcome, reason, min_steps, along=trend, uniform=uniform, uniform_reason=uniform_reason,
        chance=chance_outcome(share), chance_p=cluster_share_p(x, signed, level=level),
        n_zero=sum(s.actual.n_zero for s in counted),
        antithetic_pairs=sum(s.antithetic_pairs for s in seeds),
        antithetic_one_positive=sum(s.antithetic_one_positive for s in seeds),
    )
