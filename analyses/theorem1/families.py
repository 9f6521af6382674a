"""Synthetic series with known answers for Theorem 1's rules (docs/THEOREM1.md, calibration).

Rate families (``RATE_FAMILIES``): the level E[Ĝ_t] at T = t + 1 as a function of T. The bound
family is the bound's own level (the increments of T·log(T+1)/√T). The noise is additive
Gaussian AR(1) (coefficient ``phi``, by default the family's ``RATE_PHI``) with a constant
standard deviation ``noise`` × (mean level over the run), the shape measured on the model: the
spread of Ĝ_t stays put while its level falls; a family whose mean level is zero
(``ZERO_FAMILIES``) takes ``noise`` itself as its standard deviation.

Each family has a truth (``RATE_TRUTH``): it falls toward zero at the bound's rate or faster
(``TOWARD_ZERO``), falls toward zero slower than the bound (``SLOWER``), settles onto a positive
floor reached inside the run (``FLOOR``), is flat throughout (``PLATEAU``), or has mean zero
(``ZERO``). ``RATE_TRUE`` names the outcomes that state the truth of each family, ``RATE_WRONG``
the ones that contradict it (anything else is undecided); the floor families are the
constructions a referee would use to make a fall onto a floor read as a rate toward zero. The
floors ``FLOOR_AT`` are 1/√T made flat from a fraction of the horizon (written at T = 1000).

Drift families (``DRIFT_FAMILIES``): drift_t = η_t^p·(a + s·z_t), z_t standard normal, with
p = 1 (first order), 1.5 (intermediate), 2 (second order), and descent_t = −η_t·(1 + ½z′_t).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pandas as pd

__all__ = [
    "DRIFT_EXPECTED",
    "DRIFT_FAMILIES",
    "FLOOR",
    "FLOOR_AT",
    "PLATEAU",
    "PLATEAU_FAMILIES",
    "RATE_PHI",
    "RATE_TRUTH",
    "SLOWER",
    "TOWARD_ZERO",
    "ZERO",
    "ZERO_FAMILIES",
    "RATE_FAMILIES",
    "RATE_TRUE",
    "RATE_WRONG",
    "FLOOR_TOLERANCE",
    "drift_table",
    "floor_start",
    "states_floor",
    "rate_mean",
    "rate_series",
]


def _bound(t: np.ndarray) -> np.ndarray:
    total = np.sqrt(t) * np.log(t + 1.0)
    return np.diff(np.concatenate([[0.0], total])) / np.diff(np.concatenate([[0.0], t]))


def _flat_from(knee: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda t: 1.0 / np.sqrt(np.minimum(t, knee))


FLOOR_AT = (250, 500, 750, 900)
"""Where the floor families built on 1/√T go flat: T/4, T/2, 3T/4 and 0.9T of a 1000-step run."""


def _rise_then(knee: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda t: np.where(t < knee, t / knee, np.sqrt(knee / t))


RATE_FAMILIES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "1/sqrt(T)": lambda t: 1.0 / np.sqrt(t),
    "log(T+1)/sqrt(T) (the bound)": _bound,
    "T^-0.2": lambda t: t**-0.2,
    "rise over the first third, then 1/sqrt(T)": _rise_then(1000.0 / 3.0),
    "plateau": lambda t: np.ones_like(t),
    "exponential transient onto a plateau": lambda t: 1.0 + 4.0 * np.exp(-t / 100.0),
    "fast transient onto a plateau": lambda t: 1.0 + 4.0 * np.exp(-t / 30.0),
    "step drop at T=300 onto a plateau": lambda t: np.where(t < 300.0, 2.0, 1.0),
    "step drop at T=600 onto a plateau": lambda t: np.where(t < 600.0, 2.0, 1.0),
    "step drop at T=850 onto a plateau": lambda t: np.where(t < 850.0, 2.0, 1.0),
    "late transient onto a plateau": lambda t: np.where(t < 400.0, 5.0, 1.0 + 4.0 * np.exp(-(t - 400.0) / 80.0)),
    "mean peaks at T=700, then 1/sqrt(T)": lambda t: np.where(t < 700.0, (t / 700.0) ** 2, np.sqrt(700.0 / t)),
    "T^-0.378 (the bound's exponent at T = 1000)": lambda t: t**-0.378,
    "T^-0.1": lambda t: t**-0.1,
    "1 + 16 exp(-T/100) (a floor)": lambda t: 1.0 + 16.0 * np.exp(-t / 100.0),
    "1 + 32 exp(-T/100) (a floor)": lambda t: 1.0 + 32.0 * np.exp(-t / 100.0),
    "1 + 4 exp(-T/150) (a floor)": lambda t: 1.0 + 4.0 * np.exp(-t / 150.0),
    **{f"1/sqrt(T), flat from T={knee}": _flat_from(float(knee)) for knee in FLOOR_AT},
    "1/sqrt(T), AR(1) noise 0.9": lambda t: 1.0 / np.sqrt(t),
    "plateau, AR(1) noise 0.9": lambda t: np.ones_like(t),
    "zero mean (noise only)": lambda t: np.zeros_like(t),
}
"""Name → the level E[Ĝ] as a function of T = t + 1."""
RATE_PHI: dict[str, float] = {"1/sqrt(T), AR(1) noise 0.9": 0.9, "plateau, AR(1) noise 0.9": 0.9}
"""The AR(1) coefficient of a family's noise (0 where not listed)."""
ZERO_FAMILIES = ("zero mean (noise only)",)
"""Families with mean level zero: their noise's standard deviation is ``noise`` itself."""

