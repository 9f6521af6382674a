"""Theorem 1 (a): the rate of Ĝ_t's level described at this horizon (docs/THEOREM1.md).

Theorem 1 bounds (1/T) Σ_{t<T} E‖∇R^t‖² by C·log T/√T with an unknown C. A finite run can
describe the decay it shows; it cannot refute the bound. Whether the level falls toward zero or
settles onto a positive floor is the answer the row gives. The rule reads the level of the
per-step estimate Ĝ_t (unbiased for the squared gradient norm, possibly negative), T = step + 1,
with two tests: log-spaced blocks over the whole window (the rate), and a linear-time test of
the last half of the run (a floor).

**Blocks.** The fit window (T_0, T_max], T_0 = (1 − ``WINDOW``)·T_max, is cut into ``BLOCKS``
blocks of equal width in log T (``BLOCKS`` + 1 edges T_0·r^j, r = (T_max/T_0)^(1/BLOCKS)). Per
seed, L_j is the mean of Ĝ_t over block j. For a power law E Ĝ_T = c·T^−β,
L_j/L_{j+1} = r^β in the continuum, whatever c.

**Per seed**, with m the seed's mean Ĝ over the window:

* ``decline_early`` = (L_1 − L_2)/m and ``decline_late`` = (L_3 − L_4)/m: the relative fall of
  the level over two *disjoint* pairs of blocks;
* β = log(L_3/L_4)/log r, the exponent of the level over the late pair; b = β_B − β, β_B the same
  exponent of the bound's class: the smaller of the late-pair exponents of its standard members
  (``BOUND_FORMS``: the increments of T·log(T+1)/√T, 0.378 at T = 1000, and the per-step level
  log(T+1)/√T, 0.338; ``bound_beta`` = 0.338): b ≤ 0 at the rate of some member of the class or
  faster, b > 0 slower than every member;
* ``late_fall``: the fall of the level over the late half (``LATE_START``·T_max, T_max] in linear
  time (``relative_fall``: minus the least-squares slope of Ĝ_t on T there, times the half's
  length, over the half's mean level); ``tail_falls``: the same over (s, T_max] for each start s
  of ``LATE_PARTS`` equal linear sub-windows of the late half (``late_starts``);
* ``tail_excess``: each tail's fall minus the bound's own over the same tail
  (``bound_tail_falls``: the smallest fall of the ``BOUND_FORMS`` there); ``late_excess`` is the first (the whole late half): ≥ 0 at the bound's
  rate or faster, < 0 when the level falls more slowly there than on the bound, as onto a floor;
* ``slowing`` = log(L_2/L_3) − log(L_3/L_4): 0 for a power law, > 0 when the decay slows from the
  middle pair of blocks to the late pair; ``late_shortfall`` = ``late_fall`` − the late fall of
  T^−β (β the seed's own): 0 for a power law, < 0 when the late half falls less than the blocks'
  rate says; ``bend`` = slowing − ``BEND_WEIGHT``·late_shortfall joins the two;
* ``window_fall`` = (mean over the first half of the window − mean over its second half, in
  linear time)/m.

**Seed level**: t-intervals over seeds (``analyses.stats.seeds.seed_interval``) of each figure: at
``level`` (95%) for the declines, the three pairs' exponents, b and the tail falls; the bend's at
``BEND_LEVEL``, the late excess's at ``LATE_LEVEL``, the later tails' excess at ``TAIL_LEVEL``, the
window fall's at ``NO_DECAY_LEVEL``. The flattening tests share one level, ``FLOOR_ALPHA`` (one-sided
5%, Bonferroni): ``BEND_ALPHA`` for the bend, ``TAIL_ALPHA`` for each of the ``LATE_PARTS`` tails.

**Outcome** (``RATE_OUTCOMES``, reason codes ``RATE_REASONS``), in this order:

* ``not testable`` with too short a horizon, too few seeds, or a pair of blocks that rises
  significantly (``rising``: a warm-up peaking inside the window);
* *flattening* is shown when the bend's interval lies above ``BEND_MARGIN`` (reason ``slowing``),
  or the late excess's or a later tail excess's lies below −``LATE_MARGIN`` (``late_flat``); the
  floor start is the first sub-window start s whose tail fall's interval reaches 0 while its
  excess is negative (from s a flat level is not excluded, and the fall is less than the bound's);
* ``falls toward zero at the bound's rate or faster`` (b_hi ≤ 0), ``falls, rate not distinguished
  from the bound's`` (b straddles 0), ``falls, slower than the bound`` (b_lo > 0) when both declines'
  intervals lie above 0 (an intersection–union test: a step or a transient ending anywhere in the
  window leaves one pair flat) and no flattening is shown; ``not testable`` (``transient``) there
  when the lower end of any pair's exponent (early, middle or late) exceeds ``TRANSIENT_BETA`` (a fall
  faster than any rate);
* ``flattens: a floor is not excluded`` (from the floor start, ``floor_from``) when the level fell
  (both declines significant, or the window fall at ``level`` and one decline: two tests, as for
  every word that says the level fell), flattening is shown and a floor start exists;
  before it, ``falls, slower than the bound`` (``still_falling``) when both declines hold, b's
  interval lies above 0, the late half still falls significantly and only the late test (not the
  bend) shows the shortfall: a slow power law, not a floor; after it, the same words when no floor
  start exists and the late test shows the shortfall;
* ``no decay`` when no fall is significant and the window fall's upper end lies below
  ``NO_DECAY_FALL`` (the level falls by less than that share of its mean over the window);
* ``not testable`` otherwise (intervals that hold both a fall and a flat level).

**A fall word carries its resolution** (``floor_caveat``): a floor reached late in the run leaves too
few steps on it for any test at this noise, so every fall word says from which T a floor is not
excluded and the power there: "…; a floor from T = s′ on is not excluded (power p at this noise)".
s′ is the first candidate start (every ``FLOOR_GRID``·T_max from the window's start) at which a floor
would keep the rule off that fall word with less than ``FLOOR_POWER``, computed from the group's own
decay, noise, lag-1 autocorrelation and spread over seeds (``floor_power``); a floor that starts
before s′ reads a fall word in at most 1 − ``FLOOR_POWER`` of groups.

No word says the level falls toward zero from the log blocks alone: the late test can always
veto it. Deterministic. The confusion tables are in docs/THEOREM1.md
(``scripts/rate_confusion.py``).
"""

