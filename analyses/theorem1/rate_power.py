"""The power of Theorem 1 (a)'s rule at a run's own noise and dependence (docs/THEOREM1.md).

A rate row must say whether a fall toward zero could have been seen. ``rate_power`` re-simulates
the rule (``analyses.theorem1.rate.describe_rate``) on the families with a known fall toward zero,
1/√T and the bound's own log(T+1)/√T (``analyses.theorem1.families``), with AR(1) noise of the
size the run measured (``RateDescription.noise``) and its measured lag-1 autocorrelation
(``RateDescription.phi``, both from the residuals about a smooth fit, ``noise_dependence``), at its
seeds and horizon: the share of repetitions that state the truth. Ĝ_t along a run is
autocorrelated; i.i.d. noise of the same size would overstate the power (block means of AR(1)
noise with φ = 0.9 vary about 19 times as much). ``seeds_for`` scans seed counts for the smallest
that reaches a target power. Deterministic (a fixed generator seed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analyses.results import Result, register
from analyses.theorem1.families import RATE_TRUE, rate_series
from analyses.theorem1.rate import DECAYS, describe_rate

__all__ = ["MAX_PHI", "METHOD", "POWER_FAMILIES", "POWER_REPS", "POWER_SEED", "RatePower", "rate_power",
           "seeds_for"]

POWER_FAMILIES = ("1/sqrt(T)", "log(T+1)/sqrt(T) (the bound)")
POWER_REPS = 200
"""Repetitions per family: a share is known to about ±3.5% (95%)."""
POWER_SEED = 0
MAX_PHI = 0.99
"""The measured autocorrelation is clipped to [0, MAX_PHI] for the re-simulation."""
METHOD = "re-simulated with AR(1) noise of the measured size and lag-1 autocorrelation"


@register
@dataclass(frozen=True)
class RatePower(Result):
    """The share of repetitions that state the truth, per family, at one design."""

    kind = "rate_power"
    noise: float | None
    seeds: int
    horizon: int
    reps: int
    correct: dict[str, float]  # family → share decided correctly (RATE_TRUE)
    decays: dict[str, float]  # family → share reading a fall word
    phi: float = 0.0  # the AR(1) coefficient of the re-simulated noise
    method: str = METHOD

    @property
    def worst(self) -> float:
        """The smaller of the families' shares decided correctly."""
        return min(self.correct.values()) if self.correct else math.nan


def rate_power(noise: float | None, seeds: int, horizon: int, reps: int = POWER_REPS, seed: int = POWER_SEED,
               phi: float | None = 0.0) -> RatePower:
    """The rule's power on ``POWER_FAMILIES`` at ``noise`` × the mean level with AR(1) coefficient ``phi``
    (clipped to [0, ``MAX_PHI``]; undefined: 0), ``seeds`` seeds, ``horizon`` steps; no shares (``reps`` 0)
    when ``noise`` is undefined or the design has no seed."""
    phi = 0.0 if phi is None or not math.isfinite(phi) else min(max(float(phi), 0.0), MAX_PHI)
    if noise is None or not math.isfinite(noise) or seeds < 1 or horizon < 2:
        return RatePower(None, seeds, horizon, 0, {}, {}, phi)
    rng = np.random.default_rng(seed)
    correct, decays = {}, {}
    for family in POWER_FAMILIES:
        outcomes = [describe_rate([rate_series(family, horizon, rng, noise, phi) for _ in range(seeds)]).outcome
                    for _ in range(reps)]
        correct[family] = sum(o in RATE_TRUE[family] for o in outcomes) / reps
        decays[family] = sum(o in DECAYS for o in outcomes) / reps
    return RatePower(float(noise), seeds, horizon, reps, correct, decays, phi)


def seeds_for(noise: float, horizon: int, target: float = 0.8, candidates: tuple[int, ...] = (5, 10, 20, 40),
              reps: int = 100, phi: float | None = 0.0) -> int | None:
    """The smallest seed count of ``candidates`` whose power reaches ``target`` on both families, or None."""
    for seeds in candidates:
        if rate_power(noise, seeds, horizon, reps, phi=phi).worst >= target:
            return seeds
    return None
