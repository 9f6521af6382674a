"""Assumption 5 along the run: the trend of ρ_t at the actual steps (docs/ASSUMPTION5_PROPOSITION1.md).

The paper states Assumption 5 along the iterates it visits: sup_t ρ_t ≤ C_fo(α) < ∞ with
ρ_t = max(φ_t, 0)/q_t at the actual step Δω_t. With η_t ∝ (t+1)^−κ, φ_t ≈ a_t and
q_t ≈ η_t²·b_t, so a first-order coefficient a_t of order η_t with a positive part gives
ρ_t ∝ (t+1)^κ (growth), while a_t of order η_t² (each chunk near its target) keeps ρ_t bounded.
This is a description of one finite run (an unknown-constant statement cannot fail on it).

Per seed, from the scaled steps' ρ_t = ρ(c = 1) (the ``scaling`` probe at the exact ω^{t+1}),
η_t and t:

* only the scaled steps whose φ′ is resolved (``analyses.assumption5.step_limits``) carry a ρ_t, and a seed
  needs ``analyses.assumption5.step_limits.MIN_STEPS`` of them (as the fixed-iterate statements do);
* the steps are cut into ``BLOCKS`` blocks of equal counts in step order; each block gives the
  mean of ρ_t (zeros included: φ_t ≤ 0 counts as ρ_t = 0) and the geometric mean of t + 1;
* γ = least-squares slope of log(block mean ρ) on log(t + 1) over the blocks after the first
  ``BURN_IN`` whose mean is positive (at least ``MIN_BLOCKS``; else γ is undefined);
* κ = least-squares slope of −log η_t on log(t + 1) over the same steps (0.5 for
  η_0/√(t+1), 0 for a constant step).

Over seeds (t-interval of γ, ``analyses.stats.seeds.seed_interval``), the outcome (``ALONG_OUTCOMES``):

* ``not testable`` — κ below ``KAPPA_MIN`` (the step does not shrink, so growth and no growth
  look alike); fewer than ``MIN_SEEDS`` seeds with a γ (unless ρ_t = 0 at every scaled step of
  every seed); or the interval of γ holds 0 and reaches κ/2 (``"not distinguished"``);
* ``grows`` — γ_lo > 0: "ρ_t grows along this run like (t+1)^γ";
* ``no growth`` — γ_hi < κ/2: no growth faster than (t+1)^{κ/2}, half the growth κ that a
  positive first-order drift gives (a slower growth is not excluded); or ρ_t = 0 at every
  scaled step.

``p_value`` is the decisive one-sample t-test over the seeds (``analyses.stats.multiplicity``): of
γ = κ/2 for ``no growth`` by its interval, else of γ = 0.

The steps before the step size's peak (a warm-up) are left out of both fits: κ is the decay
after the peak, and ρ_t under a rising step is not the regime either hypothesis describes. With
η_0/√(t+1) or a constant step the peak is the first step and nothing is left out.

The rule's power at n seeds (``along_power``), with γ normal over independent seeds at a given
sd: the chance of reading ``grows`` when γ = κ (a positive first-order drift) and of reading
``no growth`` when γ = 0 (a bounded ρ_t), each from the noncentral t of its interval's end.
``seeds_for_power`` gives the fewest seeds that reach ``POWER_TARGET`` for each. The row states
the power at the measured sd, and the seed count at the sd's one-sided ``SD_CONFIDENCE`` upper
confidence bound (``sd_upper``): with the measured sd itself, a suite of the stated size reached
80% only about half the time at n = 3–10 (docs/breaks/a5_power.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats

from analyses.assumption5.data import ScalingRun, scaling_run
from analyses.assumption5.step_limits import MIN_STEPS, step_signs, table_of
from analyses.results import Interval, NotMeasured
from analyses.stats.multiplicity import t_test_p
from analyses.stats.seeds import MIN_SEEDS, seed_interval
from zerolock_theory.records import LR

__all__ = ["ALONG_OUTCOMES", "BLOCKS", "BURN_IN", "KAPPA_MIN", "MIN_BLOCKS", "POWER_TARGET", "AlongRun", "SeedAlong",
           "SD_CONFIDENCE", "along_power", "along_run", "sd_upper", "seed_along", "seed_along_from_frame", "seed_along_of",
           "seeds_for_power"]

ALONG_OUTCOMES: tuple[str, ...] = ("grows", "no growth", "not testable")
BLOCKS = 5
"""Blocks of equal step counts per seed."""
BURN_IN = 1
"""Leading blocks left out of γ's fit: an early transient (LoRA's B = 0 start) dominates them."""
MIN_BLOCKS = 3
"""Fitted blocks with a positive mean that γ needs."""
KAPPA_MIN = 0.1
"""The least decay exponent of η_t for which growth and no growth can be told apart."""
LR_COLUMN = LR
POWER_TARGET = 0.8
"""The power the row states a seed count for."""
SD_CONFIDENCE = 0.8
"""The one-sided confidence of the sd's upper bound that the stated seed count is computed at."""
MAX_POWER_SEEDS = 100_000
"""Above this many seeds the count is reported as not reachable."""


