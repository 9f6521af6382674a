"""Synthetic series with known answers for Theorem 1's rules (docs/THEOREM1.md, calibration).

Rate families (``RATE_FAMILIES``): the running mean E[Ā_T] = A(T) exactly, so the level
E[Ĝ_t] at T = t + 1 is the increment T·A(T) − (T−1)·A(T−1). The noise is additive Gaussian
AR(1) (coefficient ``phi``) with a constant standard deviation ``noise`` × (mean level over the
run) — the shape measured on the model: the spread of Ĝ_t stays put while its level falls.

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
    "RATE_EXPECTED",
    "RATE_FAMILIES",
    "drift_table",
    "rate_mean",
    "rate_series",
]

SUITE_HORIZON = 1000


def _rise_then_decay(t: np.ndarray) -> np.ndarray:
    knee = SUITE_HORIZON / 3.0
    return np.where(t < knee, t / knee, np.sqrt(knee / np.maximum(t, 1.0)))


def _peak_700(t: np.ndarray) -> np.ndarray:
    return np.where(t < 700.0, (t / 700.0) ** 2, np.sqrt(700.0 / np.maximum(t, 1.0)))


RATE_FAMILIES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "1/sqrt(T)": lambda t: 1.0 / np.sqrt(t),
    "log(T+1)/sqrt(T)": lambda t: np.log(t + 1.0) / np.sqrt(t),
    "T^-0.2": lambda t: t**-0.2,
    "plateau": lambda t: np.ones_like(t),
    "plateau after transient": lambda t: 1.0 + 4.0 * 100.0 * (1.0 - np.exp(-t / 100.0)) / t,
    "rise (first third), then 1/sqrt(T)": _rise_then_decay,
    "mean peaks at T=700, then 1/sqrt(T)": _peak_700,
}
"""Name → A(T), the exact running mean E[Ā_T]."""

RATE_EXPECTED = {
    "1/sqrt(T)": "at least the bound's rate",
    "log(T+1)/sqrt(T)": "at least the bound's rate",
    "T^-0.2": "slower than the bound",
    "plateau": "no decay",
    "plateau after transient": "no decay",
    "rise (first third), then 1/sqrt(T)": "at least the bound's rate",
    "mean peaks at T=700, then 1/sqrt(T)": "at least the bound's rate",
}
"""The outcome each family should get (the true answer the confusion tables score)."""


def rate_mean(family: str, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """``(T, E[Ĝ])`` for T = 1..horizon: the level whose running mean is ``RATE_FAMILIES[family]``."""
    t = np.arange(1.0, horizon + 1.0)
    total = t * RATE_FAMILIES[family](t)
    return t, np.diff(np.concatenate([[0.0], total]))


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
    "first order (a·eta_t)": "first order",
    "first order, zero mean (eta_t·z)": "first order",
    "intermediate (eta_t^1.5)": "first order",
    "second order (b·eta_t^2)": "second order",
    "second order, negative mean": "second order",
}
"""The outcome each drift family should get (an intermediate rate still breaks the proof)."""


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
