"""Theorem 1 as a bound: the bound test on B_T, with β as a descriptive figure (docs/MATH.md).

Theorem 1 claims (1/T) Σ_{t<T} E‖∇R^t‖² ≤ C·log T/√T with an unknown C. A finite run cannot
refute such a bound by a fitted exponent, so the test is on the bound statistic:

* Ā_T = running mean of the per-step estimate (Ĝ_t = ``train/grad_sq_unbiased`` by default,
  unbiased for ‖∇R^t‖², possibly negative) over the observed steps t < T;
* B_T = Ā_T·√T / log(T+1). Under the theorem B_T stays bounded.
* Per seed: b = least-squares slope of log B_T on log T over the **last half** of the run
  (T > T_max/2), **on the points where Ā_T > 0** (where Ā_T ≤ 0 the bound holds
  trivially). A seed whose last half has fewer than ``MIN_POSITIVE_SHARE`` of its points
  (or fewer than ``MIN_POINTS``) with Ā_T > 0 has no b.
* Seed level: the t-interval of the mean b over seeds (``analyses.stats.seeds.seed_interval``).

Verdicts (exactly one of ``BOUND_VERDICTS``), each with its reason code (``BOUND_REASONS``):

* ``not testable`` — no seed (``no_seed``), horizon (the shortest seed's last T) below
  ``MIN_HORIZON`` (``short_horizon``), fewer than ``MIN_SEEDS`` seeds (``few_seeds``), or
  fewer than ``MIN_SEEDS`` seeds with a b (``few_fitted``: too few positive points);
* ``not consistent`` — b's seed-level interval lies above 0 (``growing``: B_T still grows);
* ``consistent`` — otherwise (``not_growing``).

Orientation: a true rate 1/√T gives b ≈ −1/log T, the bound exactly b ≈ 0, a noise floor
(the biased squared minibatch norm) b ≈ +½.

β (descriptive): per seed, the least-squares slope −β of log Ā_T on log T over
T ∈ [T_0, T_max], T_0 = ``default_t0``, where Ā_T > 0; then a seed-level interval.

Everything here is deterministic: no resampling, so re-analysing cannot change a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.io import RunDataError
from analyses.results import Interval, Result, decode, register
from analyses.stats.bootstrap import ols_slope
from analyses.stats.seeds import MIN_SEEDS, seed_interval
from analyses.theorem1.data import MIN_POINTS, series_from_table, with_noise_floor
from analyses.verdict import BOUND_REASONS, BoundFigures
from zerolock_theory.records import GRAD_NOISE_FLOOR, GRAD_NORM_SQ, GRAD_SQ_UNBIASED, GRADIENT

__all__ = [
    "BIASED_COLUMN",
    "BOUND_REASONS",
    "BOUND_VERDICTS",
    "GHAT_COLUMN",
    "FLOOR_COLUMN",
    "GLOBAL_COLUMN",
    "MIN_HORIZON",
    "BoundTest",
    "SeedFit",
    "bound_from_table",
    "bound_statistic",
    "bound_test",
    "default_t0",
    "running_average",
    "seed_fit",
    "seed_series",
    "series_from_table",
    "with_noise_floor",
]

GHAT_COLUMN = GRAD_SQ_UNBIASED
BIASED_COLUMN = GRAD_NORM_SQ
GLOBAL_COLUMN = GRADIENT.key(None, "global_sq")
FLOOR_COLUMN = GRAD_NOISE_FLOOR
"""Derived (``analyses.theorem1.data.with_noise_floor``): ‖g_t‖² − Ĝ_t, the bias of the squared minibatch norm. E‖g_t‖² =
‖∇R^t‖² + E‖g_t − ∇R^t‖² and E Ĝ_t = ‖∇R^t‖² (independent halves), so its mean is
E‖g_t − ∇R^t‖² (about tr Σ_t/B): the noise floor alone, the ‖∇R^t‖² part cancels."""
MIN_HORIZON = 500
"""Steps: below this horizon the bound test is ``not testable`` (docs/MATH.md asks for ~10³)."""
MIN_POSITIVE_SHARE = 0.5
CURVE_POINTS = 120
BOUND_VERDICTS = ("consistent", "not consistent", "not testable")
FIT_ON = "log B_T on log T over the last half (T > T_max/2), at the T where A_T > 0"


def running_average(values: np.ndarray) -> np.ndarray:
    """Ā at each observation: cumulative sum divided by the number of observations so far."""
    values = np.asarray(values, dtype=float)
    return np.cumsum(values, axis=-1) / np.arange(1, values.shape[-1] + 1)


def bound_statistic(t: np.ndarray, a: np.ndarray) -> np.ndarray:
    """B_T = Ā_T·√T / log(T+1)."""
    t = np.asarray(t, dtype=float)
    return np.asarray(a, dtype=float) * np.sqrt(t) / np.log(t + 1.0)


def default_t0(t_max: int) -> int:
    """T_0 = max(10, ⌈0.1·T_max⌉): the β fit drops the transient of the first tenth."""
    return max(10, math.ceil(0.1 * t_max))


@dataclass(frozen=True)
class SeedFit:
    """One seed's statistics: b (bound slope), β (descriptive), and its thinned B_T curve."""

    name: str
    horizon: int
    b: float  # NaN: too few positive points in the last half
    beta: float  # NaN: too few positive points in the β window
    n_fit: int
    n_positive: int
    curve_t: list[float]
    curve_b: list[float]


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(ols_slope(x, y)[0])