@dataclass(frozen=True)
class SeedAlong:
    """One seed: γ (NaN when undefined), κ, the scaled steps used and whether ρ_t = 0 at all of them."""

    run: str
    gamma: float
    kappa: float
    n_steps: int
    all_zero: bool
    blocks: tuple[tuple[float, float], ...] = ()
    """(geometric-mean t + 1, mean ρ_t) of every block, the burn-in first: the points γ's fit reads."""


@dataclass(frozen=True)
class AlongRun:
    """The trend of ρ_t along the run over seeds: γ's interval, κ, the outcome and its p."""

    seeds: list[SeedAlong]
    gamma: Interval | None
    kappa: float
    outcome: str
    reason: str
    p_value: float | None
    level: float = 0.95

    @property
    def gammas(self) -> list[float]:
        """γ of every seed that has one: the values the interval reads."""
        return [s.gamma for s in self.seeds if math.isfinite(s.gamma)]

    @property
    def spread(self) -> float:
        """The standard deviation of γ over the seeds that have one (NaN below 2)."""
        gammas = self.gammas
        return float(np.std(gammas, ddof=1)) if len(gammas) >= 2 else math.nan

    @property
    def n_gammas(self) -> int:
        """Seeds with a γ: the n of the interval."""
        return len(self.gammas)


def along_power(sd: float, kappa: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """The rule's power at ``n`` seeds when γ is normal over seeds with standard deviation ``sd``:
    (reads ``grows`` when γ = κ, reads ``no growth`` when γ = 0). NaN when undefined."""
    if n < MIN_SEEDS or not (math.isfinite(sd) and sd > 0 and math.isfinite(kappa) and kappa > 0):
        return math.nan, math.nan
    df = n - 1
    crit = stats.t.ppf((1 + level) / 2, df)
    se = sd / math.sqrt(n)
    return float(stats.nct.sf(crit, df, kappa / se)), float(stats.nct.sf(crit, df, kappa / 2 / se))


def sd_upper(sd: float, n: int, confidence: float = SD_CONFIDENCE) -> float:
    """The one-sided ``confidence`` upper bound of a normal sd measured as ``sd`` over ``n`` values,
    sd·√((n − 1)/χ²_{1−confidence, n−1}); NaN below 2 values or for a non-finite sd."""
    if n < 2 or not math.isfinite(sd):
        return math.nan
    return float(sd * math.sqrt((n - 1) / stats.chi2.ppf(1 - confidence, n - 1)))


def seeds_for_power(sd: float, kappa: float, level: float = 0.95,
                    target: float = POWER_TARGET) -> tuple[int | None, int | None]:
    """The fewest seeds (≥ ``MIN_SEEDS``) at which ``along_power`` reaches ``target``, for
    (grows at γ = κ, no growth at γ = 0); None when undefined or above ``MAX_POWER_SEEDS``."""

    def fewest(which: int) -> int | None:
        if math.isnan(along_power(sd, kappa, MIN_SEEDS, level)[which]):
            return None
        low, high = MIN_SEEDS, MIN_SEEDS
        while along_power(sd, kappa, high, level)[which] < target:
            if high >= MAX_POWER_SEEDS:
                return None
            low, high = high, min(2 * high, MAX_POWER_SEEDS)
        if along_power(sd, kappa, low, level)[which] >= target:
            return low
        while high - low > 1:  # the power rises with n: power(low) < target <= power(high)
            mid = (low + high) // 2
            low, high = (low, mid) if along_power(sd, kappa, mid, level)[which] >= target else (mid, high)
        return high

    return fewest(0), fewest(1)


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.polyfit(x, y, 1)[0]) if x.size >= 2 and np.ptp(x) > 0 else math.nan


