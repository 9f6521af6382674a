"""Theorem 1 (b): does the drift at the step actually taken sum within O(Σ η_t²) along the run?

Lemma 4 telescopes the surrogate and needs the drift at the step taken (c = 1) to add up like
Σ η_t² along the run. With drift(c) = c·a_t + O(c²) at the scaled iterate ω^t, the order at a
fixed iterate (``analyses.assumption5.drift_order``) says only whether a_t ≠ 0; what the sum needs
is how a_t shrinks as η_t does. With η_t ∝ 1/√t and |a_t| ∝ η_t^s, Σ a_t = O(Σ η_t²) needs s ≥ 2:
a_t = 0.5·η_t² is first order at every iterate and within the budget; a_t = 0.5·η_t is not.
That threshold belongs to the theorem's schedule; the run's schedule exponent q (η_t ∝ (t+1)^(−q),
minus the slope of log η_t on log(t+1) over the fitted steps, the seeds' median) picks it
(``needed_slope``): 2 for q ≤ ½ + ``SCHEDULE_TOL``, else 1/q strictly (Σ η_t² converges, and
Σ η_t^s is bounded iff s·q > 1), where an interval holding 1/q reads not distinguished.

Per seed, at its scaled steps in step order (the ``scaling`` probe's drift(c), or φ(c), which has
the same limit, where drift(c) was not logged):

* a_t = the Richardson limit of drift(c)/c (``analyses.assumption5.step_limits``): zero where the
  limit is zero at the design's resolution (a second-order drift), dropped where unresolved;
* the switch-on: the resolved steps before the first non-zero a_t are left out (a_t = 0 there adds
  nothing to the sum; zeros are never fitted as small values at large η_t);
* the warm-up, from the data: the steps from the switch-on are cut into ``RISE_BLOCKS`` blocks (of
  at least ``MIN_BLOCK_STEPS``); the peak is the first block that no later block exceeds by more
  than ``RISE``. With the peak at the first block the fit starts after the first ``BURN_IN`` of
  ``BLOCKS`` blocks; a peak in the second half is no warm-up but a late rise (no slope); with a
  later peak in the first half |a_t| still rose, and the fit starts where η_t has fallen
  by ``SETTLE`` from the end of the peak block (a warm-up keeps bending a_t after its peak). Fewer
  than ``BLOCKS`` − ``BURN_IN`` blocks of ``MIN_BLOCK_STEPS`` left: the warm-up eats the run (no s);
* the fitted steps are cut into blocks of equal counts (``BLOCKS`` − ``BURN_IN`` of them); each
  gives a robust mean of r_t = |a_t|/η_t² (the share of non-zero values times the mean of the
  non-zero ones after dropping the largest ``TRIM`` share, at least one value: one outlier does
  not drag it) and the geometric mean of η_t over the same non-zero steps;
* a late rise: fitted blocks in the second half that all lie more than ``RISE`` above the line of
  log r on log η through the blocks before them mark the seed (``_late_rise``), and the slope
  over the blocks before them is kept beside the slope over all;
* s = 2 + the least-squares slope of log(block r) on log(block η) over the blocks with a
  positive statistic (at least ``MIN_BLOCKS``; else undefined), and its climb (the slope over the
  later half of those blocks minus that over the earlier half). Fitting r_t rather than |a_t| keeps a
  coefficient that shrinks exactly like η_t² at s = 2 whatever the block statistic; a seed whose
  fitted a_t are all zero has no s and is second order after the warm-up;
* the witness w: the same slope for the positive part of the drift at c = 1, max(drift(1), 0),
  the step actually taken (its pathwise budget D⁺ against Σ η_t², per block of steps).

Over the seeds with at least ``analyses.assumption5.step_limits.MIN_STEPS`` resolved scaled steps
(t-interval [L, H] of s over seeds, ``analyses.stats.seeds.seed_interval``; ``SUM_OUTCOMES``), with
the run's resolution: a slope s bends r_t over the fitted window by (η_first/η_last)^(2 − s)
(η_first/η_last the seeds' median ratio of the first to the last fitted block's η), and a bend
below ``RUN_GROWTH`` is not told from none (a warm-up's tail gives as much; T^(1 − s/2) and log T
look alike on the run):

* ``within Σ η_t² along the run`` — every counted seed second order after the warm-up (every step
  resolved); or L ≥ 2; or H ≥ 2 > L with L's bend below ``RUN_GROWTH`` (an interval below 2 by
  no more than a bend of 2·``RESOLUTION`` counts as holding 2: the limit's own resolution);
* ``not within Σ η_t² along the run`` — H < 2 with H's bend at least ``RUN_GROWTH``;
* ``not distinguished`` — H < 2 with H's bend below ``RUN_GROWTH`` (the run is too short to tell),
  or H ≥ 2 > L with L's bend at least ``RUN_GROWTH``; or at least half the seeds rise late and their
  slopes before the rise (the others' slopes beside them) do not read not within, or fewer than
  ``MIN_SEEDS`` slopes with some seed rising late (``late_rise``: a rise only adds to the sum, and
  its continuation decides it);
  or not within with the lower end of the seeds' interval of the climb above ``CLIMB``
  (``slope_climbs``: a fading rise, a warm-up's tail);
* ``not testable`` — fewer than ``MIN_SEEDS`` counted seeds, fewer than ``MIN_SEEDS`` slopes when
  some seed has a non-zero a_t (``warm_up`` when some seed's warm-up ate its run), or no
  non-zero a_t but some step unresolved.

The threshold is 2 itself (``SLOPE_MARGIN`` = 0); the resolution is stated in the row as the bend
at the interval's deciding end (``DriftSum.growth``) and the fitted η range (``DriftSum.eta_ratio``).
The witness w is decided the same way (``WITNESS_OUTCOMES``) and shown beside; it never changes
the outcome (a second-order drift whose size warms up makes it outgrow Σ η_t² while s says
nothing is first order); it reads ``within`` also when no counted seed has a positive drift at
c = 1 after the warm-up. ``p_value`` is the one-sample t-test of s = 2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.assumption5.data import ScalingRun, scaling_run
from analyses.assumption5.step_limits import (
    MIN_STEPS,
    RESOLUTION,
    phi_prime,
    step_signs,
    table_of,
)
from analyses.results import Interval
from analyses.stats.multiplicity import t_test_p
from analyses.stats.seeds import MIN_SEEDS, seed_interval

__all__ = ["BLOCKS", "BURN_IN", "CLIMB", "MIN_BLOCKS", "MIN_BLOCK_STEPS", "NEEDED_SLOPE", "RISE", "RISE_BLOCKS", "SCHEDULE", "SCHEDULE_TOL", "SETTLE", "RUN_GROWTH",
           "SLOPE_MARGIN", "SUM_OUTCOMES", "TRIM", "WITNESS_OUTCOMES", "DriftSum", "SeedDriftSum", "agreement", "needed_slope",
           "drift_sum", "seed_drift_sum", "seed_drift_sum_from_frame", "seed_drift_sum_of"]

WITHIN, NOT_WITHIN = "within Σ η_t² along the run", "not within Σ η_t² along the run"
SUM_OUTCOMES: tuple[str, ...] = (WITHIN, NOT_WITHIN, "not distinguished", "not testable")
WITNESS_OUTCOMES: tuple[str, ...] = ("within", "outgrows", "not distinguished", "not testable")
NEEDED_SLOPE = 2.0
"""With η_t ∝ 1/√t, Σ a_t = O(Σ η_t²) needs |a_t| to shrink like η_t^s with s at least this."""
SLOPE_MARGIN = 0.0
"""No margin below 2: the seed interval of s is compared with 2 − 0 = 2 itself."""
RUN_GROWTH = 1.1
"""The run's resolution, as a bend of |a_t|/η_t² over the fitted window's η range: a slope s bends
it by (η_first/η_last)^(2 − s). A bend below this factor is what the tail of a warm-up too short to
show a rise leaves (a_t = 0.5·η_t²·(1 − e^(−(t+1)/3))² bends it by 1.085 over blocks 2–5 of 31
steps) and what the run cannot tell from none (T^(1 − s/2) from log T). An interval of s that
holds 2 reads within when its lower end bends it by less; one below 2 reads not within only when
its upper end bends it by at least this, else not distinguished."""
BLOCKS = 5
"""Blocks of equal step counts per seed (from the switch-on)."""
BURN_IN = 1
"""Leading blocks always left out as the warm-up (LoRA starts at B = 0)."""
MIN_BLOCKS = 3
"""Fitted blocks with a positive statistic that a slope needs."""
MIN_BLOCK_STEPS = 3
"""Steps each block needs; fewer after the warm-up and the warm-up eats the run."""
TRIM = 0.2
"""Share of the largest non-zero values of a block dropped before its mean (at least one from 3 values on)."""
RISE_BLOCKS = 10
"""Finer blocks (of at least ``MIN_BLOCK_STEPS`` steps) on which the warm-up's rise is looked for."""
RISE = 0.25
"""A block statistic rises when a later block exceeds it by more than this fraction."""
CLIMB = 0.15
"""A "not within" slope whose local value climbs by more than this from the earlier to the later half of
the fitted blocks (the lower end of the seeds' interval of the climb) reads not distinguished: |a_t|/η_t² still rises but ever more
slowly, as the tail of a warm-up does (t/(t+3) climbs 0.23 on 31 steps, t/(t+10) 0.42, while a power
law keeps its slope: within ±0.02), and the run cannot tell whether it keeps rising."""
SCHEDULE = 0.5
"""The theorem's schedule η_t = η_0/√(t+1): η_t ∝ (t+1)^(−q) with q = ½."""
SCHEDULE_TOL = 0.05
"""A measured exponent q within ½ ± this is the theorem's schedule."""
SETTLE = 2.0
"""After a rise, the fit starts where η_t has fallen by this factor from the end of the peak block
(with η_t ∝ 1/√t: four times the peak's step count)."""


