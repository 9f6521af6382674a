"""Theorem 1 (b), descriptive: how the positive drift D⁺_T grows over the run (docs/THEOREM1.md).

This describes a trend over time; it does not identify the drift's order in the step size: a
second-order drift whose size warms up, or zero-mean first-order noise under a second-order
mean, makes D⁺_T outgrow Σ η_t² too. The order is decided at fixed iterates
(``analyses.assumption5.drift_order``); this module's outcome is shown beside it.

The proof telescopes the surrogate: R^T(ω^T) − R^0(ω^0) = Σ_t descent_t + Σ_t drift_t, and it
needs the positive part of the drift, D⁺_T = Σ_{t<T} max(drift_t, 0), to grow no faster than
S2(T) = Σ_{t<T} η_t² (about log T for η_t ∝ 1/√t). A first-order drift grows like
S1(T) = Σ_{t<T} η_t (about √T) and leaves the bound without decay.

Per seed, from a table of ``step``, η_t, drift_t (and optionally descent_t), T = step + 1,
sums over the observed (probed) steps in order:

* s = least-squares slope of log(D⁺_T / S2(T)) on log T over T ≥ T_b, the burn-in
  T_b = max(``BURN_IN_MIN``, ⌈``BURN_IN_SHARE``·T_max⌉), at the T where D⁺_T > 0. The fit runs
  over the whole run after the burn-in, not the last half (there η_t changes by √2 only);
* s₁ = the same slope for S1/S2: the value of a purely first-order drift on this schedule
  (½ − 1/log T roughly); a second-order drift gives s ≈ 0;
* share = Σ drift⁺_t / Σ |descent_t|: the part of the optimisation's progress the drift
  takes back; signed = Σ drift_t (cancellation can hide a failed step).

Seed level: t-intervals over seeds (``analyses.stats.seeds.seed_interval``). Outcome
(``DRIFT_OUTCOMES``) from the interval [s_lo, s_hi] of s and the threshold τ =
``S_THRESHOLD``:

* ``not testable`` — no seed, horizon below ``MIN_HORIZON``, fewer than ``MIN_SEEDS`` seeds
  with an s, or s_lo ≤ τ ≤ s_hi;
* ``outgrows`` — s_lo > τ: D⁺_T outgrows Σ η_t² over this run (as a first-order drift does,
  and an intermediate rate η_t^p, 1 < p < 2, and a warming-up second-order drift);
* ``within`` — s_hi < τ, or no seed has a positive drift (D⁺_T = 0).

Deterministic: nothing is resampled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.io import RunDataError
from analyses.results import Interval, Result, register
from analyses.stats.bootstrap import ols_slope
from analyses.stats.seeds import finite_mean, finite_or_none, interval_dict, seed_interval
from analyses.theorem1.data import drift_run

__all__ = [
    "BURN_IN_MIN",
    "BURN_IN_SHARE",
    "DRIFT_OUTCOMES",
    "DRIFT_REASONS",
    "DRIFT_SENTENCES",
    "MIN_HORIZON",
    "S_THRESHOLD",
    "DriftBudget",
    "SeedDrift",
    "burn_in",
    "drift_arrays",
    "drift_budget",
    "drift_from_table",
    "seed_drift",
]

DRIFT_OUTCOMES = ("outgrows", "within", "not testable")
DRIFT_SENTENCES = {
    "outgrows": "D⁺_T outgrows Σ η_t² over this run (a trend over time, not the drift's order in the step)",
    "within": "D⁺_T grows no faster than Σ η_t² over this run (a trend over time, not the drift's order in the step)",
    "not testable": "not testable on this run",
}
DRIFT_REASONS = ("no_seed", "short_horizon", "few_seeds", "ambiguous", "outgrows", "bounded", "no_positive_drift")
BURN_IN_SHARE = 0.1
"""The slope s is fitted on T ≥ max(BURN_IN_MIN, ⌈BURN_IN_SHARE·T_max⌉)."""
BURN_IN_MIN = 10
S_THRESHOLD = 0.1
"""τ: s above it (interval) reads ``outgrows``, below it (interval) ``within``."""
MIN_HORIZON = 200
"""Steps: below this horizon the outcome is ``not testable`` (reason ``short_horizon``)."""
MIN_FIT_POINTS = 10


def burn_in(t_max: int) -> int:
    """T_b = max(BURN_IN_MIN, ⌈BURN_IN_SHARE·T_max⌉)."""
    return max(BURN_IN_MIN, math.ceil(BURN_IN_SHARE * t_max))


@dataclass(frozen=True)
class SeedDrift:
    """One seed: the slope s, its first-order reference s₁, D⁺_T, S1, S2, shares and sums at T_max."""

    name: str
    horizon: int
    s: float  # NaN: fewer than MIN_FIT_POINTS points with D⁺_T > 0 after the burn-in
    s_first: float
    d_plus: float
    s1: float
    s2: float
    signed: float
    share: float  # NaN without a descent column, or Σ|descent| = 0
    n_fit: int


def seed_drift(step: np.ndarray, lr: np.ndarray, drift: np.ndarray, descent: np.ndarray | None = None,
               name: str = "") -> SeedDrift:
    """The per-seed figures (module docstring); ``step`` sorted, all arrays finite."""
    t = np.asarray(step, dtype=float) + 1.0
    lr, drift = np.asarray(lr, dtype=float), np.asarray(drift, dtype=float)
    d_plus, s1, s2 = np.cumsum(np.clip(drift, 0.0, None)), np.cumsum(lr), np.cumsum(lr * lr)
    fit = (t >= burn_in(int(t[-1]))) & (d_plus > 0) & (s2 > 0)
    s = s_first = math.nan
    if fit.sum() >= MIN_FIT_POINTS:
        x = np.log(t[fit])
        s = float(ols_slope(x, np.log(d_plus[fit] / s2[fit]))[0])
        s_first = float(ols_slope(x, np.log(s1[fit] / s2[fit]))[0])
    share = math.nan
    if descent is not None:
        total = float(np.abs(descent).sum())
        share = float(d_plus[-1] / total) if total > 0 else math.nan
    return SeedDrift(name, int(t[-1]), s, s_first, float(d_plus[-1]), float(s1[-1]), float(s2[-1]),
                     float(drift.sum()), share, int(fit.sum()))


@register
@dataclass(frozen=True)
class DriftBudget(Result):
    """Theorem 1 (b) on one group of runs (one table per seed)."""

    kind = "drift_budget"
    label: str
    outcome: str
    reason: str
    horizon: int
    seeds: int
    first_order: Interval | None  # the seed interval of s
    s_point: float
    s_first: float  # mean first-order reference s₁
    threshold: float
    share: Interval | None
    signed: Interval | None
    per_seed: list[SeedDrift]
    level: float = 0.95

    def __post_init__(self) -> None:
        if self.outcome not in DRIFT_OUTCOMES:
            raise ValueError(f"drift outcome must be one of {DRIFT_OUTCOMES}, got {self.outcome!r}")
        if self.reason not in DRIFT_REASONS:
            raise ValueError(f"drift reason must be one of {DRIFT_REASONS}, got {self.reason!r}")

    @property
    def sentence(self) -> str:
        """The report's words for the outcome."""
        return DRIFT_SENTENCES[self.outcome]

    def to_cli(self) -> dict:
        """``drift: {outcome, sentence, reason, first_order, share, signed, horizon, seeds, ...}``."""
        def iv(x: Interval | None, point: float = math.nan) -> dict:
            return interval_dict(x, point, self.level)
        return {
            "outcome": self.outcome, "sentence": self.sentence, "reason": self.reason,
            "first_order": iv(self.first_order, self.s_point), "s_first_order_reference": finite_or_none(self.s_first),
            "threshold": self.threshold, "share": iv(self.share, finite_mean([s.share for s in self.per_seed])),
            "signed": iv(self.signed, finite_mean([s.signed for s in self.per_seed])),
            "horizon": self.horizon, "seeds": self.seeds, "burn_in": burn_in(self.horizon),
            "per_seed": [{"name": s.name, "s": finite_or_none(s.s), "d_plus": s.d_plus, "s1": s.s1, "s2": s.s2,
                          "signed": s.signed, "share": finite_or_none(s.share)} for s in self.per_seed],
        }