TOWARD_ZERO, SLOWER, FLOOR, PLATEAU, ZERO = ("toward zero at the bound's rate or faster", "toward zero, slower than the bound",
                                             "a floor reached in the run", "flat throughout", "mean zero")
RATE_TRUTH: dict[str, str] = {
    "1/sqrt(T)": TOWARD_ZERO,
    "log(T+1)/sqrt(T) (the bound)": TOWARD_ZERO,
    "T^-0.2": SLOWER,
    "rise over the first third, then 1/sqrt(T)": TOWARD_ZERO,
    "plateau": PLATEAU,
    "exponential transient onto a plateau": FLOOR,
    "fast transient onto a plateau": FLOOR,
    "step drop at T=300 onto a plateau": FLOOR,
    "step drop at T=600 onto a plateau": FLOOR,
    "step drop at T=850 onto a plateau": FLOOR,
    "late transient onto a plateau": FLOOR,
    "mean peaks at T=700, then 1/sqrt(T)": TOWARD_ZERO,
    "T^-0.378 (the bound's exponent at T = 1000)": TOWARD_ZERO,
    "T^-0.1": SLOWER,
    "1 + 16 exp(-T/100) (a floor)": FLOOR,
    "1 + 32 exp(-T/100) (a floor)": FLOOR,
    "1 + 4 exp(-T/150) (a floor)": FLOOR,
    **{f"1/sqrt(T), flat from T={knee}": FLOOR for knee in FLOOR_AT},
    "1/sqrt(T), AR(1) noise 0.9": TOWARD_ZERO,
    "plateau, AR(1) noise 0.9": PLATEAU,
    "zero mean (noise only)": ZERO,
}
"""Each family's truth at T = 1000."""
PLATEAU_FAMILIES = tuple(name for name, truth in RATE_TRUTH.items() if truth in (FLOOR, PLATEAU))
"""The families that end on a positive floor or are flat throughout."""

_AT, _UNDISTINGUISHED, _SLOWER = ("falls toward zero at the bound's rate or faster",
                                  "falls, rate not distinguished from the bound's", "falls, slower than the bound")
_FLATTENS, _NO_DECAY, _NOT_TESTABLE = "flattens: a floor is not excluded", "no decay", "not testable"
_TRUE_BY_TRUTH = {TOWARD_ZERO: (_AT, _UNDISTINGUISHED), SLOWER: (_SLOWER,), FLOOR: (_FLATTENS, _NO_DECAY),
                  PLATEAU: (_NO_DECAY, _FLATTENS), ZERO: (_NOT_TESTABLE,)}
_WRONG_BY_TRUTH = {TOWARD_ZERO: (_SLOWER, _FLATTENS, _NO_DECAY), SLOWER: (_AT, _UNDISTINGUISHED, _NO_DECAY),
                   FLOOR: (_AT, _UNDISTINGUISHED), PLATEAU: (_AT, _UNDISTINGUISHED, _SLOWER),
                   ZERO: (_AT, _UNDISTINGUISHED, _SLOWER)}