@dataclass(frozen=True)
class SeedDriftSum:
    """One seed: the slope s of |a_t| and the witness w of max(drift(1), 0) on η_t (NaN when undefined)."""

    run: str
    slope: float
    witness: float
    n_steps: int
    n_resolved: int
    n_nonzero: int  # non-zero a_t after the warm-up
    n_unresolved_late: int  # unresolved a_t after the warm-up
    source: str  # "drift" or "phi"
    no_positive_drift: bool = False  # max(drift(1), 0) = 0 at every step after the warm-up
    n_warm: int = 0  # leading resolved steps of a_t left out: zeros before the switch-on and the warm-up
    warm_eats: bool = False  # the warm-up (switch-on, a rise and its settling) leaves too few steps to fit
    eta_ratio: float = math.nan  # η of the first fitted block over η of the last (geometric block means)
    schedule: float = math.nan  # q: minus the slope of log η_t on log(t+1) over the fitted steps (NaN: no steps)
    late_rise: bool = False  # |a_t| peaks in the second half, or |a_t|/η_t² rises over the last fitted blocks
    climb: float = math.nan  # the local slope of s over the later fitted blocks minus that over the earlier ones
    before_rise: float = math.nan  # the slope over the fitted blocks before a late rise (NaN: |a_t| peaks late)