def _outcome(fits: list[SeedDrift], s: Interval | None, horizon: int, min_horizon: int,
             threshold: float) -> tuple[str, str]:
    if not fits:
        return "not testable", "no_seed"
    if horizon < min_horizon:
        return "not testable", "short_horizon"
    if all(f.d_plus == 0 for f in fits):
        return "within", "no_positive_drift"
    if s is None:
        return "not testable", "few_seeds"
    if s.low > threshold:
        return "outgrows", "outgrows"
    if s.high < threshold:
        return "within", "bounded"
    return "not testable", "ambiguous"


def drift_budget(
    seeds: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]],
    *,
    names: Sequence[str] | None = None,
    label: str = "",
    level: float = 0.95,
    min_horizon: int = MIN_HORIZON,
    threshold: float = S_THRESHOLD,
) -> DriftBudget:
    """Theorem 1 (b) over seeds: one ``(step, η, drift, descent or None)`` per seed.

    Guarantees: ``outcome`` in ``DRIFT_OUTCOMES``; ``first_order`` is ``seed_interval`` of the
    finite per-seed s (``None`` below ``MIN_SEEDS``, the mean kept in ``s_point``); deterministic."""
    names = list(names) if names is not None else [f"seed {i}" for i in range(len(seeds))]
    fits = [seed_drift(*arrays, name=n) for arrays, n in zip(seeds, names, strict=True)]
    horizon = min((f.horizon for f in fits), default=0)
    s = seed_interval([f.s for f in fits], level)
    outcome, reason = _outcome(fits, s, horizon, min_horizon, threshold)
    return DriftBudget(
        label=label, outcome=outcome, reason=reason, horizon=horizon, seeds=len(fits), first_order=s,
        s_point=finite_mean([f.s for f in fits]), s_first=finite_mean([f.s_first for f in fits]), threshold=threshold,
        share=seed_interval([f.share for f in fits], level), signed=seed_interval([f.signed for f in fits], level),
        per_seed=fits, level=level)


