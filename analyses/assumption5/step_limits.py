"""The limit of f(c)/c as c → 0 at each scaled step, shared by Assumption 5 and the drift's order.

The ``scaling`` probe evaluates a quantity f (φ or the drift) at ω^t + c·Δω_t for factors
c_1 > … > c_n. With s(c) = f(c)/c = f′ + b·c + d·c² + O(c³), the quadratic through s at the three
smallest factors, evaluated at c = 0 (Richardson extrapolation of order 2), is f̂′; it is exact
when f is a cubic in c. The same through the next three factors up gives f̂′_prev, and
err = |f̂′ − f̂′_prev| estimates its error (float noise included: s(c) amplifies it by 1/c).
With S = max_c |s(c)| and τ = max(err, ``RESOLUTION``·S) a step's sign is +1 when f̂′ > τ, −1
when f̂′ < −τ, 0 when |f̂′| ≤ τ and err ≤ ``RESOLUTION``·S (zero at the design's resolution:
f(c) = O(c²)), else unresolved (NaN), as where some f(c) is not finite.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analyses.assumption5.data import Scaled, read_scaled, scaled_rows, scaling_factors
from analyses.results import NotMeasured

__all__ = ["MIN_FACTORS", "MIN_STEPS", "RESOLUTION", "phi_prime", "scaled_rows", "scaling_factors", "scaling_table",
           "step_signs", "table_of"]

MIN_FACTORS = 4
"""Factors needed per scaled step: three for φ̂′, a fourth for its error."""
MIN_STEPS = 24
"""Resolved scaled steps a seed needs to count: the suites scale 30–32 steps per run, so up to
6–8 unresolved steps per seed leave it counted."""
RESOLUTION = 1e-3
"""|φ′| below this fraction of max_c |φ(c)/c| is zero at the design's resolution."""

def _extrapolate(c: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Value at c = 0 of the quadratic through (c_j, s[:, j]), j = 0..2 (Lagrange weights)."""
    out = np.zeros(s.shape[0])
    for i in range(3):
        others = [j for j in range(3) if j != i]
        weight = np.prod([c[j] / (c[j] - c[i]) for j in others])
        out = out + weight * s[:, i]
    return out


def phi_prime(c: np.ndarray, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(φ̂′, err, S) per row of ``phi`` [steps, factors] at factors ``c`` (largest first)."""
    s = phi / c
    n = c.size
    estimate = _extrapolate(c[n - 3:], s[:, n - 3:])
    err = np.abs(estimate - _extrapolate(c[n - 4:n - 1], s[:, n - 4:n - 1]))
    return estimate, err, np.abs(s).max(axis=1)


def step_signs(c: Sequence[float], values: np.ndarray, resolution: float = RESOLUTION) -> np.ndarray:
    """The sign of the limit of values(c)/c as c → 0 per scaled step: +1, −1, 0 (zero at the design's
    resolution: values(c) = O(c²)) or NaN (unresolved, or a value not finite); module docstring."""
    c = np.asarray(c, dtype=float)
    values = np.atleast_2d(np.asarray(values, dtype=float))
    if c.size < MIN_FACTORS or values.shape[1] != c.size:
        raise ValueError(f"need >= {MIN_FACTORS} factors, one column each")
    finite = np.isfinite(values).all(axis=1)
    out = np.full(values.shape[0], np.nan)
    if not finite.any():
        return out
    with np.errstate(invalid="ignore", divide="ignore"):
        est, err, scale = phi_prime(c, values[finite])
    floor = resolution * scale
    tau = np.maximum(err, floor)
    out[finite] = np.where(est > tau, 1.0, np.where(est < -tau, -1.0, np.where(err <= floor, 0.0, np.nan)))
    return out


def table_of(scaled: Scaled, obj: str, run: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(c, φ [steps, factors], ρ [steps, factors]) of one read direction over the rows that scaled a step;
    ``NotMeasured`` with fewer than ``MIN_FACTORS`` factors."""
    if len(scaled.factors) < MIN_FACTORS:
        raise NotMeasured(f"{run}: fewer than {MIN_FACTORS} factors in probe/scaling/{obj} ({scaled.direction})")
    return scaled.factors, scaled.phi, scaled.rho


def scaling_table(frame: pd.DataFrame, obj: str, direction: str, run: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``table_of`` one direction read from a run's metrics (``analyses.assumption5.data.read_scaled``)."""
    return table_of(read_scaled(frame, obj, direction, run), obj, run)