@dataclass(frozen=True)
class DriftSum:
    """The outcome over seeds: s's interval, the witness's, the words and the run's resolution."""

    seeds: list[SeedDriftSum]
    n_counted: int
    slope: Interval | None
    witness: Interval | None
    outcome: str
    reason: str
    witness_outcome: str
    p_value: float | None
    eta_ratio: float | None = None  # median over the seeds with a slope of their fitted η range
    growth: float | None = None  # (eta_ratio)^(threshold − the interval's end the reason names): |a_t|/η_t² bend
    schedule: float | None = None  # median q over the counted seeds (η_t ∝ (t+1)^(−q)); None without steps
    threshold: float = NEEDED_SLOPE  # the s the sum needs on this schedule (``needed_slope``)


@dataclass(frozen=True)
class _Fit:
    slope: float = math.nan
    all_zero: bool = False  # no non-zero value, or every fitted block statistic is zero
    eaten: bool = False  # the warm-up leaves too few steps to fit
    start: int = 0  # index (among the finite values) of the first fitted step
    eta_ratio: float = math.nan
    late_rise: bool = False
    climb: float = math.nan  # the slope over the later half of the fitted blocks minus that over the earlier half
    before: float = math.nan  # the slope over the blocks before a late rise (the slope itself without one)


def _robust_mean(x: np.ndarray) -> float:
    """The mean of ``x`` after dropping its largest ``TRIM`` share (at least one value from 3 on)."""
    x = np.sort(x)
    drop = max(int(TRIM * x.size), 1 if x.size >= 3 else 0)
    return float(x[:x.size - drop].mean())