from __future__ import annotations

import dataclasses
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
    "BEND_LEVEL",
    "BEND_MARGIN",
    "BEND_WEIGHT",
    "BLOCKS",
    "BOUND_FORMS",
    "BOUND_WORDS",
    "DECAYS",
    "FALLS_AT",
    "FALLS_SLOWER",
    "FALLS_UNDISTINGUISHED",
    "FLATTENS",
    "FLOOR_ALPHA",
    "FLOOR_GRID",
    "FLOOR_POWER",
    "MAX_PHI",
    "LATE_LEVEL",
    "LATE_MARGIN",
    "LATE_PARTS",
    "LATE_START",
    "MIN_BLOCK_POINTS",
    "MIN_HORIZON",
    "NO_DECAY",
    "NO_DECAY_FALL",
    "NO_DECAY_LEVEL",
    "NOT_TESTABLE",
    "RATE_OUTCOMES",
    "RATE_REASONS",
    "RATE_SENTENCES",
    "TAIL_LEVEL",
    "TRANSIENT_BETA",
    "WINDOW",
    "WINDOWS",
    "RateDescription",
    "SeedRate",
    "block_edges",
    "bound_beta",
    "bound_late_fall",
    "bound_tail_falls",
    "bound_level",
    "bound_step_level",
    "describe_rate",
    "floor_caveat",
    "floor_power",
    "floor_starts",
    "late_starts",
    "noise_dependence",
    "noise_ratio",
    "rate_from_table",
    "rate_outcome",
    "relative_fall",
    "seed_rate",
]

FALLS_AT = "falls toward zero at the bound's rate or faster"
FALLS_UNDISTINGUISHED = "falls, rate not distinguished from the bound's"
FALLS_SLOWER = "falls, slower than the bound"
FLATTENS = "flattens: a floor is not excluded"
NO_DECAY = "no decay"
NOT_TESTABLE = "not testable"
RATE_OUTCOMES = (FALLS_AT, FALLS_UNDISTINGUISHED, FALLS_SLOWER, FLATTENS, NO_DECAY, NOT_TESTABLE)
DECAYS = RATE_OUTCOMES[:3]
"""The outcomes that say the level falls over the window without a floor shown."""
BOUND_WORDS = RATE_OUTCOMES[:2]
"""The outcomes that say the level falls toward zero at, or not distinguished from, the bound's rate."""
RATE_SENTENCES = {
    FALLS_AT: "falls toward zero at the bound's rate or faster at this horizon",
    FALLS_UNDISTINGUISHED: "falls; its rate is not distinguished from the bound's at this horizon",
    FALLS_SLOWER: "falls, slower than the bound at this horizon",
    FLATTENS: "flattens: a floor is not excluded",
    NO_DECAY: "no decay at this horizon",
    NOT_TESTABLE: "not testable at this horizon",
}
RATE_REASONS = ("no_seed", "short_horizon", "few_seeds", "faster", "undistinguished", "slower", "transient",
                "slowing", "late_flat", "still_falling", "rising", "flat", "ambiguous")
