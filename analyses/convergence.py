"""Theorem 1: the convergence rate of the running mean of squared gradient norms (docs/MATH.md).

Ā_T = (1/|S_T|) Σ_{t ∈ S_T} G_t, S_T = the observed steps t < T (every step for the local
G_t; every s-th step for the global G^glob_t, which then estimates the same mean). Fits:

* power law: log Ā_T = log c − β·log T, least squares over the observed T ∈ [T_0, T_max];
* polylog: log Ā_T + ½·log T = log c + γ·log log T (Theorem 1's Õ(1/√T) with (log T)^γ).

Interval (95% by default): residual moving-block bootstrap over steps. The trend μ_t is a
centred moving average of G_t (half-width min(2L, i/3) at the i-th observation, shifted at
the end so the window keeps its width); multiplicative residuals r_t = G_t / μ_t are
resampled in blocks of L = round(n^{1/3}) observations, G*_t = μ_t·r*_t, and both fits are
redone on Ā*; the percentile interval is recentred on the estimate (the trend's curvature
leaves residuals that shift β* slightly even without noise). Several seeds: each seed is resampled independently and the pooled Ā_T (mean
over seeds at common T) is refitted, so the interval is pooled across seeds.

Verdict (docs/MATH.md): the rate claim *holds* on a group of runs when the interval of β reaches
0.5 or above (``beta.high >= 0.5``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.bootstrap import block_indices, block_length, ols_slope, percentile_interval
from analyses.io import RunDataError, numeric_column
from analyses.results import Interval, Result, register

__all__ = [
    "GLOBAL_COLUMN",
    "LOCAL_COLUMN",
    "RateFit",
    "RateSet",
    "backprop_rate",
    "default_t0",
    "global_rate",
    "local_rate",
    "rate_fit",
    "rate_from_table",
    "running_average",
    "series_from_table",
]

LOCAL_COLUMN = "train/grad_norm_sq"
GLOBAL_COLUMN = "probe/gradient/global_sq"
MIN_POINTS = 5
CURVE_POINTS = 200
_BATCH = 200


@register
@dataclass(frozen=True)
class RateFit(Result):
    """Fit of Ā_T ≈ c·T^{−β} and Ā_T ≈ c·T^{−1/2}(log T)^γ on one group of runs."""

    kind = "rate_fit"
    label: str
    column: str
    n_series: int
    n_points: int
    t0: int
    t_max: int
    block_length: int
    n_boot: int
    beta: Interval
    log_c: float
    gamma: Interval
    gamma_log_c: float
    per_series_beta: list[float]
    holds: bool
    n_missing: int
    curve_t: list[float]
    curve_a: list[float]

    def summary(self) -> str:
        """One line: β with interval, window, and whether the rate holds."""
        return (
            f"{self.label}: beta = {self.beta} over T in [{self.t0}, {self.t_max}] "
            f"({self.n_points} points, {self.n_series} series); gamma = {self.gamma}; "
            f"rate {'holds' if self.holds else 'fails'} (beta interval "
            f"{'reaches' if self.holds else 'stays below'} 0.5)"
        )


@register
@dataclass(frozen=True)
class RateSet(Result):
    """The rate fits of one quantity (local, global or backprop), one per group of runs."""

    kind = "rate_set"
    quantity: str
    column: str
    fits: list[RateFit]
    schedules: list[str]
    notes: list[str]

    def theorem_fits(self) -> list[RateFit]:
        """Fits of groups trained with Theorem 1's step size η_t ∝ 1/√t (``inv_sqrt``)."""
        return [f for f, s in zip(self.fits, self.schedules, strict=True) if s == "inv_sqrt"]


def running_average(values: np.ndarray) -> np.ndarray:
    """Ā at each observation: cumulative sum divided by the number of observations so far."""
    values = np.asarray(values, dtype=float)
    return np.cumsum(values, axis=-1) / np.arange(1, values.shape[-1] + 1)


def default_t0(t_max: int) -> int:
    """T_0 = max(10, ⌈0.1·T_max⌉): drop the transient of the first tenth of the run."""
    return max(10, math.ceil(0.1 * t_max))


