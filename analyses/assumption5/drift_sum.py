"""Theorem 1 (b): does the drift at the step actually taken sum within O(Σ η_t²) along the run?

Lemma 4 telescopes the surrogate and needs the drift at the step taken (c = 1) to add up like
Σ η_t² along the run. With drift(c) = c·a_t + O(c²) at the scaled iterate ω^t, the order at a
fixed iterate (``analyses.assumption5.drift_order``) says only whether a_t ≠ 0; what the sum needs
is how a_t shrinks as η_t does. With η_t ∝ 1/√t and |a_t| ∝ η_t^s, Σ a_t = O(Σ η_t²) needs s ≥ 2:
a_t = 0.5·η_t² is first order at every iterate and within the budget; a_t = 0.5·η_t is not.

Per seed, at its scaled steps in step order (the ``scaling`` probe's drift(c), or φ(c), which has
the same limit, where drift(c) was not logged):

* a_t = the Richardson limit of drift(c)/c (``analyses.assumption5.step_limits``): zero where the
  limit is zero at the design's resolution (a second-order drift), dropped where unresolved;
* the steps are cut into ``BLOCKS`` blocks of equal counts; the first ``BURN_IN`` is the warm-up
  and is left out; each later block gives the mean of |a_t| (zeros included) and the geometric
  mean of η_t;
* s = least-squares slope of log(block mean |a_t|) on log(block η) over the later blocks whose
  mean is positive (at least ``MIN_BLOCKS``; else undefined); a seed whose later a_t are all
  zero has no s and is second order after the warm-up;
* the witness w: the same slope for the positive part of the drift at c = 1, max(drift(1), 0),
  the step actually taken (its pathwise budget D⁺ against Σ η_t², per block of steps).

Over the seeds with at least ``analyses.assumption5.step_limits.MIN_STEPS`` resolved scaled steps
(t-interval of s over seeds, ``analyses.stats.seeds.seed_interval``; ``SUM_OUTCOMES``):

* ``within Σ η_t² along the run`` — every counted seed second order after the warm-up (every step
  resolved), or the interval of s lies above 2 − ``SLOPE_MARGIN``;
* ``not within Σ η_t² along the run`` — the interval of s lies below 2 − ``SLOPE_MARGIN``;
* ``not distinguished`` — the interval holds 2 − ``SLOPE_MARGIN``;
* ``not testable`` — fewer than ``MIN_SEEDS`` counted seeds, fewer than ``MIN_SEEDS`` slopes when
  some seed has a non-zero a_t, or no non-zero a_t but some step unresolved.

The witness w is decided the same way (``WITNESS_OUTCOMES``) and shown beside; it never changes
the outcome (a second-order drift whose size warms up makes it outgrow Σ η_t² while s says
nothing is first order); it reads ``within`` also when no counted seed has a positive drift at
c = 1 after the warm-up. ``p_value`` is the one-sample t-test of s = 2 − ``SLOPE_MARGIN``.
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
    phi_prime,
    step_signs,
    table_of,
)
from analyses.results import Interval
from analyses.stats.multiplicity import t_test_p
from analyses.stats.seeds import MIN_SEEDS, seed_interval

__all__ = ["BLOCKS", "BURN_IN", "MIN_BLOCKS", "NEEDED_SLOPE", "SLOPE_MARGIN", "SUM_OUTCOMES", "WITNESS_OUTCOMES",
           "DriftSum", "SeedDriftSum", "agreement", "drift_sum", "seed_drift_sum", "seed_drift_sum_from_frame",
           "seed_drift_sum_of"]

WITHIN, NOT_WITHIN = "within Σ η_t² along the run", "not within Σ η_t² along the run"
SUM_OUTCOMES: tuple[str, ...] = (WITHIN, NOT_WITHIN, "not distinguished", "not testable")
WITNESS_OUTCOMES: tuple[str, ...] = ("within", "outgrows", "not distinguished", "not testable")
NEEDED_SLOPE = 2.0
"""With η_t ∝ 1/√t, Σ a_t = O(Σ η_t²) needs |a_t| to shrink like η_t^s with s at least this."""
SLOPE_MARGIN = 0.25
"""The design's resolution: a seed interval of s above 2 − SLOPE_MARGIN reads within, below it not."""
BLOCKS = 5
"""Blocks of equal scaled-step counts per seed."""
BURN_IN = 1
"""Leading blocks left out as the warm-up (LoRA starts at B = 0)."""
MIN_BLOCKS = 3
"""Later blocks with a positive mean that a slope needs."""


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


@dataclass(frozen=True)
class DriftSum:
    """The outcome over seeds: s's interval, the witness's, and the words."""

    seeds: list[SeedDriftSum]
    n_counted: int
    slope: Interval | None
    witness: Interval | None
    outcome: str
    reason: str
    witness_outcome: str
    p_value: float | None


