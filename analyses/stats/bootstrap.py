"""Moving-block bootstrap over steps, shared by the analyses.

Consecutive steps of a training run are dependent, so resampling single steps understates
the spread of any statistic. The moving-block bootstrap resamples blocks of ``L``
consecutive positions (start drawn uniformly among the ``n − L + 1`` blocks) and
concatenates them to length ``n``. Default ``L = round(n^{1/3})``, the usual rate for
variance estimation.
"""

from __future__ import annotations

import numpy as np

from analyses.results import Interval

__all__ = ["block_indices", "block_length", "ols_slope", "percentile_interval"]


def block_length(n: int) -> int:
    """L = max(1, round(n^{1/3}))."""
    return max(1, int(round(n ** (1.0 / 3.0))))


def block_indices(
    n: int, n_boot: int, rng: np.random.Generator, length: int | None = None
) -> np.ndarray:
    """Index arrays of shape ``(n_boot, n)``: each row concatenates random blocks of length L."""
    if n < 1:
        raise ValueError("block bootstrap needs at least one position")
    size = min(length or block_length(n), n)
    n_blocks = -(-n // size)
    starts = rng.integers(0, n - size + 1, size=(n_boot, n_blocks))
    idx = starts[:, :, None] + np.arange(size)[None, None, :]
    return idx.reshape(n_boot, n_blocks * size)[:, :n]


def ols_slope(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares slope and intercept of ``y`` on ``x`` along the last axis (batched)."""
    x_mean = x.mean(axis=-1, keepdims=True)
    y_mean = y.mean(axis=-1, keepdims=True)
    dx = x - x_mean
    slope = (dx * (y - y_mean)).sum(axis=-1) / (dx * dx).sum(axis=-1)
    intercept = y_mean[..., 0] - slope * x_mean[..., 0]
    return slope, intercept


def percentile_interval(
    estimate: float, samples: np.ndarray, level: float = 0.95, *, recentre: bool = False
) -> Interval:
    """Percentile interval of the finite bootstrap ``samples`` around ``estimate``.

    With ``recentre`` the quantiles are shifted by ``estimate − median(samples)``, so the
    interval always contains the estimate (used when the resampling scheme itself shifts the
    bootstrap distribution, as residual resampling around a smoothed trend does).
    """
    finite = np.asarray(samples, dtype=float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return Interval(float(estimate), float("nan"), float("nan"), level)
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    shift = float(estimate) - float(np.median(finite)) if recentre else 0.0
    return Interval(float(estimate), float(low + shift), float(high + shift), level)
