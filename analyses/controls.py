"""Positive control for Theorem 1's bound test: convex logistic regression under SGD.

With η_t = η_0/√(t+1) on a smooth convex loss the bound (1/T) Σ ‖∇F(w_t)‖² = O(log T/√T) is
a textbook theorem, so the bound test of ``analyses.convergence`` must come out
"consistent" on it; a rule that rejects it is not calibrated (docs/MATH.md, "Theorem 1").

The toy (numpy, deterministic per seed, ~0.1 s for 2000 steps):

* data: ``n`` points x ~ N(0, I_d) with a bias feature, labels y ~ Bernoulli(σ(⟨w*, x⟩))
  (noisy, so not separable: F has a finite minimiser);
* F(w) = mean logistic loss over the ``n`` points; minibatches of ``batch`` points drawn
  with replacement, split into two halves;
* Ĝ_t = ⟨g^{(1)}_t, g^{(2)}_t⟩ of the two halves' mean gradients at w_t (unbiased for
  ‖∇F(w_t)‖²), also the biased ‖g_t‖² and the exact ‖∇F(w_t)‖²;
* update w_{t+1} = w_t − η_t·g_t with g_t the full minibatch's mean gradient; η_t = η_0/√(t+1)
  (``schedule = "inv_sqrt"``) or η_0 (``"constant"``, the negative control).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["SCHEDULES", "LogisticToy", "logistic_control", "logistic_table"]

SCHEDULES = ("inv_sqrt", "constant")


@dataclass(frozen=True)
class LogisticToy:
    """Sizes and step size of the toy; the defaults take ~0.1 s per 2000 steps."""

    n: int = 2000
    dim: int = 10
    batch: int = 16
    lr: float = 0.5  # η_0
    signal: float = 1.0  # scale of w*
    schedule: str = "inv_sqrt"  # η_t = η_0/√(t+1), or "constant": η_t = η_0

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _grad(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x.T @ (_sigmoid(x @ w) - y) / len(y)


def logistic_control(steps: int, seed: int, toy: LogisticToy = LogisticToy(), *, exact: bool = True) -> pd.DataFrame:
    """One SGD run of the toy: a table with ``step``, ``grad_sq_unbiased`` (Ĝ_t),
    ``grad_norm_sq`` (biased ‖g_t‖²), ``full_grad_sq`` (‖∇F(w_t)‖²), ``lr`` and ``loss``.

    ``exact=False`` skips the full-data gradient and loss (NaN columns): the same SGD path,
    cheaper."""
    rng = np.random.default_rng(seed)
    x = np.hstack([rng.standard_normal((toy.n, toy.dim)), np.ones((toy.n, 1))])
    w_star = toy.signal * rng.standard_normal(toy.dim + 1) / np.sqrt(toy.dim)
    y = (rng.random(toy.n) < _sigmoid(x @ w_star)).astype(float)
    w = np.zeros(toy.dim + 1)
    half = toy.batch // 2
    rows = {k: np.empty(steps) for k in ("grad_sq_unbiased", "grad_norm_sq", "full_grad_sq", "lr", "loss")}
    for t in range(steps):
        idx = rng.integers(0, toy.n, size=toy.batch)
        g1 = _grad(w, x[idx[:half]], y[idx[:half]])
        g2 = _grad(w, x[idx[half:]], y[idx[half:]])
        g = (half * g1 + (toy.batch - half) * g2) / toy.batch
        lr = toy.lr / np.sqrt(t + 1.0) if toy.schedule == "inv_sqrt" else toy.lr
        rows["grad_sq_unbiased"][t] = float(g1 @ g2)
        rows["grad_norm_sq"][t] = float(g @ g)
        rows["lr"][t] = lr
        if exact:
            full = _grad(w, x, y)
            z = x @ w
            rows["full_grad_sq"][t] = float(full @ full)
            rows["loss"][t] = float(np.mean(np.logaddexp(0.0, z) - y * z))
        else:
            rows["full_grad_sq"][t] = rows["loss"][t] = float("nan")
        w = w - lr * g
    return pd.DataFrame({"step": np.arange(steps), **rows})


def logistic_table(
    steps: int, seeds: Sequence[int], toy: LogisticToy = LogisticToy(), *, exact: bool = True
) -> pd.DataFrame:
    """``logistic_control`` for each seed, stacked, with a ``seed`` column."""
    return pd.concat([logistic_control(steps, s, toy, exact=exact).assign(seed=s) for s in seeds], ignore_index=True)
