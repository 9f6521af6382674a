"""Synthetic step-scaling runs with known answers, for Assumption 5 and the drift's order.

Every family gives, at each scaled step t of a seed (η_t = η_0/√(t+1)), the first-order
coefficient a_t and the second-order one b_t of

    φ(c) = c·a_t + c²·b_t + c³·d_t,   drift(c) = c·a_t + c²·b'_t,   q(c) = c²·η_t²·(1 + ν_t),

at the factors c = 1, ½, …, 1/64, with float-sized noise (1e-12 of |φ(1)|). The random direction
u_t has a_u = η_t·ζ_t (ζ standard normal) and the antithetic −u_t the mirror, φ(−u, c) =
−c·a_u + c²·b_u: exactly one of each pair is positive. ``frame`` writes the probe's keys, so the
rows read a family through the same code as a model run (``analyses.assumption5.scaling``,
``analyses.assumption5.along_run``, ``analyses.assumption5.drift_order``).

``FAMILIES`` names each family with its known answers: the trend of ρ_t along the run
(``along``), whether φ′ > 0 more often than chance (``chance``), the drift's order at fixed
iterates (``order``) and whether the drift at the step actually taken (c = 1) sums within
O(Σ η_t²) along the run, as Lemma 4 needs (``budget``: "within" / "not within"; a first-order
coefficient a_t that shrinks like η_t² is within, one that shrinks like η_t is not). ``docs/ASSUMPTION5_PROPOSITION1.md`` gives the confusion tables
(``benchmarks/calibrate_a5.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from zerolock_theory.records import LR, SCALING, SCALING_STEP, Layout, with_layout

__all__ = ["FACTORS", "FAMILIES", "Family", "frame"]

FACTORS: tuple[float, ...] = tuple(2.0**-i for i in range(7))
Coefficients = Callable[[np.ndarray, np.ndarray, np.random.Generator], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Family:
    """A construction and its known answers (``None``: no answer is known by construction)."""

    name: str
    coefficients: Coefficients  # (t, η_t, rng) → (a_t, b_t)
    along: str | None  # "grows" / "no growth"
    chance: str | None  # "more often than chance" / "not distinguished from chance" / "less often than chance"
    order: str  # "first order" / "second order"
    budget: str | None = None  # "within" / "not within": Σ drift_t(c = 1) = O(Σ η_t²) along the run
    drift_noise: float = 1.0  # scale of the zero-mean c²·η_t² term frame adds to drift(c) (0: an exact zero drift)


def _warm(t: np.ndarray, tau: float) -> np.ndarray:
    return np.ones_like(t) if tau <= 0 else (1.0 - np.exp(-(t + 1.0) / tau)) ** 2


def _gauss(mu: float, sigma: float) -> Coefficients:
    return lambda t, eta, rng: (eta * (mu + sigma * rng.normal(size=t.size)), 0.5 * eta**2 * np.ones_like(t))


def _second(tau: float) -> Coefficients:
    return lambda t, eta, rng: (np.zeros_like(t), eta**2 * (0.5 + rng.normal(size=t.size)) * _warm(t, tau))


FAMILIES: dict[str, Family] = {f.name: f for f in [
    Family("a = 0.5 eta^2 > 0 (A5 holds along the run)",
           lambda t, eta, rng: (0.5 * eta**2, 0.1 * eta**2 * np.ones_like(t)), "no growth", "more often than chance",
           "first order", "within"),
    Family("a = 0.5 eta^2, random sign", lambda t, eta, rng: (0.5 * eta**2 * rng.choice([-1.0, 1.0], t.size),
                                                               0.1 * eta**2 * np.ones_like(t)),
           "no growth", "not distinguished from chance", "first order", "within"),
    Family("a = eta (positive first order)", _gauss(1.0, 0.0), "grows", "more often than chance", "first order",
           "not within"),
    Family("a = 0.5 eta (first order, shrinking like eta)", _gauss(0.5, 0.0), "grows", "more often than chance",
           "first order", "not within"),
    Family("a = 0.5 (constant first order)", lambda t, eta, rng: (0.5 * np.ones_like(t), 0.5 * eta**2),
           "grows", "more often than chance", "first order", "not within"),
    *[Family(f"a = eta (mu + sigma xi), mu = +1, sigma/mu = {r:g}", _gauss(1.0, r), "grows",
             "more often than chance", "first order", "not within") for r in (0.3, 1.0, 3.0, 10.0)],
    *[Family(f"a = eta (mu + sigma xi), mu = -1, sigma/|mu| = {r:g}", _gauss(-1.0, r), "grows" if r >= 1 else None,
             "less often than chance", "first order", "not within" if r >= 1 else None) for r in (0.3, 1.0, 3.0)],
    # noise only: zero-mean first-order noise; its positive part sums like Σ η_t along the path
    Family("a = eta sigma xi (zero-mean first order)", _gauss(0.0, 1.0), "grows", "not distinguished from chance",
           "first order", "not within"),
    Family("zero drift", lambda t, eta, rng: (np.zeros_like(t), np.zeros_like(t)), "no growth", None,
           "second order", "within", drift_noise=0.0),
    Family("second order, stationary", _second(0), "no growth", None, "second order", "within"),
    # a warm-up makes a bounded ρ_t rise along a short run: the trend has no answer by construction
    *[Family(f"second order, warm-up tau = {tau:g}", _second(tau), None, None, "second order", "within")
      for tau in (10, 30, 100)],
]}


def frame(family: Family, seed: int, *, steps: int = 31, every: int = 1, eta0: float = 0.1,
          antithetic: bool = True) -> pd.DataFrame:
    """One seed's scaled steps as probe rows (``step``, ``train/lr`` and every scaling key of both
    objectives; the same arrays for both)."""
    rng = np.random.default_rng(seed)
    t = np.arange(steps, dtype=float) * every
    eta = eta0 / np.sqrt(t + 1.0)
    a, b = family.coefficients(t, eta, rng)
    c = np.asarray(FACTORS)[None, :]
    d = 0.05 * eta[:, None] ** 3 * rng.normal(size=(steps, 1))
    q = c**2 * eta[:, None] ** 2 * (1.0 + 0.1 * np.abs(rng.normal(size=(steps, 1))))

    def noisy(x: np.ndarray) -> np.ndarray:
        return x + 1e-12 * np.abs(x[:, :1]) * rng.normal(size=x.shape)

    phi = noisy(c * a[:, None] + c**2 * b[:, None] + c**3 * d)
    extra = family.drift_noise * eta[:, None] ** 2 * rng.normal(size=(steps, 1))
    drift = noisy(c * a[:, None] + c**2 * (b[:, None] + extra))
    a_u = eta * rng.normal(size=steps)
    b_u = 0.1 * eta**2 * rng.normal(size=steps)
    directions = {"actual": (phi, drift), "random": (noisy(c * a_u[:, None] + c**2 * b_u[:, None]), None)}
    if antithetic:
        directions["antithetic"] = (noisy(-c * a_u[:, None] + c**2 * b_u[:, None]), None)
    rec: dict[str, np.ndarray] = {"step": t.astype(int), LR: eta}
    for obj in ("paper", "implemented"):
        for direction, (p, dr) in directions.items():
            for j, cj in enumerate(FACTORS):
                rec[SCALING.key(obj, cj, "phi", direction)] = p[:, j]
                rec[SCALING.key(obj, cj, "q", direction)] = q[:, j]
                rec[SCALING.key(obj, cj, "ratio", direction)] = np.maximum(p[:, j], 0.0) / q[:, j]
                if dr is not None:
                    rec[SCALING.key(obj, cj, "drift", direction)] = dr[:, j]
            rec[SCALING_STEP.key(obj, "defined", direction)] = np.ones(steps, bool)
    return with_layout(pd.DataFrame(rec), Layout(1, factors=FACTORS, directions=tuple(directions)))