def _blocks(eta: np.ndarray, size: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    """Per block of ``n`` equal step counts: (η, statistic of |a_t|, statistic of |a_t|/η_t², indices).

    A statistic is the share of non-zero values times their trimmed mean (zeros add nothing to the
    sum; the largest values are dropped so one outlier does not drag it); η is the geometric mean of
    η_t over the same non-zero steps (over the block's when every value is zero)."""
    idx = np.array_split(np.arange(eta.size), n)
    g, m, r = [], [], []
    for i in idx:
        nonzero = i[size[i] > 0]
        g.append(float(np.exp(np.log(eta[nonzero if nonzero.size else i]).mean())))
        share = nonzero.size / i.size
        m.append(0.0 if nonzero.size == 0 else share * _robust_mean(size[nonzero]))
        r.append(0.0 if nonzero.size == 0 else share * _robust_mean(size[nonzero] / eta[nonzero] ** 2))
    return np.array(g), np.array(m), np.array(r), idx


def _late_rise(g: np.ndarray, r: np.ndarray) -> int:
    """The first fitted block of a rise over the last blocks, or ``r.size`` when there is none.

    Block k (in the second half, with at least ``MIN_BLOCKS`` positive blocks before it, so that the
    slope before it is still fitted) starts a late rise
    when every block from k on exceeds the power law through the blocks before it (the line of
    log r on log η, extrapolated) by more than ``RISE``. A power law, however steep, follows its own
    line and never rises late; a coefficient that is flat and then ramps up at the end does."""
    n = r.size
    for k in range(max((n + 1) // 2, MIN_BLOCKS), n):
        before = r[:k] > 0
        if before.sum() < MIN_BLOCKS or np.ptp(np.log(g[:k][before])) == 0 or not (r[k:] > 0).all():
            continue
        line = np.polyfit(np.log(g[:k][before]), np.log(r[:k][before]), 1)
        if (np.log(r[k:]) - np.polyval(line, np.log(g[k:])) > math.log1p(RISE)).all():
            return k
    return n


def _line(g: np.ndarray, r: np.ndarray) -> _Fit:
    """s = 2 + the slope of log(block statistic of |a_t|/η_t²) on log(block η) over the positive blocks,
    and its climb."""
    keep = r > 0
    if not keep.any():
        return _Fit(all_zero=True)
    if keep.sum() < MIN_BLOCKS or np.ptp(np.log(g[keep])) == 0:
        return _Fit()
    x, y = np.log(g[keep]), np.log(r[keep])
    slope = NEEDED_SLOPE + float(np.polyfit(x, y, 1)[0])
    climb = math.nan
    if x.size >= 4:  # the local slope in each half: a power law keeps it, a fading rise climbs
        h = x.size // 2
        climb = float(np.polyfit(x[h:], y[h:], 1)[0] - np.polyfit(x[:h], y[:h], 1)[0])
    return _Fit(slope, eta_ratio=float(g[keep][0] / g[keep][-1]), climb=climb, before=slope)


def _fit_blocks(g: np.ndarray, r: np.ndarray) -> _Fit:
    """``_line`` over every fitted block, with the slope before a late rise (``_late_rise``) beside it."""
    late = _late_rise(g, r)
    found = _line(g, r)
    if late == r.size:
        return found
    return _Fit(found.slope, found.all_zero, eta_ratio=found.eta_ratio, late_rise=True, climb=found.climb,
                before=_line(g[:late], r[:late]).slope)


def _fit(eta: np.ndarray, size: np.ndarray) -> _Fit:
    """The slope of log block statistic on log block η after the switch-on and the warm-up (module docstring)."""
    keep = np.isfinite(size)
    eta, size = eta[keep], size[keep]
    if eta.size and not (size > 0).any():
        return _Fit(all_zero=True, start=int(eta.size))
    on = int(np.argmax(size > 0)) if eta.size else 0
    eta, size = eta[on:], size[on:]
    if eta.size < BLOCKS * MIN_BLOCK_STEPS:
        return _Fit(eaten=on > 0, start=on)
    fine = min(RISE_BLOCKS, eta.size // MIN_BLOCK_STEPS)
    _, m, _, fine_idx = _blocks(eta, size, fine)
    peak = next(k for k in range(fine) if k == fine - 1 or m[k] * (1.0 + RISE) >= m[k + 1:].max())
    if 2 * peak >= fine:  # |a_t| peaks in the second half: no warm-up to leave out, a rise at the end
        return _Fit(start=on, late_rise=True)
    if peak == 0:
        g, _, r, idx = _blocks(eta, size, BLOCKS)
        found = _fit_blocks(g[BURN_IN:], r[BURN_IN:])
        return _Fit(found.slope, found.all_zero, False, on + int(idx[BURN_IN][0]), found.eta_ratio, found.late_rise,
                    found.climb, found.before)
    settled = eta[fine_idx[peak][-1]] / SETTLE
    first = int(np.argmax(eta <= settled)) if (eta <= settled).any() else eta.size
    rest = BLOCKS - BURN_IN
    if eta.size - first < rest * MIN_BLOCK_STEPS:
        return _Fit(eaten=True, start=on + first)
    g, _, r, _ = _blocks(eta[first:], size[first:], rest)
    found = _fit_blocks(g, r)
    return _Fit(found.slope, found.all_zero, False, on + first, found.eta_ratio, found.late_rise, found.climb,
                found.before)


def _schedule(steps: np.ndarray | None, lr: np.ndarray, first: int) -> float:
    """q = minus the least-squares slope of log η_t on log(t + 1) over the steps from ``first`` on."""
    if steps is None:
        return math.nan
    t, eta = np.asarray(steps, float)[first:], lr[first:]
    ok = np.isfinite(t) & (t >= 0) & np.isfinite(eta) & (eta > 0)
    if ok.sum() < 2 or np.ptp(np.log(t[ok] + 1.0)) == 0:
        return math.nan
    return -float(np.polyfit(np.log(t[ok] + 1.0), np.log(eta[ok]), 1)[0])


def needed_slope(q: float | None) -> tuple[float, bool]:
    """(the s that Σ |a_t| = O(Σ η_t²) needs when η_t ∝ (t+1)^(−q), whether s equal to it fails).

    q ≤ ½ (within ``SCHEDULE_TOL`` of ½ counts as ½, and an unknown q is taken as the theorem's ½):
    Σ η_t² grows (like T^(1−2q), or log T at ½) and Σ η_t^s keeps up with it iff s ≥ 2. q > ½: Σ η_t²
    converges, so "within" means a bounded sum, and Σ η_t^s converges iff s·q > 1: s > 1/q, strictly
    (s = 1/q grows like log T)."""
    if q is None or not math.isfinite(q) or q <= SCHEDULE + SCHEDULE_TOL:
        return NEEDED_SLOPE, False
    return 1.0 / q, True


def seed_drift_sum(run: str, c: Sequence[float], lr: np.ndarray, drift: np.ndarray, source: str = "drift",
                   steps: np.ndarray | None = None) -> SeedDriftSum:
    """One seed from η_t and drift(c) [steps, factors] at its scaled steps in step order (module docstring);
    ``steps`` (the training steps t) give the schedule's exponent q over the fitted steps."""
    c = np.asarray(c, dtype=float)
    lr, drift = np.asarray(lr, dtype=float), np.atleast_2d(np.asarray(drift, dtype=float))
    signs = step_signs(c, drift)
    with np.errstate(invalid="ignore", divide="ignore"):
        limit = phi_prime(c, drift)[0]
    a = np.where(np.isnan(signs), np.nan, np.where(signs == 0, 0.0, np.abs(limit)))
    at_one = np.clip(drift[:, int(np.argmax(c))], 0.0, None)
    fit = _fit(lr, a)
    witness = _fit(lr, at_one)
    resolved = np.flatnonzero(np.isfinite(a))
    if resolved.size and (a[resolved] > 0).any():
        first = int(resolved[fit.start]) if fit.start < resolved.size else lr.size
    else:  # second order at every resolved step: the first block is the warm-up
        first = int(np.array_split(np.arange(lr.size), BLOCKS)[BURN_IN][0]) if lr.size >= BLOCKS else lr.size
    late = a[first:]
    return SeedDriftSum(run, fit.slope, witness.slope, int(lr.size), int(np.isfinite(signs).sum()),
                        int(np.sum(np.isfinite(late) & (late > 0))), int(np.isnan(late).sum()), source,
                        witness.all_zero, int(min(fit.start, resolved.size)), fit.eaten, fit.eta_ratio,
                        _schedule(steps, lr, min(first, lr.size)), fit.late_rise, fit.climb, fit.before)


def seed_drift_sum_of(data: ScalingRun) -> SeedDriftSum:
    """``seed_drift_sum`` from a run's ``scaling`` probe and ``train/lr`` (drift(c) where logged, else φ(c))."""
    run = data.run
    c, phi, _ = table_of(data.actual, data.objective, run)
    rows = data.actual.rows
    order = np.argsort(data.steps[rows], kind="stable")
    lr = data.lr[rows][order] if data.lr is not None else None
    if lr is None:
        return SeedDriftSum(run, math.nan, math.nan, len(phi), 0, 0, 0, "phi")
    steps = data.steps[rows][order]
    if data.drift is not None:
        return seed_drift_sum(run, c, lr, data.drift[rows][order], "drift", steps)
    return seed_drift_sum(run, c, lr, phi[order], "phi", steps)


def seed_drift_sum_from_frame(frame: pd.DataFrame, obj: str, run: str) -> SeedDriftSum:
    """``seed_drift_sum_of`` a run's metrics (``analyses.assumption5.data.scaling_run``)."""
    return seed_drift_sum_of(scaling_run(frame, obj, run))


def _decide(x: Interval | None, ratio: float, words: tuple[str, str], threshold: float = NEEDED_SLOPE,
            strict: bool = False) -> tuple[str, str, float | None]:
    """(outcome, reason, bend of |a_t|/η_t² over the fitted η range at the interval's end that decides).

    ``strict``: s equal to ``threshold`` is not within (η_t falling faster than 1/√t), so an interval
    that holds the threshold is not distinguished."""
    threshold -= SLOPE_MARGIN
    if x is None:
        return "not testable", "few_slopes", None
    below = ratio ** (threshold - x.high)
    if x.high < threshold and below > 1.0 + 2.0 * RESOLUTION:  # more than the limit's resolution bends it
        return (words[1], "slope_below", below) if below >= RUN_GROWTH else ("not distinguished",
                                                                              "slope_below_short", below)
    if x.low > threshold or (x.low >= threshold and not strict):
        return words[0], "slope_above", None
    bend = ratio ** (threshold - x.low)
    if strict:
        return "not distinguished", "slope_at_threshold", bend
    return (words[0], "slope_holds", bend) if bend < RUN_GROWTH else ("not distinguished", "slope_straddles", bend)


def _ratio(seeds: Sequence[SeedDriftSum], slopes: Sequence[float]) -> float:
    ratios = [s.eta_ratio for s, x in zip(seeds, slopes, strict=True) if math.isfinite(x) and math.isfinite(s.eta_ratio)]
    return float(np.median(ratios)) if ratios else math.nan


def drift_sum(seeds: Sequence[SeedDriftSum], level: float = 0.95, *, min_steps: int = MIN_STEPS,
              min_seeds: int = MIN_SEEDS) -> DriftSum:
    """The outcome over the counted seeds (module docstring)."""
    seeds = list(seeds)
    counted = [s for s in seeds if s.n_resolved >= min_steps]
    qs = [s.schedule for s in counted if math.isfinite(s.schedule)]
    q = float(np.median(qs)) if qs else None
    threshold, strict = needed_slope(q)
    slopes = [s.slope for s in counted]
    slope = seed_interval(slopes, level, min_seeds=min_seeds)
    witness = seed_interval([s.witness for s in counted], level, min_seeds=min_seeds)
    witness_outcome = _decide(witness, _ratio(counted, [s.witness for s in counted]), ("within", "outgrows"),
                              threshold, strict)[0]
    if counted and all(s.no_positive_drift for s in counted):
        witness_outcome = "within"
    p = t_test_p(slopes, threshold - SLOPE_MARGIN) if slope is not None else None
    ratio = _ratio(counted, slopes)
    late = 2 * sum(s.late_rise for s in counted) >= len(counted) > 0  # at least half the seeds rise late
    climb = seed_interval([s.climb for s in counted], level, min_seeds=min_seeds)

    def result(outcome: str, reason: str, growth: float | None = None) -> DriftSum:
        return DriftSum(seeds, len(counted), slope, witness, outcome, reason, witness_outcome,
                        p if reason in ("slope_above", "slope_below", "slope_below_short") else None,
                        None if math.isnan(ratio) else ratio, growth, q, threshold)

    if len(counted) < min_seeds:
        return result("not testable", "few_seeds")
    if not any(s.n_nonzero or s.warm_eats for s in counted):
        unresolved = sum(s.n_unresolved_late for s in counted)
        return result(WITHIN, "all_zero") if unresolved == 0 else result("not testable", "unresolved")
    if late:  # a late rise only adds to the sum: only "not within" from the blocks before it stands
        before = [s.before_rise if s.late_rise else s.slope for s in counted]
        found = _decide(seed_interval(before, level, min_seeds=min_seeds), _ratio(counted, before),
                        (WITHIN, NOT_WITHIN), threshold, strict)
        return result(*found) if found[0] == NOT_WITHIN else result("not distinguished", "late_rise", found[2])
    if slope is None:
        if any(s.late_rise for s in counted):  # too few slopes, and some seed rises at the end
            return result("not distinguished", "late_rise")
        return result("not testable", "warm_up" if any(s.warm_eats for s in counted) else "few_slopes")
    outcome, reason, growth = _decide(slope, ratio, (WITHIN, NOT_WITHIN), threshold, strict)
    if outcome == NOT_WITHIN and climb is not None and climb.low > CLIMB:  # the rise of |a_t|/η_t² fades along the window
        return result("not distinguished", "slope_climbs", growth)
    return result(outcome, reason, growth)


def agreement(assumption5: str, outcome: str) -> str:
    """The sentence that says why Assumption 5's row (``assumption5``, ρ_t along the run) and this
    sum (``outcome``) point different ways; empty when they do not.

    ρ_t ≈ a_t/(η_t·b_t) stays bounded when a_t shrinks like η_t, while the sum needs η_t²: "no
    growth" beside "not within" is consistent. "grows" beside "within" comes from the warm-up,
    which the sum leaves out."""
    if assumption5 == "no growth" and outcome == NOT_WITHIN:
        return ("Assumption 5 reads no growth and Theorem 1 (b) not within: rho_t ~ a_t/(eta_t b_t) stays bounded "
                "when the drift's first-order coefficient a_t shrinks like eta_t, while the drift's sum along the "
                "run needs a_t to shrink like eta_t^2; both hold on this run")
    if assumption5 == "grows" and outcome == WITHIN:
        return ("Assumption 5 reads growth and Theorem 1 (b) within: rho_t rises where the drift's size grows "
                "(the warm-up, which Theorem 1 (b) leaves out); after it the drift's first-order coefficient "
                "shrinks like eta_t^2 or faster, or is zero")
    return ""