def _thin(t: np.ndarray, y: np.ndarray, n: int = CURVE_POINTS) -> tuple[list[float], list[float]]:
    if t.size > n:
        pos = np.unique(np.round(np.geomspace(1, t.size, n)).astype(int) - 1)
        t, y = t[pos], y[pos]
    return t.astype(float).tolist(), y.astype(float).tolist()


def seed_fit(t: np.ndarray, g: np.ndarray, name: str = "") -> SeedFit:
    """b and β of one series ``(T, G_T)`` (T = step + 1, sorted); see the module docstring."""
    t = np.asarray(t, dtype=float)
    a = running_average(g)
    b_t = bound_statistic(t, a)
    horizon = int(t[-1])
    last = t > horizon / 2.0
    pos = last & (a > 0)
    n_last, n_pos = int(last.sum()), int(pos.sum())
    b = float("nan")
    if n_pos >= max(MIN_POINTS, MIN_POSITIVE_SHARE * n_last):
        b = _slope(np.log(t[pos]), np.log(b_t[pos]))
    win = (t >= max(default_t0(horizon), 2)) & (a > 0)
    beta = -_slope(np.log(t[win]), np.log(a[win])) if win.sum() >= MIN_POINTS else float("nan")
    curve_t, curve_b = _thin(t, b_t)
    return SeedFit(name, horizon, b, float(beta), n_last, n_pos, curve_t, curve_b)


@register
@dataclass(frozen=True)
class BoundTest(Result):
    """Theorem 1's bound test on one group of runs (one series per seed)."""

    kind = "bound_test"
    label: str
    column: str
    verdict: str
    reason: str  # why the verdict, one of BOUND_REASONS (``analyses.text.bound_reason`` states it)
    horizon: int
    min_horizon: int
    seeds: int
    slope: Interval | None
    beta: Interval | None
    fit_on: str
    per_seed: list[SeedFit]
    excluded: list[str]
    level: float = 0.95

    def __post_init__(self) -> None:
        if self.verdict not in BOUND_VERDICTS:
            raise ValueError(f"bound verdict must be one of {BOUND_VERDICTS}, got {self.verdict!r}")
        if self.reason not in BOUND_REASONS:
            raise ValueError(f"bound reason must be one of {BOUND_REASONS}, got {self.reason!r}")

    @classmethod
    def from_dict(cls, data: dict) -> BoundTest:
        """Inverse of ``to_dict``. A test saved when ``reason`` was a sentence gets its code from
        the same rule (``_verdict``) on its saved seeds; the verdict is the saved one."""
        if data.get("kind") == cls.kind and data.get("reason", BOUND_REASONS[0]) not in BOUND_REASONS:
            fits = decode(list[SeedFit], data["per_seed"])
            slope = decode(Interval | None, data["slope"])
            data = {**data, "reason": _verdict(fits, slope, data["horizon"], data["min_horizon"])[1]}
        return super().from_dict(data)

    @property
    def fitted(self) -> int:
        """Seeds with a slope b (enough points where Ā_T > 0 in the last half)."""
        return sum(math.isfinite(f.b) for f in self.per_seed)

    def figures(self) -> BoundFigures:
        """The figures a verdict row and the report state (``analyses.verdict.BoundFigures``)."""
        return BoundFigures(self.label, self.verdict, self.reason, self.slope, self.beta, self.seeds, self.horizon,
                            self.min_horizon, self.fitted, len(self.excluded))

    def to_cli(self) -> dict:
        """The data of ``zerolock analyze rate --json``: beta, bound {verdict, slope, horizon, seeds}."""
        def iv(x: Interval | None) -> dict | None:
            return None if x is None else {"estimate": x.estimate, "low": x.low, "high": x.high, "level": x.level}
        return {
            "label": self.label,
            "column": self.column,
            "beta": iv(self.beta),
            "bound": {"verdict": self.verdict, "slope": iv(self.slope), "horizon": self.horizon,
                      "seeds": self.seeds, "min_horizon": self.min_horizon, "fit_on": self.fit_on},
            "per_seed": [{"name": s.name, "b": _finite(s.b), "beta": _finite(s.beta), "horizon": s.horizon}
                         for s in self.per_seed],
            "excluded": self.excluded,
        }


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _verdict(fits: list[SeedFit], slope: Interval | None, horizon: int, min_horizon: int) -> tuple[str, str]:
    """The verdict and its reason code (``BOUND_REASONS``)."""
    if not fits:
        return "not testable", "no_seed"
    if horizon < min_horizon:
        return "not testable", "short_horizon"
    if len(fits) < MIN_SEEDS:
        return "not testable", "few_seeds"
    if slope is None:
        return "not testable", "few_fitted"
    if slope.low > 0:
        return "not consistent", "growing"
    return "consistent", "not_growing"