def series_from_table(
    frame: pd.DataFrame, column: str, step_column: str = "step", *, where: str = "table"
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(T, G, n_missing)``: T = step + 1 of the rows where ``column`` is not null.

    Raises ``RunDataError`` for a missing/non-numeric column, ±inf or negative values,
    duplicated steps, or fewer than ``MIN_POINTS`` values.
    """
    values = numeric_column(frame, column, where=where)
    steps = numeric_column(frame, step_column, where=where)
    present = values.notna() & steps.notna()
    g = values[present].to_numpy()
    s = steps[present].to_numpy()
    if np.isinf(g).any():
        raise RunDataError(
            f"{where}: column {column!r} is infinite at {int(np.isinf(g).sum())} step(s)"
        )
    if (g < 0).any():
        raise RunDataError(
            f"{where}: column {column!r} is negative at {int((g < 0).sum())} step(s)"
        )
    if np.any(s != np.round(s)) or np.any(s < 0):
        raise RunDataError(f"{where}: column {step_column!r} must hold non-negative integers")
    order = np.argsort(s, kind="stable")
    s, g = s[order], g[order]
    if np.any(np.diff(s) == 0):
        raise RunDataError(f"{where}: column {step_column!r} has duplicated steps")
    if g.size < MIN_POINTS:
        raise RunDataError(f"{where}: column {column!r}: too few rows ({g.size} < {MIN_POINTS})")
    return (s + 1).astype(np.int64), g, int((~present).sum())


def _trend(values: np.ndarray, max_half: int) -> np.ndarray:
    """Centred moving average, half-width min(max_half, i // 3), shifted inside at the end."""
    n = values.size
    i = np.arange(n)
    half = np.minimum(max_half, i // 3)
    lo = i - half
    hi = i + half
    over = hi > n - 1
    lo[over] = np.maximum(0, n - 1 - 2 * half[over])
    hi[over] = n - 1
    csum = np.concatenate([[0.0], np.cumsum(values)])
    return (csum[hi + 1] - csum[lo]) / (hi - lo + 1)


def _fits(log_t: np.ndarray, log_a: np.ndarray, loglog_t: np.ndarray) -> tuple:
    """(β, log c, γ, log c_γ) from batched log Ā rows over the fit window."""
    slope, intercept = ols_slope(np.broadcast_to(log_t, log_a.shape), log_a)
    g_slope, g_intercept = ols_slope(np.broadcast_to(loglog_t, log_a.shape), log_a + 0.5 * log_t)
    return -slope, intercept, g_slope, g_intercept


def _thin_log(t: np.ndarray, a: np.ndarray, n: int) -> tuple[list[float], list[float]]:
    if t.size <= n:
        return t.astype(float).tolist(), a.tolist()
    pos = np.unique(np.round(np.geomspace(1, t.size, n)).astype(int) - 1)
    return t[pos].astype(float).tolist(), a[pos].tolist()


def rate_fit(
    series: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    label: str = "",
    column: str = "",
    t0: int | None = None,
    t_max: int | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    n_missing: int = 0,
) -> RateFit:
    """Fit Theorem 1's rate on one or several series ``(T, G_T)`` (T = step + 1, sorted).

    Guarantees: β and γ are the least-squares slopes of the pooled log Ā_T over the common
    observed T in [T_0, T_max] (T_max defaults to the last common T, T_0 to
    ``default_t0``); ``beta.low <= beta.high``; ``holds == (beta.high >= 0.5)``; the same
    ``seed`` gives the same result. Raises ``RunDataError`` with fewer than 5 points.
    """
    if not series:
        raise RunDataError(f"{label or column}: no series to fit")
    common = series[0][0]
    for t, _ in series[1:]:
        common = np.intersect1d(common, t)
    if t_max is None:
        t_max = int(common[-1]) if common.size else 0
    if t0 is None:
        t0 = default_t0(t_max)
    window = common[(common >= max(t0, 2)) & (common <= t_max)]
    if window.size < MIN_POINTS:
        raise RunDataError(
            f"{label or column}: too few points in the fit window T in [{t0}, {t_max}] "
            f"({window.size} < {MIN_POINTS})"
        )
    all_pos = [np.searchsorted(t, common) for t, _ in series]
    win_pos = [np.searchsorted(t, window) for t, _ in series]
    pooled = np.mean(
        [running_average(g)[p] for (_, g), p in zip(series, all_pos, strict=True)], axis=0
    )
    pooled_win = pooled[np.searchsorted(common, window)]
    if np.any(pooled_win <= 0):
        raise RunDataError(f"{label or column}: Ā_T is zero inside the fit window")
    log_t, loglog_t = np.log(window), np.log(np.log(window))
    beta, log_c, gamma, g_log_c = _fits(log_t, np.log(pooled_win), loglog_t)
    per_series = [
        float(_fits(log_t, np.log(running_average(g)[p]), loglog_t)[0])
        for (_, g), p in zip(series, win_pos, strict=True)
    ]
    rng = np.random.default_rng(seed)
    lengths = [block_length(g.size) for _, g in series]
    betas, gammas = [], []
    for start in range(0, n_boot, _BATCH):
        size = min(_BATCH, n_boot - start)
        acc = np.zeros((size, window.size))
        for (_, g), p, length in zip(series, win_pos, lengths, strict=True):
            mu = _trend(g, 2 * length)
            resid = np.where(mu > 0, g / np.where(mu > 0, mu, 1.0), 1.0)
            boot = mu * resid[block_indices(g.size, size, rng, length)]
            acc += running_average(boot)[:, p]
        acc /= len(series)
        with np.errstate(divide="ignore", invalid="ignore"):
            b, _, gm, _ = _fits(log_t, np.log(acc), loglog_t)
        betas.append(b)
        gammas.append(gm)
    beta_ci = percentile_interval(float(beta), np.concatenate(betas), level, recentre=True)
    common_a = pooled
    curve_t, curve_a = _thin_log(common, common_a, CURVE_POINTS)
    return RateFit(
        label=label,
        column=column,
        n_series=len(series),
        n_points=int(window.size),
        t0=int(t0),
        t_max=int(t_max),
        block_length=int(max(lengths)),
        n_boot=int(n_boot),
        beta=beta_ci,
        log_c=float(log_c),
        gamma=percentile_interval(float(gamma), np.concatenate(gammas), level, recentre=True),
        gamma_log_c=float(g_log_c),
        per_series_beta=per_series,
        holds=bool(beta_ci.high >= 0.5),
        n_missing=int(n_missing),
        curve_t=curve_t,
        curve_a=curve_a,
    )


def rate_from_table(
    frame: pd.DataFrame, column: str, step_column: str = "step", *, where: str = "table", **kwargs
) -> RateFit:
    """Theorem 1 fit of any per-step column of a table (``kwargs`` go to ``rate_fit``).

    ``column`` holds G_t per step (nulls skipped: a sparse column is averaged over the steps
    it has); ``where`` names the table in error messages.
    """
    t, g, missing = series_from_table(frame, column, step_column, where=where)
    kwargs.setdefault("label", column)
    return rate_fit([(t, g)], column=column, n_missing=missing, **kwargs)


def _rate_of_frames(
    frames: Sequence[pd.DataFrame], column: str, names: Sequence[str] | None, **kwargs
) -> RateFit:
    names = list(names) if names is not None else [f"run {i}" for i in range(len(frames))]
    series, missing = [], 0
    for frame, name in zip(frames, names, strict=True):
        t, g, m = series_from_table(frame, column, where=name)
        series.append((t, g))
        missing += m
    kwargs.setdefault("label", column)
    return rate_fit(series, column=column, n_missing=missing, **kwargs)


def local_rate(
    frames: Sequence[pd.DataFrame], names: Sequence[str] | None = None, **kwargs
) -> RateFit:
    """ZeroLock local rate: G_t = ``train/grad_norm_sq`` = Σ_k ‖∇_{ω_k} ℓ_k‖², every step."""
    return _rate_of_frames(frames, LOCAL_COLUMN, names, **kwargs)


def global_rate(
    frames: Sequence[pd.DataFrame], names: Sequence[str] | None = None, **kwargs
) -> RateFit:
    """ZeroLock global rate: G^glob_t = ``probe/gradient/global_sq`` (‖∇L‖², every s steps)."""
    return _rate_of_frames(frames, GLOBAL_COLUMN, names, **kwargs)


def backprop_rate(
    frames: Sequence[pd.DataFrame],
    names: Sequence[str] | None = None,
    column: str = LOCAL_COLUMN,
    **kwargs,
) -> RateFit:
    """Backprop baseline: ‖∇L‖² on the training minibatch (``train/grad_norm_sq``) by default."""
    return _rate_of_frames(frames, column, names, **kwargs)
