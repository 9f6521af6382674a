"""Shares of binary events counted per seed, with intervals that respect seeds.

docs/MATH.md, "Statistics for every verdict": the seed is the unit of replication, and the
events of one seed (scaled steps, rising pairs) are not independent of each other. Both
intervals below use the per-seed counts only, never resample single events.

* ``cluster_share_interval(x, n)``: the pooled share p̂ = Σx_i / Σn_i with a Clopper–Pearson
  interval on an effective sample size (Korn & Graubard 1998):

      var_c = k/(k−1) · Σ_i (x_i − p̂·n_i)² / N²       (between-seed, ratio estimator)
      deff  = max(1, var_c / (p̂(1−p̂)/N))              (never narrower than binomial)
      n_eff = N / deff · (t_{N−1} / t_{k−1})²         (k seeds: degrees-of-freedom correction)

  then the exact binomial (Beta) quantiles at x_eff = p̂·n_eff successes out of n_eff. At
  p̂ = 0 the interval is [0, 1 − (α/2)^{1/n_eff}], never the point 0.
* ``paired_difference_interval(a, b)``: the mean of a − b over events paired by seed (the
  actual and the random direction at the same scaled step), with a cluster-robust standard
  error (CR1 over seeds, floored at the unclustered one) and t_{k−1}.

Both return ``None`` with fewer than ``MIN_SEEDS`` seeds (analyses.stats.seeds) that have events.
Coverage at the suite's 5 seeds × 30 events: ``benchmarks/calibrate_a5.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from analyses.results import Interval
from analyses.stats.seeds import MIN_SEEDS

__all__ = ["cluster_share_interval", "cluster_share_p", "paired_difference_interval"]


def _clopper_pearson(x: float, n: float, level: float) -> tuple[float, float]:
    """Exact binomial interval for x successes in n trials (real-valued x, n allowed)."""
    a = (1.0 - level) / 2.0
    low = 0.0 if x <= 0 else float(stats.beta.ppf(a, x, n - x + 1.0))
    high = 1.0 if x >= n else float(stats.beta.ppf(1.0 - a, x + 1.0, n - x))
    return low, high


def _df_factor(total: int, seeds: int, level: float) -> float:
    """(t_{N−1} / t_{k−1})², the Korn–Graubard degrees-of-freedom correction (≤ 1)."""
    q = 0.5 + level / 2.0
    return min(1.0, (float(stats.t.ppf(q, max(total - 1, 1))) / float(stats.t.ppf(q, seeds - 1))) ** 2)


def _effective(
    successes: Sequence[int], trials: Sequence[int], level: float, min_seeds: int
) -> tuple[float, float] | None:
    """(p̂, n_eff) of the module docstring; None with too few seeds."""
    x = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    if x.shape != n.shape or (x < 0).any() or (x > n).any():
        raise ValueError("successes must lie between 0 and trials, seed by seed")
    keep = n > 0
    x, n = x[keep], n[keep]
    k, total = int(x.size), float(n.sum())
    if k < max(2, min_seeds):
        return None
    p = float(x.sum() / total)
    var_binomial = p * (1.0 - p) / total
    var_cluster = k / (k - 1) * float(((x - p * n) ** 2).sum()) / total**2
    deff = max(1.0, var_cluster / var_binomial) if var_binomial > 0 else 1.0
    return p, total / deff * _df_factor(int(total), k, level)


def cluster_share_interval(
    successes: Sequence[int], trials: Sequence[int], level: float = 0.95, *, min_seeds: int = MIN_SEEDS
) -> Interval | None:
    """Pooled share Σx/Σn with the seed-respecting Clopper–Pearson interval (module docstring)."""
    found = _effective(successes, trials, level, min_seeds)
    if found is None:
        return None
    p, n_eff = found
    low, high = _clopper_pearson(p * n_eff, n_eff, level)
    return Interval(p, min(low, p), max(high, p), level)


def cluster_share_p(
    successes: Sequence[int], trials: Sequence[int], null: float = 0.5, *, level: float = 0.95,
    min_seeds: int = MIN_SEEDS,
) -> float | None:
    """Two-sided exact binomial p of share = ``null`` at the effective sample size of
    ``cluster_share_interval`` (its dual: p < 1 − level exactly when that interval excludes
    ``null``, up to the degrees-of-freedom factor taken at ``level``); None with too few seeds."""
    found = _effective(successes, trials, level, min_seeds)
    if found is None:
        return None
    p, n = found
    x = p * n
    below = 1.0 if x >= n else float(stats.beta.sf(null, x + 1.0, n - x))  # P(X <= x) for Binomial(n, null)
    above = 1.0 if x <= 0 else float(stats.beta.cdf(null, x, n - x + 1.0))  # P(X >= x)
    return min(1.0, 2.0 * min(below, above))


def paired_difference_interval(
    a: Sequence[Sequence[float]], b: Sequence[Sequence[float]], level: float = 0.95, *, min_seeds: int = MIN_SEEDS
) -> Interval | None:
    """Mean of a − b over paired events (one list per seed), CR1 standard error over seeds, t_{k−1}."""
    diffs = [np.asarray(x, float) - np.asarray(y, float) for x, y in zip(a, b, strict=True)]
    diffs = [d for d in diffs if d.size]
    k = len(diffs)
    if k < max(2, min_seeds):
        return None
    pooled = np.concatenate(diffs)
    total = pooled.size
    mean = float(pooled.mean())
    sums = np.array([d.sum() - mean * d.size for d in diffs])
    var_cluster = k / (k - 1) * float((sums**2).sum()) / total**2
    var_plain = float(((pooled - mean) ** 2).sum()) / total**2
    half = float(stats.t.ppf(0.5 + level / 2.0, k - 1)) * math.sqrt(max(var_cluster, var_plain))
    return Interval(mean, mean - half, mean + half, level)
