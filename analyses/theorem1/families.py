"""Synthetic series with known answers for Theorem 1's rules (docs/THEOREM1.md, calibration).

Rate families (``RATE_FAMILIES``): the level E[Ĝ_t] at T = t + 1 as a function of T. The bound
family is the bound's own level (the increments of T·log(T+1)/√T). The noise is additive
Gaussian AR(1) (coefficient ``phi``) with a constant standard deviation ``noise`` × (mean level
over the run), the shape measured on the model: the spread of Ĝ_t stays put while its level
falls. ``RATE_TRUE`` names the outcomes that state the truth of each family, ``RATE_WRONG`` the
ones that contradict it (anything else is undecided); the plateau families are the
constructions a referee would use to make a fall onto a plateau read as a rate.

Drift families (``DRIFT_FAMILIES``): drift_t = η_t^p·(a + s·z_t), z_t standard normal, with
p = 1 (first order), 1.5 (intermediate), 2 (second order), and descent_t = −η_t·(1 + ½z′_t).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

__all__ = [
    "DRIFT_EXPECTED",
    "DRIFT_FAMILIES",
    "PLATEAU_FAMILIES",
    "RATE_FAMILIES",
    "RATE_TRUE",
    "RATE_WRONG",
    "drift_table",
    "rate_mean",
    "rate_series",
]


def _bound(t: np.ndarray) -> np.ndarray:
    total = np.sqrt(t) * np.log(t + 1.0)
    return np.diff(np.concatenate([[0.0], total])) / np.diff(np.concatenate([[0.0], t]))


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
}
"""Name → the level E[Ĝ] as a function of T = t + 1."""

_DECAYS = ("at the bound's rate or faster", "not distinguished from the bound", "slower than the bound")
PLATEAU_FAMILIES = tuple(name for name in RATE_FAMILIES if "plateau" in name)
RATE_TRUE: dict[str, tuple[str, ...]] = {
    "1/sqrt(T)": ("at the bound's rate or faster", "not distinguished from the bound"),
    "log(T+1)/sqrt(T) (the bound)": ("at the bound's rate or faster", "not distinguished from the bound"),
    "T^-0.2": ("slower than the bound",),
    "rise over the first third, then 1/sqrt(T)": ("at the bound's rate or faster", "not distinguished from the bound"),
    "mean peaks at T=700, then 1/sqrt(T)": ("at the bound's rate or faster", "not distinguished from the bound"),
    **{name: ("no decay",) for name in PLATEAU_FAMILIES},
}
"""The outcomes that state each family's truth (the confusion tables' correct cells)."""
RATE_WRONG: dict[str, tuple[str, ...]] = {
    "1/sqrt(T)": ("slower than the bound", "no decay"),
    "log(T+1)/sqrt(T) (the bound)": ("no decay",),
    "T^-0.2": ("at the bound's rate or faster", "no decay"),
    "rise over the first third, then 1/sqrt(T)": ("slower than the bound", "no decay"),
    "mean peaks at T=700, then 1/sqrt(T)": ("slower than the bound", "no decay"),
    **{name: _DECAYS[:2] for name in PLATEAU_FAMILIES},
}
"""The outcomes that contradict each family's truth. On a plateau family "decays, slower than the
bound" is a true description of a transient still falling in the window, so only the bound's
rate words are wrong there."""


def rate_mean(family: str, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """``(T, E[Ĝ])`` for T = 1..horizon."""
    t = np.arange(1.0, horizon + 1.0)
    return t, np.asarray(RATE_FAMILIES[family](t), dtype=float)


def rate_series(family: str, horizon: int, rng: np.random.Generator, noise: float, phi: float = 0.0
                ) -> tuple[np.ndarray, np.ndarray]:
    """One noisy seed of ``family``: ``(T, Ĝ_T)`` (module docstring)."""
    t, level = rate_mean(family, horizon)
    e = rng.standard_normal(t.size)
    z = np.empty_like(e)
    z[0] = e[0]
    scale = np.sqrt(1.0 - phi * phi)
    for i in range(1, z.size):
        z[i] = phi * z[i - 1] + scale * e[i]
    return t, level + noise * float(level.mean()) * z


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