RATE_TRUE: dict[str, tuple[str, ...]] = {name: _TRUE_BY_TRUTH[truth] for name, truth in RATE_TRUTH.items()}
"""The outcomes that state each family's truth (the confusion tables' correct cells)."""
RATE_WRONG: dict[str, tuple[str, ...]] = {name: _WRONG_BY_TRUTH[truth] for name, truth in RATE_TRUTH.items()}
"""The outcomes that contradict each family's truth. On a floor family "falls, slower than the bound"
is a true description of a transient still falling in the window, so only the words that say the
level falls toward zero at or near the bound's rate are wrong there; on a family that is flat
throughout every "falls" word is wrong; on a family that falls toward zero, a floor or no decay is."""


def rate_mean(family: str, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """``(T, E[Ĝ])`` for T = 1..horizon."""
    t = np.arange(1.0, horizon + 1.0)
    return t, np.asarray(RATE_FAMILIES[family](t), dtype=float)


FLOOR_TOLERANCE = 0.01
"""A family's floor start: the first T from which its level stays within this share of its limit."""


@functools.cache
def floor_start(family: str) -> float | None:
    """The first T from which the family's level stays within ``FLOOR_TOLERANCE`` of its limit (its level at
    T = 10^12), on the steps 1..10^4 and a log grid beyond; None for a family without a positive limit.
    Fixed by the level alone, before any group is run: a fall word whose caveat starts at or before it
    (``states_floor``) says the floor the family has."""
    t = np.concatenate([np.arange(1.0, 10_001.0), np.geomspace(10_001.0, 1e11, 2000)])
    limit = float(RATE_FAMILIES[family](np.array([1e12]))[0])
    if not limit > 0:
        return None
    off = np.abs(np.asarray(RATE_FAMILIES[family](t), float) - limit) > FLOOR_TOLERANCE * limit
    return float(t[np.flatnonzero(off)[-1] + 1]) if off.any() else 1.0


def states_floor(family: str, description) -> bool:
    """Whether a rate description states the family's floor: a floor or no decay (``RATE_TRUE``), or a fall
    word whose caveat (``floor_after``: a floor from there on is not excluded) starts at or before the
    family's ``floor_start``."""
    start = floor_start(family)
    if start is None:
        return False
    after = getattr(description, "floor_after", None)
    return description.outcome in (_FLATTENS, _NO_DECAY) or (after is not None and after <= start)


def rate_series(family: str, horizon: int, rng: np.random.Generator, noise: float, phi: float | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """One noisy seed of ``family``: ``(T, Ĝ_T)`` (module docstring)."""
    t, level = rate_mean(family, horizon)
    phi = RATE_PHI.get(family, 0.0) if phi is None else phi
    scale = 1.0 if family in ZERO_FAMILIES else float(level.mean())
    e = rng.standard_normal(t.size)
    z = np.empty_like(e)
    z[0] = e[0]
    innovation = np.sqrt(1.0 - phi * phi)
    for i in range(1, z.size):
        z[i] = phi * z[i - 1] + innovation * e[i]
    return t, level + noise * scale * z


DRIFT_FAMILIES: dict[str, tuple[float, float, float]] = {
    "first order (a·eta_t)": (1.0, 0.5, 1.0),
    "first order, zero mean (eta_t·z)": (1.0, 0.0, 1.0),
    "intermediate (eta_t^1.5)": (1.5, 0.5, 1.0),
    "second order (b·eta_t^2)": (2.0, 0.5, 1.0),
    "second order, negative mean": (2.0, -0.5, 1.0),
}
"""Name → (p, a, s): drift_t = η_t^p·(a + s·z_t)."""

DRIFT_EXPECTED = {
    "first order (a·eta_t)": "outgrows",
    "first order, zero mean (eta_t·z)": "outgrows",
    "intermediate (eta_t^1.5)": "outgrows",
    "second order (b·eta_t^2)": "within",
    "second order, negative mean": "within",
}
"""The trend each stationary drift family should read (descriptive: a warm-up changes it)."""


def drift_table(family: str, steps: int, seeds: int, rng: np.random.Generator, lr: float = 0.1
                ) -> pd.DataFrame:
    """``step, lr, drift, descent, seed`` for ``seeds`` seeds, η_t = lr/√(t+1)."""
    p, a, s = DRIFT_FAMILIES[family]
    step = np.arange(steps)
    eta = lr / np.sqrt(step + 1.0)
    parts = []
    for seed in range(seeds):
        z, z2 = rng.standard_normal(steps), rng.standard_normal(steps)
        parts.append(pd.DataFrame({"step": step, "lr": eta, "drift": eta**p * (a + s * z),
                                   "descent": -eta * (1.0 + 0.5 * z2), "seed": seed}))
    return pd.concat(parts, ignore_index=True)