WINDOW = 0.95
"""The fit window: the last 95% of the horizon (T_0 = T_max/20 skips the first steps' warm-up)."""
WINDOWS = (WINDOW,)
BLOCKS = 4
"""Blocks of equal width in log T (five edges): the early pair is blocks 1–2, the late pair blocks 3–4."""
MIN_HORIZON = 500
"""Steps: below this horizon the outcome is ``not testable`` (reason ``short_horizon``)."""
MIN_BLOCK_POINTS = 5
"""A seed needs this many observed steps in every block (and late sub-window) for its figures."""
TRANSIENT_BETA = 1.0
"""Any pair's β_lo above this (early, middle or late): a fall faster than T^−1 in the level is a transient, not a rate."""
BEND_WEIGHT = 0.25
"""The bend = slowing − BEND_WEIGHT × late shortfall: the weight puts the late half's noisier evidence
beside the blocks' (a larger weight adds more noise than signal on the exponential floors)."""
LATE_START = 0.5
"""The late test reads (LATE_START·T_max, T_max]: the last half of the run, in linear time."""
LATE_PARTS = 4
"""Equal linear sub-windows of the late half; their left edges are the candidate floor starts."""
FLOOR_ALPHA = 0.05
"""The flattening test's level under a fall at the bound's rate: one-sided, shared (Bonferroni) by the bend's
test (``BEND_ALPHA``) and the ``LATE_PARTS`` tails' tests (the rest, equally), so that the bound and 1/√T read
"flattens" in at most this share of groups whichever of the tests fires."""
BEND_ALPHA = 0.04
"""The bend's one-sided share of ``FLOOR_ALPHA``: it sees a floor reached by mid-run (an exponential transient)
best; a floor reached later is left to the tails and to a fall word's caveat."""
TAIL_ALPHA = (FLOOR_ALPHA - BEND_ALPHA) / LATE_PARTS
"""Each tail's one-sided share of ``FLOOR_ALPHA`` (0.0025)."""
BEND_LEVEL = 1.0 - 2.0 * BEND_ALPHA
"""Two-sided level of the bend's interval (one-sided ``BEND_ALPHA``): flattening is shown when its lower end
exceeds ``BEND_MARGIN``."""
BEND_MARGIN = 0.02
"""A power law has bend 0 (the bound's own level −0.01): a bend below this is not a flattening."""
LATE_LEVEL = 1.0 - 2.0 * TAIL_ALPHA
"""Two-sided level of the late excess's interval (one-sided ``TAIL_ALPHA``): flattening is shown when its
upper end lies below −``LATE_MARGIN``."""
LATE_MARGIN = 0.02
"""T^−0.338, the bound's class's slowest exponent at T = 1000, has late excess −0.007 against the class's
smallest fall: a shortfall below this is not a floor."""
TAIL_LEVEL = 1.0 - 2.0 * TAIL_ALPHA
"""Two-sided level of each later tail's excess (s > LATE_START·T_max; one-sided ``TAIL_ALPHA`` each):
flattening is shown when one's upper end lies below −``LATE_MARGIN``."""
FLOOR_POWER = 0.95
"""A fall word says from which T a floor is not excluded: the first candidate start at which the tails'
tests would see a floor with less than this power (so a floor that starts earlier is missed in at most
1 − FLOOR_POWER of groups)."""
FLOOR_GRID = 0.025
"""Candidate floor starts for that statement: every FLOOR_GRID·T_max from the window's start to T_max."""
MAX_PHI = 0.99
"""The measured lag-1 autocorrelation is clipped to [0, MAX_PHI] in the floor's power."""
NO_DECAY_FALL = 0.1
""""No decay" needs the window's fall (first half against second half, over the window's mean) below this."""
NO_DECAY_LEVEL = 0.9
"""Two-sided level of the window fall's interval for "no decay" (its upper end: one-sided 5%)."""


def block_edges(horizon: int, window: float = WINDOW, blocks: int = BLOCKS) -> np.ndarray:
    """The ``blocks + 1`` edges T_0·r^j of the window, geometric from (1 − window)·horizon to horizon."""
    if not 0.0 < window < 1.0:
        raise ValueError(f"window must lie in (0, 1), got {window}")
    return np.exp(np.linspace(math.log((1.0 - window) * horizon), math.log(horizon), blocks + 1))


def late_starts(horizon: int) -> np.ndarray:
    """The left edges of the ``LATE_PARTS`` linear sub-windows of (LATE_START·horizon, horizon]."""
    return LATE_START * horizon + np.arange(LATE_PARTS) * (1.0 - LATE_START) * horizon / LATE_PARTS