def _block_slope(eta: np.ndarray, size: np.ndarray) -> tuple[float, bool]:
    """(slope of log block-mean ``size`` on log block η after the warm-up, whether every later value is 0)."""
    keep = np.isfinite(size)
    eta, size = eta[keep], size[keep]
    if eta.size < BLOCKS:
        return math.nan, False
    blocks = [(float(np.exp(np.log(e).mean())), float(s.mean()))
              for e, s in zip(np.array_split(eta, BLOCKS), np.array_split(size, BLOCKS), strict=True)][BURN_IN:]
    late = np.array([b for b in blocks if b[1] > 0])
    if len(late) == 0:
        return math.nan, True
    if len(late) < MIN_BLOCKS or np.ptp(np.log(late[:, 0])) == 0:
        return math.nan, False
    return float(np.polyfit(np.log(late[:, 0]), np.log(late[:, 1]), 1)[0]), False


def seed_drift_sum(run: str, c: Sequence[float], lr: np.ndarray, drift: np.ndarray, source: str = "drift"
                   ) -> SeedDriftSum:
    """One seed from η_t and drift(c) [steps, factors] at its scaled steps in step order (module docstring)."""
    c = np.asarray(c, dtype=float)
    lr, drift = np.asarray(lr, dtype=float), np.atleast_2d(np.asarray(drift, dtype=float))
    signs = step_signs(c, drift)
    with np.errstate(invalid="ignore", divide="ignore"):
        limit = phi_prime(c, drift)[0]
    a = np.where(np.isnan(signs), np.nan, np.where(signs == 0, 0.0, np.abs(limit)))
    at_one = np.clip(drift[:, int(np.argmax(c))], 0.0, None)
    slope, _ = _block_slope(lr, a)
    witness, no_positive = _block_slope(lr, at_one)
    late = np.concatenate(np.array_split(np.arange(lr.size), BLOCKS)[BURN_IN:]) if lr.size >= BLOCKS else np.arange(0)
    n_nonzero = int(np.sum(np.isfinite(a[late]) & (a[late] > 0)))
    return SeedDriftSum(run, slope, witness, int(lr.size), int(np.isfinite(signs).sum()), n_nonzero,
                        int(np.isnan(a[late]).sum()), source, no_positive)


def seed_drift_sum_of(data: ScalingRun) -> SeedDriftSum:
    """``seed_drift_sum`` from a run's ``scaling`` probe and ``train/lr`` (drift(c) where logged, else φ(c))."""
    run = data.run
    c, phi, _ = table_of(data.actual, data.objective, run)
    rows = data.actual.rows
    order = np.argsort(data.steps[rows], kind="stable")
    lr = data.lr[rows][order] if data.lr is not None else None
    if lr is None:
        return SeedDriftSum(run, math.nan, math.nan, len(phi), 0, 0, 0, "phi")
    if data.drift is not None:
        return seed_drift_sum(run, c, lr, data.drift[rows][order], "drift")
    return seed_drift_sum(run, c, lr, phi[order], "phi")


def seed_drift_sum_from_frame(frame: pd.DataFrame, obj: str, run: str) -> SeedDriftSum:
    """``seed_drift_sum_of`` a run's metrics (``analyses.assumption5.data.scaling_run``)."""
    return seed_drift_sum_of(scaling_run(frame, obj, run))


def _decide(x: Interval | None, words: tuple[str, str]) -> str:
    threshold = NEEDED_SLOPE - SLOPE_MARGIN
    if x is None:
        return "not testable"
    if x.low > threshold:
        return words[0]
    if x.high < threshold:
        return words[1]
    return "not distinguished"


def drift_sum(seeds: Sequence[SeedDriftSum], level: float = 0.95, *, min_steps: int = MIN_STEPS,
              min_seeds: int = MIN_SEEDS) -> DriftSum:
    """The outcome over the counted seeds (module docstring)."""
    seeds = list(seeds)
    counted = [s for s in seeds if s.n_resolved >= min_steps]
    slopes = [s.slope for s in counted]
    slope = seed_interval(slopes, level, min_seeds=min_seeds)
    witness = seed_interval([s.witness for s in counted], level, min_seeds=min_seeds)
    witness_outcome = _decide(witness, ("within", "outgrows"))
    if counted and all(s.no_positive_drift for s in counted):
        witness_outcome = "within"
    p = t_test_p(slopes, NEEDED_SLOPE - SLOPE_MARGIN) if slope is not None else None

    def result(outcome: str, reason: str) -> DriftSum:
        return DriftSum(seeds, len(counted), slope, witness, outcome, reason, witness_outcome,
                        p if reason in ("slope_above", "slope_below") else None)

    if len(counted) < min_seeds:
        return result("not testable", "few_seeds")
    if not any(s.n_nonzero for s in counted):
        unresolved = sum(s.n_unresolved_late for s in counted)
        return result(WITHIN, "all_zero") if unresolved == 0 else result("not testable", "unresolved")
    if slope is None:
        return result("not testable", "few_slopes")
    outcome = _decide(slope, (WITHIN, NOT_WITHIN))
    return result(outcome, {WITHIN: "slope_above", NOT_WITHIN: "slope_below"}.get(outcome, "slope_straddles"))


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