def seed_along(run: str, steps: Sequence[float], rho: Sequence[float], lr: Sequence[float]) -> SeedAlong:
    """γ and κ of one seed from its scaled steps (module docstring); undefined ρ_t are dropped."""
    t = np.asarray(steps, dtype=float)
    r = np.asarray(rho, dtype=float)
    eta = np.asarray(lr, dtype=float)
    keep = np.isfinite(t) & np.isfinite(r) & np.isfinite(eta) & (eta > 0)
    t, r, eta = t[keep], r[keep], eta[keep]
    order = np.argsort(t)
    t, r, eta = t[order] + 1.0, r[order], eta[order]
    peak = int(np.argmax(eta)) if eta.size else 0  # a warm-up's steps are left out (module docstring)
    t, r, eta = t[peak:], r[peak:], eta[peak:]
    kappa = _slope(np.log(t), -np.log(eta)) if t.size else math.nan
    if t.size < BLOCKS:
        return SeedAlong(run, math.nan, kappa, int(t.size), bool(t.size) and not (r > 0).any())
    every = tuple((float(np.exp(np.log(tb).mean())), float(rb.mean()))
                  for tb, rb in zip(np.array_split(t, BLOCKS), np.array_split(r, BLOCKS), strict=True))
    positive = np.array([(bt, br) for bt, br in every[BURN_IN:] if br > 0])
    gamma = _slope(np.log(positive[:, 0]), np.log(positive[:, 1])) if len(positive) >= MIN_BLOCKS else math.nan
    return SeedAlong(run, gamma, kappa, int(t.size), not (r > 0).any(), every)


def seed_along_of(data: ScalingRun, *, min_steps: int = MIN_STEPS) -> SeedAlong:
    """``seed_along`` from a run's ``scaling`` probe: ρ(c = 1) and ``train/lr`` at the scaled steps
    whose φ′ is resolved (an unresolved step, float noise at an exact optimum for one, carries no
    ρ_t: noise over q_t ∝ η_t² would grow like a first-order drift); a seed with fewer than
    ``min_steps`` resolved steps has no γ."""
    run, key = data.run, data.rho_one_key
    if data.rho_one is None or data.lr is None:
        raise NotMeasured(f"{run}: no {key if data.rho_one is None else LR_COLUMN} column")
    c, phi, _ = table_of(data.actual, data.objective, run)
    rows = data.actual.rows
    resolved = np.isfinite(step_signs(c, phi))
    steps = data.steps[rows][resolved]
    rho = data.rho_one[rows][resolved]
    lr = data.lr[rows][resolved]
    found = seed_along(run, steps, rho, lr)
    return found if resolved.sum() >= min_steps else replace(found, gamma=math.nan)


def seed_along_from_frame(frame: pd.DataFrame, obj: str, run: str, *, min_steps: int = MIN_STEPS) -> SeedAlong:
    """``seed_along_of`` a run's metrics (``analyses.assumption5.data.scaling_run``)."""
    return seed_along_of(scaling_run(frame, obj, run), min_steps=min_steps)


def along_run(seeds: Sequence[SeedAlong], level: float = 0.95, *, min_seeds: int = MIN_SEEDS) -> AlongRun:
    """γ's seed interval and the outcome (module docstring)."""
    seeds = list(seeds)
    kappas = [s.kappa for s in seeds if math.isfinite(s.kappa)]
    kappa = float(np.median(kappas)) if kappas else math.nan
    gammas = [s.gamma for s in seeds if math.isfinite(s.gamma)]
    gamma = seed_interval(gammas, level, min_seeds=min_seeds)

    def result(outcome: str, reason: str) -> AlongRun:
        null = kappa / 2 if reason == "bounded" else 0.0  # the decisive test's null
        p = t_test_p(gammas, null) if len(gammas) >= min_seeds and math.isfinite(null) else None
        return AlongRun(seeds, gamma, kappa, outcome, reason, p, level)

    if not math.isfinite(kappa) or kappa < KAPPA_MIN:
        return result("not testable", "constant_step")
    if seeds and all(s.all_zero for s in seeds) and len(seeds) >= min_seeds:
        return result("no growth", "all_zero")
    if gamma is None:
        return result("not testable", "few_seeds")
    if gamma.low > 0:
        return result("grows", "grows")
    if gamma.high < kappa / 2:
        return result("no growth", "bounded")
    return result("not testable", "not_distinguished")
