"""Theorem 1 (a): the rate of Ĝ_t's level described at this horizon (docs/THEOREM1.md).

Theorem 1 bounds (1/T) Σ_{t<T} E‖∇R^t‖² by C·log T/√T with an unknown C. A finite run can
describe the decay it shows; it cannot refute the bound. The rule reads the level of the
per-step estimate Ĝ_t (unbiased for the squared gradient norm, possibly negative), T = step + 1.

**Blocks.** The fit window (T_0, T_max], T_0 = (1 − ``WINDOW``)·T_max, is cut into ``BLOCKS``
blocks of equal width in log T (edges T_0·r^j, r = (T_max/T_0)^(1/BLOCKS)). Per seed, L_j is
the mean of Ĝ_t over block j. For a power law E Ĝ_T = c·T^−β, L_j/L_{j+1} = r^β exactly in the
continuum, whatever c.

**Per seed**, with m the seed's mean Ĝ over the window:

* ``decline_early`` = (L_1 − L_2)/m and ``decline_late`` = (L_3 − L_4)/m: the relative fall of
  the level over two *disjoint* pairs of blocks;
* β = log(L_3/L_4)/log r, the exponent of the level over the late pair (the rate at the
  horizon); β_early the same over the early pair;
* b = β_B − β, β_B the same exponent of the bound's exact level (the increments of
  T·log(T+1)/√T) over the late pair: b ≤ 0 at the bound's rate or faster, b > 0 slower;
* ``slowing`` = log(L_1/L_2) − log(L_3/L_4): how much the decay slows within the window
  (0 for a power law; > 0 for a transient settling onto a floor).

**Seed level**: t-intervals over seeds (``analyses.stats.seeds.seed_interval``) of each figure.

**Outcome** (``RATE_OUTCOMES``, reason codes ``RATE_REASONS``):

* *decays* when both declines' intervals lie above 0 (an intersection–union test: a fall
  onto a plateau, a step drop or a transient ending anywhere in the window leaves one pair
  flat). Then, from b's interval: ``at the bound's rate or faster`` (b_hi ≤ 0), ``slower
  than the bound`` (b_lo > 0), ``not distinguished from the bound`` (b straddles 0) —
  except ``not testable`` when β_lo > ``TRANSIENT_BETA`` (a fall faster than any rate:
  a transient), or, in place of "not distinguished", when the decay slows significantly
  (the slowing's interval at ``SLOWING_LEVEL`` above 0: a transient onto a floor is not
  excluded);
* ``not testable`` (``rising``) when either pair rises significantly (a warm-up peaking inside
  the window is not a plateau);
* ``no decay`` when the late pair shows no significant decline and b_lo > 0 there: over the
  last half of the window (in log T) the level falls significantly slower than the bound;
* ``not testable`` otherwise (too short, too few seeds, or intervals that hold both).

Under a plateau a decay word needs both declines significant: at most (1 − level)/2.
Deterministic. The confusion tables, the power at the model's noise and the families that
try to fool the rule are in docs/THEOREM1.md (``benchmarks/calibrate_rate.py``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.results import Interval, Result, register
from analyses.stats.multiplicity import t_test_p
from analyses.stats.seeds import (
    MIN_SEEDS,
    finite_mean,
    finite_or_none,
    interval_dict,
    seed_interval,
)
from analyses.theorem1.convergence import seed_series

__all__ = [
    "BLOCKS",
    "MIN_BLOCK_POINTS",
    "MIN_HORIZON",
    "RATE_OUTCOMES",
    "RATE_REASONS",
    "RATE_SENTENCES",
    "SLOWING_LEVEL",
    "TRANSIENT_BETA",
    "WINDOW",
    "WINDOWS",
    "DECAYS",
    "RateDescription",
    "SeedRate",
    "block_edges",
    "bound_level",
    "describe_rate",
    "noise_ratio",
    "rate_from_table",
    "rate_outcome",
    "seed_rate",
]

RATE_OUTCOMES = ("at the bound's rate or faster", "not distinguished from the bound", "slower than the bound",
                 "no decay", "not testable")
DECAYS = RATE_OUTCOMES[:3]
"""The outcomes that say the level decays in the window."""
RATE_SENTENCES = {
    "at the bound's rate or faster": "decays at the bound's rate or faster",
    "not distinguished from the bound": "decays; its rate is not distinguished from the bound's",
    "slower than the bound": "decays, slower than the bound",
    "no decay": "no decay at this horizon",
    "not testable": "not testable at this horizon",
}
RATE_REASONS = ("no_seed", "short_horizon", "few_seeds", "faster", "undistinguished", "slower", "transient",
                "slowing", "rising", "flat", "ambiguous")
WINDOW = 0.95
"""The fit window: the last 95% of the horizon (T_0 = T_max/20 skips the first steps' warm-up)."""
WINDOWS = (WINDOW,)
BLOCKS = 4
"""Blocks of equal width in log T: the early pair is blocks 1–2, the late pair blocks 3–4."""
MIN_HORIZON = 500
"""Steps: below this horizon the outcome is ``not testable`` (reason ``short_horizon``)."""
MIN_BLOCK_POINTS = 5
"""A seed needs this many observed steps in every block for its figures."""
TRANSIENT_BETA = 1.0
"""β_lo above this: a fall faster than T^−1 in the level is a transient, not a rate."""
SLOWING_LEVEL = 0.6
"""Two-sided level of the slowing interval: "not distinguished from the bound" needs the slowing's
interval at this level to reach 0 (one-sided 20%). A missed slowing lets a transient onto a floor
read the bound's word; a false one only costs power (a power law is flagged in at most 20% of the
repetitions that would read it). 0.8 (one-sided 10%) let the exponential transient read a bound's
word in 5.9% of 1000 repetitions at noise 3×, over the 5% goal (docs/THEOREM1.md)."""


def block_edges(horizon: int, window: float = WINDOW, blocks: int = BLOCKS) -> np.ndarray:
    """The ``blocks + 1`` edges T_0·r^j of the window, geometric from (1 − window)·horizon to horizon."""
    if not 0.0 < window < 1.0:
        raise ValueError(f"window must lie in (0, 1), got {window}")
    return np.exp(np.linspace(math.log((1.0 - window) * horizon), math.log(horizon), blocks + 1))


def _block_means(t: np.ndarray, g: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Mean of ``g`` over each block (e_j, e_{j+1}]; NaN where fewer than ``MIN_BLOCK_POINTS``."""
    which = np.searchsorted(edges, t, side="left") - 1  # block j holds e_j < T ≤ e_{j+1}
    out = np.full(edges.size - 1, math.nan)
    for j in range(out.size):
        part = g[which == j]
        if part.size >= MIN_BLOCK_POINTS:
            out[j] = float(part.mean())
    return out


def bound_level(t: np.ndarray) -> np.ndarray:
    """E[Ĝ] on the bound's curve at the observed T: increments of T·log(T+1)/√T over the steps."""
    t = np.asarray(t, dtype=float)
    total = np.sqrt(t) * np.log(t + 1.0)
    before = np.concatenate([[0.0], total[:-1]])
    return (total - before) / np.diff(np.concatenate([[0.0], t]))


@functools.lru_cache(maxsize=64)
def _bound_beta(horizon: int, window: float) -> float:
    """β_B: the late pair's exponent of the bound's exact level at T = 1..horizon."""
    t = np.arange(1.0, horizon + 1.0)
    edges = block_edges(horizon, window)
    levels = _block_means(t, bound_level(t), edges)
    return float(math.log(levels[-2] / levels[-1]) / math.log(edges[1] / edges[0]))


def _log_ratio(a: float, b: float) -> float:
    return math.log(a / b) if a > 0 and b > 0 else math.nan


@dataclass(frozen=True)
class SeedRate:
    """One seed's block levels and the figures read off them (module docstring)."""

    name: str
    horizon: int
    levels: list[float]
    decline_early: float
    decline_late: float
    beta: float
    beta_early: float
    b: float
    slowing: float
    noise: float


def noise_ratio(t: np.ndarray, g: np.ndarray, window: float = WINDOW) -> float:
    """Ĝ_t's noise as a multiple of its mean level over the run: the standard deviation of Ĝ_t about
    its block means in the window, over the mean of Ĝ_t over every step (the convention of the
    calibration families, ``analyses.theorem1.families``). NaN when the run's mean is not positive."""
    t, g = np.asarray(t, dtype=float), np.asarray(g, dtype=float)
    edges = block_edges(int(t[-1]), window, blocks=4 * BLOCKS)
    which = np.searchsorted(edges, t, side="left") - 1
    inside = (which >= 0) & (which < edges.size - 1)
    if inside.sum() < 2 * MIN_BLOCK_POINTS or not g.mean() > 0:
        return math.nan
    centred = np.concatenate([g[which == j] - g[which == j].mean() for j in np.unique(which[inside])])
    return float(centred.std(ddof=1) / g.mean())


def seed_rate(t: np.ndarray, g: np.ndarray, name: str = "", window: float = WINDOW) -> SeedRate:
    """The per-seed figures of one series ``(T, Ĝ_T)`` (T = step + 1, sorted); module docstring."""
    t, g = np.asarray(t, dtype=float), np.asarray(g, dtype=float)
    horizon = int(t[-1])
    edges = block_edges(horizon, window)
    levels = _block_means(t, g, edges)
    mean = float(g[(t > edges[0]) & (t <= edges[-1])].mean()) if np.isfinite(levels).all() else math.nan
    rel = mean if mean > 0 else math.nan
    step = math.log(edges[1] / edges[0])
    early, late = _log_ratio(levels[0], levels[1]), _log_ratio(levels[2], levels[3])
    beta = late / step
    return SeedRate(name, horizon, [float(x) for x in levels], (levels[0] - levels[1]) / rel,
                    (levels[2] - levels[3]) / rel, beta, early / step,
                    _bound_beta(horizon, float(window)) - beta, early - late, noise_ratio(t, g, window))


def _p_positive(values: Sequence[float]) -> float:
    """``analyses.stats.multiplicity.t_test_p`` of mean 0 over the finite per-seed values; NaN below ``MIN_SEEDS``."""
    finite = [v for v in values if math.isfinite(v)]
    p = t_test_p(finite) if len(finite) >= MIN_SEEDS else None
    return math.nan if p is None else p


def rate_outcome(decline_early: Interval | None, decline_late: Interval | None, beta: Interval | None,
                 b: Interval | None, slowing: Interval | None, horizon: int, seeds: int,
                 min_horizon: int = MIN_HORIZON) -> tuple[str, str]:
    """The outcome and its reason code (``RATE_REASONS``) from the seed intervals (module docstring)."""
    if seeds == 0:
        return "not testable", "no_seed"
    if horizon < min_horizon:
        return "not testable", "short_horizon"
    if None in (decline_early, decline_late, beta, b):
        return "not testable", "few_seeds"
    if decline_early.low > 0 and decline_late.low > 0:
        if beta.low > TRANSIENT_BETA:
            return "not testable", "transient"
        if b.low > 0:
            return "slower than the bound", "slower"
        if b.high <= 0:
            return "at the bound's rate or faster", "faster"
        if slowing is not None and slowing.low > 0:
            return "not testable", "slowing"
        return "not distinguished from the bound", "undistinguished"
    if decline_late.high < 0 or decline_early.high < 0:
        return "not testable", "rising"
    if decline_late.low <= 0 and b.low > 0:
        return "no decay", "flat"
    return "not testable", "ambiguous"


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
    edges: list[float]
    decline_early: Interval | None
    decline_late: Interval | None
    beta: Interval | None
    b: Interval | None
    slowing: Interval | None
    beta_point: float | None  # mean over seeds (also with one seed); None: undefined
    b_point: float | None
    bound_beta: float | None
    noise: float | None  # median over seeds of ``noise_ratio``
    p_value: float | None  # two-sided p of the test that decided the outcome; None when undecided
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

    @property
    def decays(self) -> bool:
        return self.outcome in DECAYS

    def to_cli(self) -> dict:
        """``rate: {outcome, sentence, reason, beta, b, declines, slowing, noise, p_value, ...}``."""
        def iv(x: Interval | None, values: list[float]) -> dict:
            return interval_dict(x, finite_mean(values), self.level)
        seeds = self.per_seed
        return {
            "outcome": self.outcome, "sentence": self.sentence, "reason": self.reason,
            "beta": iv(self.beta, [s.beta for s in seeds]), "b": iv(self.b, [s.b for s in seeds]),
            "decline_early": iv(self.decline_early, [s.decline_early for s in seeds]),
            "decline_late": iv(self.decline_late, [s.decline_late for s in seeds]),
            "slowing": iv(self.slowing, [s.slowing for s in seeds]),
            "bound_beta": self.bound_beta, "noise": self.noise, "p_value": self.p_value, "horizon": self.horizon, "seeds": self.seeds,
            "window": self.window, "edges": self.edges, "column": self.column,
            "per_seed": [{"name": s.name, "beta": finite_or_none(s.beta), "b": finite_or_none(s.b),
                          "levels": [finite_or_none(x) for x in s.levels], "horizon": s.horizon} for s in seeds],
        }


def _decisive_p(outcome: str, fits: list[SeedRate]) -> float:
    """The p-value of the test behind ``outcome``: the larger of the two declines' (a decay, an
    intersection–union test), or b's over the late pair (no decay); NaN when undecided."""
    if outcome in DECAYS:
        return max(_p_positive([f.decline_early for f in fits]), _p_positive([f.decline_late for f in fits]))
    if outcome == "no decay":
        return _p_positive([f.b for f in fits])
    return math.nan


def describe_rate(
    series: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    names: Sequence[str] | None = None,
    label: str = "",
    column: str = "",
    window: float = WINDOW,
    level: float = 0.95,
    min_horizon: int = MIN_HORIZON,
) -> RateDescription:
    """Theorem 1 (a) over seeds: one ``(T, Ĝ_T)`` per seed, cut at the shortest seed's horizon.
    Guarantees: ``outcome`` in ``RATE_OUTCOMES``; intervals are ``seed_interval`` of the finite
    per-seed values (``None`` below ``MIN_SEEDS``, point estimates kept); deterministic."""
    names = list(names) if names is not None else [f"seed {i}" for i in range(len(series))]
    horizon = min((int(np.asarray(t)[-1]) for t, _ in series), default=0)
    fits = []
    if horizon >= max(min_horizon, 2 * BLOCKS * MIN_BLOCK_POINTS / window):
        for (t, g), name in zip(series, names, strict=True):
            keep = np.asarray(t) <= horizon
            fits.append(seed_rate(np.asarray(t)[keep], np.asarray(g)[keep], name, window))
    figures = {key: seed_interval([getattr(f, key) for f in fits], level)
               for key in ("decline_early", "decline_late", "beta", "b")}
    figures["slowing"] = seed_interval([f.slowing for f in fits], SLOWING_LEVEL)
    outcome, reason = rate_outcome(**figures, horizon=horizon, seeds=len(series), min_horizon=min_horizon)
    edges = block_edges(horizon, window).tolist() if fits else []
    return RateDescription(
        label=label, column=column, outcome=outcome, reason=reason, horizon=horizon, seeds=len(series),
        window=float(window), edges=edges, **figures, beta_point=finite_or_none(finite_mean([f.beta for f in fits])),
        b_point=finite_or_none(finite_mean([f.b for f in fits])),
        bound_beta=_bound_beta(horizon, float(window)) if fits else None,
        noise=float(np.nanmedian([f.noise for f in fits])) if any(math.isfinite(f.noise) for f in fits) else None,
        p_value=finite_or_none(_decisive_p(outcome, fits)), per_seed=fits, level=level)


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
