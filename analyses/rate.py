"""Theorem 1 (a): the rate of Ā_T described at this horizon (docs/THEOREM1.md).

Theorem 1 bounds (1/T) Σ_{t<T} E‖∇R^t‖² by C·log T/√T with an unknown C. A finite run can
describe the rate it shows; it cannot refute the bound. Per seed, from the per-step
estimate Ĝ_t (unbiased for the squared gradient norm, possibly negative), with T = step + 1
and Ā_T its running mean over the observed steps:

* the fit window is the last ``window`` of the horizon, T > (1 − window)·T_max
  (``WINDOWS``: ½ by default, ⅓ for the sensitivity check);
* β (the rule's exponent): Ā_T ≈ c·T^−β + K/T on the window. The K/T term absorbs the run's
  history before the window (a warm-up, a transient), so β is the exponent of the level of
  Ĝ_t in the window: the profile least-squares fit of Ĝ_t = c·T^−β (c > 0) on the window's
  steps, β on the grid ``BETA_GRID`` refined by a parabola;
* b = β_B − β, where β_B is the same fit on the exact bound's mean level
  (Ā_T = log(T+1)/√T) at the same steps: the slope of log B_T, B_T = Ā_T·√T/log(T+1),
  relative to the bound's own curve (b = 0 on the bound, < 0 faster, > 0 slower);
* descriptive, as plotted: β_run = −(slope of log Ā_T on log T) and b_run = slope of log B_T
  on log T over the window, where Ā_T > 0. They lag: a transient before the window bends
  them (a plateau reached after a transient has β_run > 0).

Seed level: t-intervals over seeds (``analyses.seeds.seed_interval``) of β and b. Outcome
(``RATE_OUTCOMES``), from the intervals [β_lo, β_hi] and [b_lo, b_hi]:

* ``not testable`` — fewer than ``MIN_SEEDS`` seeds with a β (a single series: point
  estimates only), horizon below ``MIN_HORIZON``, or β_lo ≤ 0 and b_lo ≤ 0 (the interval
  holds both "no decay" and the bound's rate);
* ``no decay`` — β_lo ≤ 0 < b_lo: no significant decay, significantly slower than the bound;
* ``slower than the bound`` — β_lo > 0 and b_lo > 0;
* ``at least the bound's rate`` — β_lo > 0 and b_lo ≤ 0.

Under a plateau (β = 0) "at least"/"slower" need β_lo > 0: at most (1 − level)/2; on the
bound's curve (b = 0) "no decay"/"slower" need b_lo > 0: at most (1 − level)/2. Deterministic.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.bootstrap import ols_slope
from analyses.convergence import bound_statistic, running_average, seed_series
from analyses.results import Interval, Result, register
from analyses.seeds import finite_mean, finite_or_none, interval_dict, seed_interval

__all__ = [
    "BETA_GRID",
    "BETA_STEP",
    "MIN_HORIZON",
    "MIN_WINDOW_POINTS",
    "RATE_OUTCOMES",
    "RATE_REASONS",
    "RATE_SENTENCES",
    "WINDOWS",
    "RateDescription",
    "SeedRate",
    "bound_beta",
    "describe_rate",
    "flips",
    "level_exponent",
    "rate_from_table",
    "rate_outcome",
    "seed_rate",
    "window_sensitivity",
]

RATE_OUTCOMES = ("at least the bound's rate", "slower than the bound", "no decay", "not testable")
RATE_SENTENCES = {
    "at least the bound's rate": "decays at least at the bound's rate",
    "slower than the bound": "decays, slower than the bound",
    "no decay": "does not decay at this horizon",
    "not testable": "not testable at this horizon",
}
RATE_REASONS = ("no_seed", "short_horizon", "few_seeds", "ambiguous", "decays", "slower", "flat")
WINDOWS = (0.5, 1.0 / 3.0)
"""Fit windows: the last half of the horizon (default) and the last third (sensitivity)."""
MIN_HORIZON = 500
"""Steps: below this horizon the outcome is ``not testable`` (reason ``short_horizon``)."""
MIN_WINDOW_POINTS = 20
"""A seed needs this many observed steps in the window for a β."""
BETA_GRID = np.round(np.arange(-2.0, 3.0 + 1e-9, 0.05), 10)
"""Candidate β of the profile fit (coarse); an estimate at an end of the grid is that end."""
BETA_STEP = 0.0025
"""Step of the fine grid around the best coarse β."""


def level_exponent(t: np.ndarray, g: np.ndarray) -> float:
    """β of Ĝ_t ≈ c·T^−β (c > 0) by profile least squares: the best β of ``BETA_GRID``, then of a
    grid ``BETA_STEP`` fine around it, refined by a parabola. NaN when no β gives c > 0 (the
    window's level is not positive)."""
    t, g = np.asarray(t, dtype=float), np.asarray(g, dtype=float)
    logt = np.log(t / t[-1])

    def explained(grid: np.ndarray) -> np.ndarray:  # RSS = Σg² − explained
        x = np.exp(-grid[:, None] * logt[None, :])
        sxy, sxx = x @ g, np.einsum("ij,ij->i", x, x)
        return np.where(sxy > 0, sxy * sxy / sxx, 0.0)

    coarse = explained(BETA_GRID)
    i = int(np.argmax(coarse))
    if coarse[i] <= 0:
        return math.nan
    step = BETA_GRID[1] - BETA_GRID[0]
    fine = np.arange(BETA_GRID[i] - step, BETA_GRID[i] + step + BETA_STEP / 2, BETA_STEP)
    fine = fine[(fine >= BETA_GRID[0] - 1e-12) & (fine <= BETA_GRID[-1] + 1e-12)]
    values = explained(fine)
    j = int(np.argmax(values))
    if 0 < j < fine.size - 1:
        y0, y1, y2 = values[j - 1 : j + 2]
        curve = y0 - 2 * y1 + y2
        if curve < 0:
            return float(fine[j] + 0.5 * (y0 - y2) / curve * BETA_STEP)
    return float(fine[j])


def _bound_level(t: np.ndarray) -> np.ndarray:
    """E[Ĝ] on the bound's curve at the observed T: increments of T·log(T+1)/√T over the steps."""
    total = np.sqrt(t) * np.log(t + 1.0)
    before = np.concatenate([[0.0], total[:-1]])
    gaps = np.diff(np.concatenate([[0.0], t]))
    return (total - before) / gaps


def bound_beta(t: np.ndarray, window: float = WINDOWS[0]) -> float:
    """β_B: ``level_exponent`` of the bound's exact level at the window's steps of ``t``."""
    t = np.asarray(t, dtype=float)
    return _bound_beta(t.tobytes(), float(window))


@functools.lru_cache(maxsize=64)
def _bound_beta(key: bytes, window: float) -> float:
    t = np.frombuffer(key, dtype=float)
    win = t > (1.0 - window) * t[-1]
    return level_exponent(t[win], _bound_level(t)[win])


@dataclass(frozen=True)
class SeedRate:
    """One seed: β and b (the rule's), β_run and b_run (descriptive), the window's size."""

    name: str
    horizon: int
    beta: float
    b: float
    beta_run: float
    b_run: float
    n_window: int


def seed_rate(t: np.ndarray, g: np.ndarray, name: str = "", window: float = WINDOWS[0]) -> SeedRate:
    """The per-seed figures of one series ``(T, Ĝ_T)`` (T = step + 1, sorted); module docstring."""
    t, g = np.asarray(t, dtype=float), np.asarray(g, dtype=float)
    if not 0.0 < window < 1.0:
        raise ValueError(f"window must lie in (0, 1), got {window}")
    a = running_average(g)
    win = t > (1.0 - window) * t[-1]
    n = int(win.sum())
    beta = b = beta_run = b_run = math.nan
    if n >= MIN_WINDOW_POINTS:
        beta = level_exponent(t[win], g[win])
        b = bound_beta(t, window) - beta
        pos = win & (a > 0)
        if pos.sum() >= max(MIN_WINDOW_POINTS, n / 2):
            x = np.log(t[pos])
            beta_run = -float(ols_slope(x, np.log(a[pos]))[0])
            b_run = float(ols_slope(x, np.log(bound_statistic(t[pos], a[pos])))[0])
    return SeedRate(name, int(t[-1]), beta, b, beta_run, b_run, n)


def rate_outcome(beta: Interval | None, b: Interval | None, horizon: int, seeds: int,
                 min_horizon: int = MIN_HORIZON) -> tuple[str, str]:
    """The outcome and its reason code (``RATE_REASONS``) from the seed intervals (module docstring)."""
    if seeds == 0:
        return "not testable", "no_seed"
    if horizon < min_horizon:
        return "not testable", "short_horizon"
    if beta is None or b is None:
        return "not testable", "few_seeds"
    if beta.low > 0:
        return ("at least the bound's rate", "decays") if b.low <= 0 else ("slower than the bound", "slower")
    return ("no decay", "flat") if b.low > 0 else ("not testable", "ambiguous")


@register
@dataclass(frozen=True)
class RateDescription(Result):
    """Theorem 1 (a) on one group of runs (one series per seed)."""

    kind = "rate_description"
    label: str
    column: str
    outcome: str
    reason: str
    horizon: int
    seeds: int
    window: float
    beta: Interval | None
    b: Interval | None
    beta_point: float  # mean over seeds (also with one seed)
    b_point: float
    beta_run: Interval | None
    b_run: Interval | None
    bound_beta: float
    per_seed: list[SeedRate]
    level: float = 0.95

    def __post_init__(self) -> None:
        if self.outcome not in RATE_OUTCOMES:
            raise ValueError(f"rate outcome must be one of {RATE_OUTCOMES}, got {self.outcome!r}")
        if self.reason not in RATE_REASONS:
            raise ValueError(f"rate reason must be one of {RATE_REASONS}, got {self.reason!r}")

    @property
    def sentence(self) -> str:
        """The report's words for the outcome."""
        return RATE_SENTENCES[self.outcome]

    def to_cli(self) -> dict:
        """``rate: {outcome, sentence, reason, beta, b, beta_run, b_run, horizon, seeds, window}``."""
        def iv(x: Interval | None, point: float) -> dict:
            return interval_dict(x, point, self.level)
        return {
            "outcome": self.outcome, "sentence": self.sentence, "reason": self.reason,
            "beta": iv(self.beta, self.beta_point), "b": iv(self.b, self.b_point),
            "beta_run": iv(self.beta_run, finite_mean([s.beta_run for s in self.per_seed])),
            "b_run": iv(self.b_run, finite_mean([s.b_run for s in self.per_seed])),
            "bound_beta": self.bound_beta, "horizon": self.horizon, "seeds": self.seeds,
            "window": self.window, "column": self.column,
            "per_seed": [{"name": s.name, "beta": finite_or_none(s.beta), "b": finite_or_none(s.b),
                          "horizon": s.horizon} for s in self.per_seed],
        }


def describe_rate(
    series: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    names: Sequence[str] | None = None,
    label: str = "",
    column: str = "",
    window: float = WINDOWS[0],
    level: float = 0.95,
    min_horizon: int = MIN_HORIZON,
) -> RateDescription:
    """Theorem 1 (a) over seeds: one ``(T, Ĝ_T)`` per seed. Guarantees: ``outcome`` in
    ``RATE_OUTCOMES``; intervals are ``seed_interval`` of the finite per-seed values (``None``
    below ``MIN_SEEDS``, with point estimates kept); deterministic."""
    names = list(names) if names is not None else [f"seed {i}" for i in range(len(series))]
    fits = [seed_rate(t, g, n, window) for (t, g), n in zip(series, names, strict=True)]
    horizon = min((f.horizon for f in fits), default=0)
    beta = seed_interval([f.beta for f in fits], level)
    b = seed_interval([f.b for f in fits], level)
    outcome, reason = rate_outcome(beta, b, horizon, len(fits), min_horizon)
    bb = bound_beta(np.arange(1.0, horizon + 1), window) if horizon >= 2 / window else math.nan
    return RateDescription(
        label=label, column=column, outcome=outcome, reason=reason, horizon=horizon, seeds=len(fits),
        window=float(window), beta=beta, b=b, beta_point=finite_mean([f.beta for f in fits]),
        b_point=finite_mean([f.b for f in fits]), beta_run=seed_interval([f.beta_run for f in fits], level),
        b_run=seed_interval([f.b_run for f in fits], level), bound_beta=bb, per_seed=fits, level=level)


def window_sensitivity(series: Sequence[tuple[np.ndarray, np.ndarray]], **kwargs) -> dict[float, RateDescription]:
    """``describe_rate`` under each fit window of ``WINDOWS`` (½ and ⅓); ``flips`` tells whether they differ."""
    return {w: describe_rate(series, window=w, **kwargs) for w in WINDOWS}


def flips(sensitivity: dict[float, RateDescription]) -> bool:
    """True when the outcome differs between the fit windows (a verdict that flips is reported as such)."""
    return len({r.outcome for r in sensitivity.values()}) > 1


def rate_from_table(
    frame: pd.DataFrame,
    column: str,
    step_column: str = "step",
    seed_column: str | None = None,
    *,
    where: str = "table",
    **kwargs,
) -> RateDescription:
    """``describe_rate`` on any table: one series, or one per value of ``seed_column``."""
    kwargs.setdefault("label", column)
    series, names = seed_series(frame, column, step_column, seed_column, where)
    return describe_rate(series, names=names, column=column, **kwargs)