def bound_test(
    series: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    names: Sequence[str] | None = None,
    label: str = "",
    column: str = GHAT_COLUMN,
    level: float = 0.95,
    min_horizon: int = MIN_HORIZON,
    excluded: Sequence[str] = (),
) -> BoundTest:
    """The bound test over seeds: one ``(T, G_T)`` per seed (diverged runs already removed).

    Guarantees: verdict in ``BOUND_VERDICTS``; ``slope`` is ``seed_interval`` of the finite
    per-seed b (``None`` with fewer than ``MIN_SEEDS``); deterministic.
    """
    names = list(names) if names is not None else [f"seed {i}" for i in range(len(series))]
    fits = [seed_fit(t, g, n) for (t, g), n in zip(series, names, strict=True)]
    horizon = min((f.horizon for f in fits), default=0)
    slope = seed_interval([f.b for f in fits], level)
    beta = seed_interval([f.beta for f in fits], level)
    verdict, reason = _verdict(fits, slope, horizon, min_horizon)
    return BoundTest(label=label, column=column, verdict=verdict, reason=reason, horizon=horizon,
                     min_horizon=min_horizon, seeds=len(fits), slope=slope, beta=beta, fit_on=FIT_ON,
                     per_seed=fits, excluded=list(excluded), level=level)


def seed_series(frame: pd.DataFrame, column: str, step_column: str = "step", seed_column: str | None = None,
                where: str = "table") -> tuple[list[tuple[np.ndarray, np.ndarray]], list[str]]:
    """``([(T, value), ...], names)`` of ``column``: one series, or one per value of ``seed_column``."""
    if seed_column is None:
        t, g, _ = series_from_table(frame, column, step_column, where=where)
        return [(t, g)], [where]
    if seed_column not in frame.columns:
        raise RunDataError(f"{where}: missing seed column {seed_column!r}")
    series, names = [], []
    for value, part in frame.groupby(seed_column, sort=True, dropna=True):
        name = f"{seed_column}={value}"
        series.append(series_from_table(part, column, step_column, where=f"{where} ({name})")[:2])
        names.append(name)
    if not series:
        raise RunDataError(f"{where}: seed column {seed_column!r} has no values")
    return series, names


def bound_from_table(
    frame: pd.DataFrame,
    column: str,
    step_column: str = "step",
    seed_column: str | None = None,
    *,
    where: str = "table",
    **kwargs,
) -> BoundTest:
    """The bound test on any table: one series, or one per value of ``seed_column``."""
    kwargs.setdefault("label", column)
    series, names = seed_series(frame, column, step_column, seed_column, where)
    return bound_test(series, names=names, column=column, **kwargs)