def _block_means(t: np.ndarray, g: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Mean of ``g`` over each block (e_j, e_{j+1}]; NaN where fewer than ``MIN_BLOCK_POINTS``."""
    which = np.searchsorted(edges, t, side="left") - 1  # block j holds e_j < T ≤ e_{j+1}
    out = np.full(edges.size - 1, math.nan)
    for j in range(out.size):
        part = g[which == j]
        if part.size >= MIN_BLOCK_POINTS:
            out[j] = float(part.mean())
    return out


def relative_fall(t: np.ndarray, g: np.ndarray, start: float) -> float:
    """The level's fall over (start, T_max] in linear time, relative to its mean there: minus the
    least-squares slope of ``g`` on ``t`` times (T_max − start), over the mean of ``g``; NaN with
    fewer than ``MIN_BLOCK_POINTS`` steps or a mean that is not positive."""
    keep = t > start
    x, y = t[keep], g[keep]
    mean = float(y.mean()) if y.size else math.nan
    if y.size < MIN_BLOCK_POINTS or not mean > 0:
        return math.nan
    dx = x - x.mean()
    slope = float((dx * (y - mean)).sum() / (dx * dx).sum())
    return -slope * (float(t[-1]) - start) / mean


def bound_level(t: np.ndarray) -> np.ndarray:
    """E[Ĝ] on the bound's curve at the observed T: increments of T·log(T+1)/√T over the steps."""
    t = np.asarray(t, dtype=float)
    total = np.sqrt(t) * np.log(t + 1.0)
    before = np.concatenate([[0.0], total[:-1]])
    return (total - before) / np.diff(np.concatenate([[0.0], t]))


def bound_step_level(t: np.ndarray) -> np.ndarray:
    """The per-step level log(T+1)/√T: its running mean is about 2·log T/√T, so it is within the bound too."""
    t = np.asarray(t, dtype=float)
    return np.log(t + 1.0) / np.sqrt(t)


BOUND_FORMS = (bound_level, bound_step_level)
"""The standard members of the bound's class C·log T/√T the rule compares against: the increments of
T·log(T+1)/√T and the per-step level log(T+1)/√T. "Slower than the bound" means slower than every one:
the comparator is the slowest-decaying member over the same blocks and tails (``bound_beta``,
``bound_tail_falls``)."""


@functools.lru_cache(maxsize=64)
def bound_beta(horizon: int, window: float = WINDOW) -> float:
    """β_B: the late pair's exponent of the slowest-decaying member of ``BOUND_FORMS`` at T = 1..horizon
    (the smaller of the members' exponents; 0.355 at T = 1000, from log(T+1)/√T)."""
    t = np.arange(1.0, horizon + 1.0)
    edges = block_edges(horizon, window)
    step = math.log(edges[1] / edges[0])
    betas = []
    for form in BOUND_FORMS:
        levels = _block_means(t, form(t), edges)
        betas.append(math.log(levels[-2] / levels[-1]) / step)
    return float(min(betas))


@functools.lru_cache(maxsize=64)
def bound_tail_falls(horizon: int) -> tuple[float, ...]:
    """The bound's own relative fall over (s, horizon] for each of ``late_starts``: the smallest fall of the
    members of ``BOUND_FORMS`` over that tail (the slowest-decaying member's)."""
    t = np.arange(1.0, horizon + 1.0)
    return tuple(min(relative_fall(t, form(t), float(s)) for form in BOUND_FORMS) for s in late_starts(horizon))


def bound_late_fall(horizon: int) -> float:
    """The bound's own ``late_fall`` at T = 1..horizon (0.238 at T = 1000, from log(T+1)/√T)."""
    return bound_tail_falls(horizon)[0]


def _power_late_fall(horizon: int, beta: float) -> float:
    """``late_fall`` of the power law T^−β at T = 1..horizon (NaN for an undefined β)."""
    if not math.isfinite(beta):
        return math.nan
    t = np.arange(1.0, horizon + 1.0)
    return relative_fall(t, t ** -beta, LATE_START * horizon)


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
    late_fall: float = math.nan
    late_excess: float = math.nan
    tail_falls: list[float] = dataclasses.field(default_factory=list)
    window_fall: float = math.nan
    phi: float = math.nan
    late_shortfall: float = math.nan
    tail_excess: list[float] = dataclasses.field(default_factory=list)
    window_mean: float = math.nan  # the mean of Ĝ_t over the window
    beta_mid: float = math.nan  # the middle pair's exponent, log(L_2/L_3)/log r
    noise_sd: float = math.nan  # the residuals' standard deviation (``noise_dependence``), in Ĝ's units

    @property
    def bend(self) -> float:
        """slowing − ``BEND_WEIGHT`` × late shortfall: 0 for a power law, > 0 as the fall settles onto a floor."""
        return self.slowing - BEND_WEIGHT * self.late_shortfall


def noise_ratio(t: np.ndarray, g: np.ndarray, window: float = WINDOW) -> float:
    """Ĝ_t's noise as a multiple of its mean level over the run: the standard deviation of Ĝ_t about
    its 16 sub-block means (in log T) in the window, over the mean of Ĝ_t over every step (the
    convention of the calibration families, ``analyses.theorem1.families``). NaN when the run's mean
    is not positive. Under dependent noise the short sub-blocks absorb part of it: ``noise_dependence``."""
    t, g = np.asarray(t, dtype=float), np.asarray(g, dtype=float)
    edges = block_edges(int(t[-1]), window, blocks=4 * BLOCKS)
    which = np.searchsorted(edges, t, side="left") - 1
    inside = (which >= 0) & (which < edges.size - 1)
    if inside.sum() < 2 * MIN_BLOCK_POINTS or not g.mean() > 0:
        return math.nan
    centred = np.concatenate([g[which == j] - g[which == j].mean() for j in np.unique(which[inside])])
    return float(centred.std(ddof=1) / g.mean())


def noise_dependence(t: np.ndarray, g: np.ndarray, window: float = WINDOW) -> tuple[float, float]:
    """``(noise, phi)`` of one series: the residuals of Ĝ_t about a cubic in log T fitted over the
    window; noise = their standard deviation over the mean of Ĝ_t over every step (the families'
    convention), phi = their lag-1 autocorrelation (an AR(1) coefficient; the steps as observed).
    NaN when undefined."""
    t, g = np.asarray(t, dtype=float), np.asarray(g, dtype=float)
    inside = t > (1.0 - window) * t[-1]
    if inside.sum() < 4 * MIN_BLOCK_POINTS or not g.mean() > 0:
        return math.nan, math.nan
    x = np.log(t[inside])
    basis = np.vander((x - x.mean()) / max(float(x.std()), 1e-12), 4)
    coef, *_ = np.linalg.lstsq(basis, g[inside], rcond=None)
    r = g[inside] - basis @ coef
    sd = float(r.std(ddof=basis.shape[1]))
    phi = float((r[1:] * r[:-1]).sum() / (r * r).sum()) if sd > 0 else math.nan
    return sd / float(g.mean()), phi


def seed_rate(t: np.ndarray, g: np.ndarray, name: str = "", window: float = WINDOW) -> SeedRate:
    """The per-seed figures of one series ``(T, Ĝ_T)`` (T = step + 1, sorted); module docstring."""
    t, g = np.asarray(t, dtype=float), np.asarray(g, dtype=float)
    horizon = int(t[-1])
    edges = block_edges(horizon, window)
    levels = _block_means(t, g, edges)
    inside = (t > edges[0]) & (t <= edges[-1])
    mean = float(g[inside].mean()) if np.isfinite(levels).all() else math.nan
    rel = mean if mean > 0 else math.nan
    step = math.log(edges[1] / edges[0])
    early, late = _log_ratio(levels[0], levels[1]), _log_ratio(levels[2], levels[3])
    beta = late / step
    middle = (edges[0] + edges[-1]) / 2.0
    halves = g[inside & (t <= middle)], g[inside & (t > middle)]
    window_fall = ((halves[0].mean() - halves[1].mean()) / rel
                   if min(h.size for h in halves) >= MIN_BLOCK_POINTS else math.nan)
    late_fall = relative_fall(t, g, LATE_START * horizon)
    noise, phi = noise_dependence(t, g, window)
    tails = [relative_fall(t, g, float(s)) for s in late_starts(horizon)]
    return SeedRate(name, horizon, [float(x) for x in levels], (levels[0] - levels[1]) / rel,
                    (levels[2] - levels[3]) / rel, beta, early / step,
                    bound_beta(horizon, float(window)) - beta, _log_ratio(levels[1], levels[2]) - late, noise,
                    late_fall, late_fall - bound_late_fall(horizon),
                    tails, float(window_fall), phi,
                    late_fall - _power_late_fall(horizon, beta),
                    [x - b for x, b in zip(tails, bound_tail_falls(horizon), strict=True)],
                    mean, _log_ratio(levels[1], levels[2]) / step,
                    noise * float(g.mean()) if math.isfinite(noise) else math.nan)


def _p_positive(values: Sequence[float]) -> float:
    """``analyses.stats.multiplicity.t_test_p`` of mean 0 over the finite per-seed values; NaN below ``MIN_SEEDS``."""
    finite = [v for v in values if math.isfinite(v)]
    p = t_test_p(finite) if len(finite) >= MIN_SEEDS else None
    return math.nan if p is None else p


@dataclass(frozen=True)
class RateFigures:
    """The seed intervals the rule reads (``None``: fewer than ``MIN_SEEDS`` finite values)."""

    decline_early: Interval | None
    decline_late: Interval | None
    beta: Interval | None
    b: Interval | None
    slowing: Interval | None
    late_excess: Interval | None
    window_fall: Interval | None
    tail_falls: Sequence[Interval | None] = ()
    late_shortfall: Interval | None = None
    bend: Interval | None = None
    tail_excess: Sequence[Interval | None] = ()
    window_drop: Interval | None = None  # the window fall at ``level``: whether the level fell
    beta_pairs: Sequence[Interval | None] = ()  # the early and middle pairs' exponents at ``level``


def floor_starts(horizon: int, window: float = WINDOW) -> np.ndarray:
    """The candidate floor starts of a fall word's caveat: every ``FLOOR_GRID``·horizon from the window's start."""
    first = math.ceil((1.0 - window) / FLOOR_GRID - 1e-9)
    return np.arange(first, round(1.0 / FLOOR_GRID)) * FLOOR_GRID * horizon


def floor_power(fits: Sequence[SeedRate], horizon: int, window: float = WINDOW,
                tails: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, power)``: for each candidate start s (``floor_starts``), a lower bound on the chance that
    a floor from s keeps the rule off a fall word, at this group's noise, dependence and spread.

    The alternative level follows the group's own decay, A·T^−β (β the seeds' mean late-pair exponent,
    clipped to [0, ``TRANSIENT_BETA``]; A matching the seeds' mean level over the window), up to s and
    stays flat from s on. A fall word needs both declines' intervals above 0 and (for the bound's words,
    ``tails``) none of the tails' tests firing; each is a necessary condition, so the chance of a fall word
    is at most the smallest of their chances, and the power is one minus it (the bend's test is left out:
    a lower bound). For each figure (the two declines; tail k's excess against −``LATE_MARGIN`` at
    one-sided ``FLOOR_ALPHA``/(1 + ``LATE_PARTS``)) its mean on the alternative's level is set against a
    per-seed standard deviation, the larger of (i) the residual noise propagated to the figure (block
    means, or a least-squares slope over the tail's n steps: √(12/n)), times √((1 + φ)/(1 − φ)) for AR(1)
    noise with the seeds' median lag-1 autocorrelation φ (clipped to [0, ``MAX_PHI``]), and (ii) the
    seeds' own spread of that figure; the test's chance is a non-central t with seeds − 1 degrees of
    freedom. Empty when fewer than ``MIN_SEEDS`` seeds have finite figures."""
    from scipy import stats

    good = [f for f in fits if all(math.isfinite(x) for x in (f.beta, f.window_mean, f.noise_sd, f.decline_early,
                                                               f.decline_late, *f.tail_excess))]
    starts = floor_starts(horizon, window)
    if len(good) < MIN_SEEDS or not starts.size:
        return starts[:0], starts[:0]
    n = len(good)
    root_n = math.sqrt(n)
    beta = min(max(float(np.mean([f.beta for f in good])), 0.0), TRANSIENT_BETA)
    phis = [f.phi for f in good if math.isfinite(f.phi)]
    phi = min(max(float(np.median(phis)) if phis else 0.0, 0.0), MAX_PHI)
    inflate = math.sqrt((1.0 + phi) / (1.0 - phi))
    sd_abs = float(np.median([f.noise_sd for f in good])) * inflate
    t = np.arange(1.0, horizon + 1.0)
    edges = block_edges(horizon, window)
    inside = (t > edges[0]) & (t <= edges[-1])
    scale = float(np.mean([f.window_mean for f in good])) / float(np.mean(t[inside] ** -beta))
    level = scale * np.minimum(t[None, :], starts[:, None]) ** -beta  # one row per candidate start
    window_mean = level[:, inside].mean(axis=1)
    which = np.searchsorted(edges, t, side="left") - 1
    fall_word = np.ones(starts.size)  # an upper bound on the chance of a fall word
    decline_crit = float(stats.t.ppf(1.0 - (1.0 - 0.95) / 2.0, n - 1))
    for key, j in (("decline_early", 0), ("decline_late", 2)):
        a, b = which == j, which == j + 1
        mean = (level[:, a].mean(axis=1) - level[:, b].mean(axis=1)) / window_mean
        sd = np.maximum(sd_abs * math.sqrt(1.0 / a.sum() + 1.0 / b.sum()) / window_mean,
                        float(np.std([getattr(f, key) for f in good], ddof=1)))
        fall_word = np.minimum(fall_word, stats.nct.sf(decline_crit, n - 1, mean / (sd / root_n)))
    if tails:
        crit = float(stats.t.ppf(1.0 - TAIL_ALPHA, n - 1))
        for k, (s, bound_fall) in enumerate(zip(late_starts(horizon), bound_tail_falls(horizon), strict=True)):
            keep = t > s
            x, y = t[keep], level[:, keep]
            dx = x - x.mean()
            mean = y.mean(axis=1)
            fall = -((y - mean[:, None]) @ dx) / float((dx * dx).sum()) * (horizon - float(s)) / mean
            sd = np.maximum(sd_abs / mean * math.sqrt(12.0 / keep.sum()),
                            float(np.std([f.tail_excess[k] for f in good], ddof=1)))
            fires = stats.nct.cdf(-crit, n - 1, (fall - bound_fall + LATE_MARGIN) / (sd / root_n))
            fall_word = np.minimum(fall_word, 1.0 - fires)
    return starts, 1.0 - fall_word


def floor_caveat(fits: Sequence[SeedRate], horizon: int, window: float = WINDOW,
                 tails: bool = True) -> tuple[int | None, float | None]:
    """``(s′, p)`` of a fall word's caveat: the first candidate start whose floor the tails' tests would show
    with less than ``FLOOR_POWER`` (``floor_power``) and that power; ``(None, None)`` when every candidate
    reaches it or the power is undefined."""
    starts, power = floor_power(fits, horizon, window, tails)
    short = np.flatnonzero(power < FLOOR_POWER)
    if not short.size:
        return None, None
    return int(round(float(starts[short[0]]))), float(power[short[0]])


def rate_outcome(figures: RateFigures, starts: Sequence[float], horizon: int, seeds: int,
                 min_horizon: int = MIN_HORIZON) -> tuple[str, str, int | None]:
    """The outcome, its reason code (``RATE_REASONS``) and the floor start (the T from which a floor
    is not excluded; ``None`` unless the outcome is ``FLATTENS``), from the seed intervals. A fall word's
    own caveat (``floor_caveat``) is added by ``describe_rate``."""
    f = figures
    if seeds == 0:
        return NOT_TESTABLE, "no_seed", None
    if horizon < min_horizon:
        return NOT_TESTABLE, "short_horizon", None
    if None in (f.decline_early, f.decline_late, f.beta, f.b, f.late_excess, f.window_fall):
        return NOT_TESTABLE, "few_seeds", None
    if f.decline_late.high < 0 or f.decline_early.high < 0:
        return NOT_TESTABLE, "rising", None
    falls = f.decline_early.low > 0 and f.decline_late.low > 0
    fell = falls or (f.window_drop is not None and f.window_drop.low > 0
                     and (f.decline_early.low > 0 or f.decline_late.low > 0))
    slowing = f.bend is not None and f.bend.low > BEND_MARGIN
    tail_flat = any(iv is not None and iv.high < -LATE_MARGIN for iv in f.tail_excess[1:])
    late_flat = tail_flat or f.late_excess.high < -LATE_MARGIN
    floor_from = next((int(round(s)) for s, fall, excess in zip(starts, f.tail_falls, f.tail_excess, strict=True)
                       if fall is not None and excess is not None and fall.low <= 0 and excess.estimate < 0), None)
    if falls and not (slowing or late_flat):
        if any(iv is not None and iv.low > TRANSIENT_BETA for iv in (f.beta, *f.beta_pairs)):
            return NOT_TESTABLE, "transient", None
        if f.b.low > 0:
            return FALLS_SLOWER, "slower", None
        if f.b.high <= 0:
            return FALLS_AT, "faster", None
        return FALLS_UNDISTINGUISHED, "undistinguished", None
    still = bool(f.tail_falls) and f.tail_falls[0] is not None and f.tail_falls[0].low > 0
    if falls and late_flat and not slowing and f.b.low > 0 and still:
        return FALLS_SLOWER, "still_falling", None
    if fell and (slowing or late_flat) and floor_from is not None:
        return FLATTENS, "late_flat" if late_flat else "slowing", floor_from
    if falls and (late_flat or f.b.low > 0):
        return FALLS_SLOWER, "still_falling", None
    if not fell and f.window_fall.high < NO_DECAY_FALL:
        return NO_DECAY, "flat", None
    return NOT_TESTABLE, "ambiguous", None


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
    noise: float | None  # median over seeds of ``noise_dependence``'s noise
    p_value: float | None  # two-sided p of the test that decided the outcome; None when undecided
    per_seed: list[SeedRate]
    level: float = 0.95
    late_excess: Interval | None = None
    window_fall: Interval | None = None
    tail_falls: list[Interval | None] = dataclasses.field(default_factory=list)
    starts: list[float] = dataclasses.field(default_factory=list)
    floor_from: int | None = None  # FLATTENS: the T from which a floor is not excluded
    bound_late_fall: float | None = None
    phi: float | None = None  # median over seeds of the residuals' lag-1 autocorrelation
    bend: Interval | None = None
    tail_excess: list[Interval | None] = dataclasses.field(default_factory=list)
    floor_after: int | None = None  # a fall word's caveat: a floor from this T on is not excluded
    floor_power: float | None = None  # the tails' power to show a floor from ``floor_after`` (below FLOOR_POWER)

    def __post_init__(self) -> None:
        if self.outcome not in RATE_OUTCOMES:
            raise ValueError(f"rate outcome must be one of {RATE_OUTCOMES}, got {self.outcome!r}")
        if self.reason not in RATE_REASONS:
            raise ValueError(f"rate reason must be one of {RATE_REASONS}, got {self.reason!r}")
        if (self.outcome == FLATTENS) != (self.floor_from is not None):
            raise ValueError("floor_from is set exactly when the outcome is a floor")
        if self.floor_after is not None and self.outcome not in DECAYS:
            raise ValueError("floor_after is a fall word's caveat")

    @property
    def sentence(self) -> str:
        """The outcome's words with the caveat that applies (the floor's start)."""
        return outcome_words(self.outcome, self.floor_from, self.floor_after, self.floor_power)

    @property
    def decays(self) -> bool:
        return self.outcome in DECAYS

    def to_cli(self) -> dict:
        """``rate: {outcome, sentence, reason, floor_from, beta, b, declines, late_excess, ...}``."""
        def iv(x: Interval | None, values: list[float]) -> dict:
            return interval_dict(x, finite_mean(values), x.level if x is not None else self.level)
        seeds = self.per_seed
        return {
            "outcome": self.outcome, "sentence": self.sentence, "reason": self.reason, "floor_from": self.floor_from,
            "floor_after": self.floor_after, "floor_power": self.floor_power,
            "beta": iv(self.beta, [s.beta for s in seeds]), "b": iv(self.b, [s.b for s in seeds]),
            "decline_early": iv(self.decline_early, [s.decline_early for s in seeds]),
            "decline_late": iv(self.decline_late, [s.decline_late for s in seeds]),
            "slowing": iv(self.slowing, [s.slowing for s in seeds]),
            "bend": iv(self.bend, [s.bend for s in seeds]),
            "late_excess": iv(self.late_excess, [s.late_excess for s in seeds]),
            "window_fall": iv(self.window_fall, [s.window_fall for s in seeds]),
            "tail_falls": [{"from": s, **iv(x, [p.tail_falls[j] for p in seeds if p.tail_falls])}
                           for j, (s, x) in enumerate(zip(self.starts, self.tail_falls, strict=True))],
            "bound_beta": self.bound_beta, "bound_late_fall": self.bound_late_fall, "noise": self.noise,
            "phi": self.phi, "p_value": self.p_value, "horizon": self.horizon, "seeds": self.seeds,
            "window": self.window, "edges": self.edges, "column": self.column,
            "per_seed": [{"name": s.name, "beta": finite_or_none(s.beta), "b": finite_or_none(s.b),
                          "late_excess": finite_or_none(s.late_excess),
                          "levels": [finite_or_none(x) for x in s.levels], "horizon": s.horizon} for s in seeds],
        }


def outcome_words(outcome: str, floor_from: int | None = None, floor_after: int | None = None,
                  floor_power: float | None = None) -> str:
    """The report's words for an outcome: the floor's start is part of a floor's words; a fall word carries
    the rule's resolution, the T from which a floor is not excluded and the tails' power to show one there."""
    if outcome == FLATTENS and floor_from is not None:
        return f"{RATE_SENTENCES[FLATTENS]} from T = {floor_from}"
    if outcome in DECAYS and floor_after is not None:
        power = "" if floor_power is None else f" (power {floor_power:.2f} at this noise)"
        return (f"{RATE_SENTENCES[outcome].removesuffix(' at this horizon')} over T < {floor_after}; "
                f"a floor from T = {floor_after} on is not excluded{power}")
    return RATE_SENTENCES[outcome]


def _decisive_p(outcome: str, reason: str, fits: list[SeedRate]) -> float:
    """The p-value of the test behind ``outcome``: the larger of the two declines' (a fall, an
    intersection–union test), the late excess's or the slowing's (a floor), the window fall's
    against ``NO_DECAY_FALL`` (no decay); NaN when undecided."""
    if outcome in DECAYS:
        return max(_p_positive([f.decline_early for f in fits]), _p_positive([f.decline_late for f in fits]))
    if outcome == FLATTENS:
        key = "late_excess" if reason == "late_flat" else "bend"
        return _p_positive([getattr(f, key) for f in fits])
    if outcome == NO_DECAY:
        return _p_positive([f.window_fall - NO_DECAY_FALL for f in fits])
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
    Guarantees: ``outcome`` in ``RATE_OUTCOMES``; a word that the level falls toward zero only when
    the late test shows no flattening; a fall word carries ``floor_after`` and ``floor_power``
    (``floor_caveat``) where the power is defined; intervals are ``seed_interval`` of the finite per-seed values
    (``None`` below ``MIN_SEEDS``, point estimates kept); deterministic."""
    names = list(names) if names is not None else [f"seed {i}" for i in range(len(series))]
    horizon = min((int(np.asarray(t)[-1]) for t, _ in series), default=0)
    fits = []
    if horizon >= max(min_horizon, 2 * BLOCKS * MIN_BLOCK_POINTS / window):
        for (t, g), name in zip(series, names, strict=True):
            keep = np.asarray(t) <= horizon
            fits.append(seed_rate(np.asarray(t)[keep], np.asarray(g)[keep], name, window))
    intervals = {key: seed_interval([getattr(f, key) for f in fits], level)
                 for key in ("decline_early", "decline_late", "beta", "b")}
    starts = late_starts(horizon).tolist() if fits else []
    figures = RateFigures(
        **intervals, slowing=seed_interval([f.slowing for f in fits], BEND_LEVEL),
        late_excess=seed_interval([f.late_excess for f in fits], LATE_LEVEL),
        late_shortfall=seed_interval([f.late_shortfall for f in fits], LATE_LEVEL),
        tail_excess=[seed_interval([f.tail_excess[j] for f in fits], TAIL_LEVEL) for j in range(len(starts))],
        bend=seed_interval([f.bend for f in fits], BEND_LEVEL),
        window_fall=seed_interval([f.window_fall for f in fits], NO_DECAY_LEVEL),
        window_drop=seed_interval([f.window_fall for f in fits], level),
        tail_falls=[seed_interval([f.tail_falls[j] for f in fits], level) for j in range(len(starts))],
        beta_pairs=[seed_interval([getattr(f, key) for f in fits], level) for key in ("beta_early", "beta_mid")])
    outcome, reason, floor_from = rate_outcome(figures, starts, horizon, len(series), min_horizon)
    floor_after, power = floor_caveat(fits, horizon, window, outcome in BOUND_WORDS) if outcome in DECAYS else (None, None)

    def median(key: str) -> float | None:
        values = [getattr(f, key) for f in fits if math.isfinite(getattr(f, key))]
        return float(np.median(values)) if values else None

    return RateDescription(
        label=label, column=column, outcome=outcome, reason=reason, horizon=horizon, seeds=len(series),
        window=float(window), edges=block_edges(horizon, window).tolist() if fits else [], **intervals,
        slowing=figures.slowing, beta_point=finite_or_none(finite_mean([f.beta for f in fits])),
        b_point=finite_or_none(finite_mean([f.b for f in fits])),
        bound_beta=bound_beta(horizon, float(window)) if fits else None, noise=median("noise"),
        p_value=finite_or_none(_decisive_p(outcome, reason, fits)), per_seed=fits, level=level,
        late_excess=figures.late_excess, window_fall=figures.window_fall, tail_falls=list(figures.tail_falls),
        starts=starts, floor_from=floor_from, bound_late_fall=bound_late_fall(horizon) if fits else None,
        phi=median("phi"), bend=figures.bend, tail_excess=list(figures.tail_excess), floor_after=floor_after,
        floor_power=power)


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