def drift_arrays(frame: pd.DataFrame, columns: dict[str, str | None], step_column: str, where: str):
    """``(step, η, drift, descent or None)`` of one run's table, sorted by step, from ``columns``
    (keys ``drift``, ``lr``, ``descent``; ``analyses.theorem1.data.drift_run``); ``RunDataError``
    naming the column at fault."""
    return drift_run(frame, columns, step_column, where).arrays()


def drift_from_table(
    frame: pd.DataFrame,
    column: str,
    lr_column: str,
    step_column: str = "step",
    seed_column: str | None = None,
    descent_column: str | None = None,
    *,
    where: str = "table",
    **kwargs,
) -> DriftBudget:
    """``drift_budget`` on any table: one series, or one per value of ``seed_column``."""
    kwargs.setdefault("label", column)
    columns = {"drift": column, "lr": lr_column, "descent": descent_column}
    if seed_column is None:
        return drift_budget([drift_arrays(frame, columns, step_column, where)], names=[where], **kwargs)
    if seed_column not in frame.columns:
        raise RunDataError(f"{where}: missing seed column {seed_column!r}")
    parts, names = [], []
    for value, part in frame.groupby(seed_column, sort=True, dropna=True):
        name = f"{seed_column}={value}"
        parts.append(drift_arrays(part, columns, step_column, f"{where} ({name})"))
        names.append(name)
    if not parts:
        raise RunDataError(f"{where}: seed column {seed_column!r} has no values")
    return drift_budget(parts, names=names, **kwargs)
