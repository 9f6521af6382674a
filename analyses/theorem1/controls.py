"""Controls for Theorem 1: convex logistic regression under SGD, through the same code.

With η_t = η_0/√(t+1) on a smooth convex loss the bound (1/T) Σ ‖∇F(w_t)‖² = O(log T/√T) is
a textbook theorem, so the bound test of ``analyses.theorem1.convergence`` must come out "consistent" on
it and the rate description of ``analyses.theorem1.rate`` must read a fall (``DECAYS``). The negative
controls have a known answer by construction and must read neither a fall nor a fall onto a floor
(``NEGATIVE``): constant-step SGD (a noise ball), and each seed's own series shuffled inside the fit
window (no trend at all; ``shuffled``). The biased ‖g_t‖² (a floor plus a falling ‖∇F‖²) has no answer known by
construction and is descriptive. A rule that fails a control is not calibrated
(``rate_controls``; registered in docs/THEOREM1.md before the suite's rerun).

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.results import Result, declare, register
from analyses.theorem1.convergence import series_from_table
from analyses.theorem1.rate import (
    DECAYS,
    NO_DECAY,
    NOT_TESTABLE,
    WINDOW,
    RateDescription,
    block_edges,
    describe_rate,
)

__all__ = [
    "FLOOR_TOY",
    "NEGATIVE",
    "NEGATIVE_TOY",
    "POSITIVE",
    "POSITIVE_TOY",
    "RATE_CONTROL_SEEDS",
    "SCHEDULES",
    "SHUFFLE_SEED",
    "ControlCheck",
    "LogisticToy",
    "RateControls",
    "failed_controls",
    "logistic_control",
    "logistic_table",
    "rate_controls",
    "shuffled",
]

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


# --- Controls of Theorem 1 (a), the rate described, through ``analyses.theorem1.rate`` -----------------

POSITIVE_TOY = LogisticToy(batch=256, signal=4.0, lr=0.1)
"""Positive control: η_t = 0.1/√(t+1), batch 256, a near-separable w* (scale 4): at T = 1000 the
iterate is still far from the optimum, so ‖∇F‖² decays visibly above Ĝ_t's noise."""
NEGATIVE_TOY = LogisticToy(n=5000, dim=100, batch=64, signal=0.3, lr=8.0, schedule="constant")
"""Negative control (i): constant-step SGD, η = 8 (η·L ≈ 1, L ≤ ¼·λ_max(E xxᵀ) ≈ 0.36): the
iterate settles in its noise ball, whose ‖∇F‖² is large enough to measure against Ĝ_t's noise
(with a small constant step the ball's gradient is below that noise: "not testable")."""
FLOOR_TOY = LogisticToy()
"""Descriptive: the biased ‖g_t‖² of SGD with η_t ∝ 1/√t at batch 16 (its noise floor tr Σ/B
dominates ‖∇F‖² after a few hundred steps, but ‖∇F‖² still falls: no answer known by construction)."""
RATE_CONTROL_SEEDS = tuple(range(10))
SHUFFLE_SEED = 20261203
"""Seed of the within-window permutation of the shuffled controls (fixed: re-analysing cannot change them)."""
POSITIVE = DECAYS
NEGATIVE = (NO_DECAY, NOT_TESTABLE)
"""What a negative control may read: "no decay" or "not testable"; neither a fall nor a fall onto a floor
(both say the level fell)."""


@dataclass(frozen=True)
class ControlCheck:
    """One control: the outcomes it must read, and the one it read. An empty ``expected`` is a
    descriptive entry, shown beside the controls and never failed."""

    name: str
    expected: list[str]
    outcome: str
    passed: bool

    @property
    def descriptive(self) -> bool:
        return not self.expected


@register
@dataclass(frozen=True)
class RateControls(Result):
    """Every control of the rate rule; ``failed`` names those whose outcome is not expected."""

    kind = "rate_controls"
    checks: list[ControlCheck]
    descriptions: list[RateDescription]
    failed: list[str]


RATE_CONTROLS = declare("rate_controls", RateControls)


def _toy_series(toy: LogisticToy, column: str, horizon: int, seeds: Sequence[int]):
    table = logistic_table(horizon, seeds, toy, exact=False)
    return [series_from_table(part, column)[:2] for _, part in table.groupby("seed", sort=True)]


def rate_controls(
    horizon: int = 1000,
    seeds: Sequence[int] = RATE_CONTROL_SEEDS,
    *,
    extra: Mapping[str, tuple[RateDescription, Sequence[str]]] | None = None,
    window: float = WINDOW,
    level: float = 0.95,
) -> RateControls:
    """The toy controls at ``horizon`` (``describe_rate`` on each), plus ``extra`` ones from runs:
    name → (its description, the outcomes it may read; empty: descriptive), e.g. the row's own
    series shuffled with ``NEGATIVE`` and the model's noise floor ‖g_t‖² − Ĝ_t, descriptive.

    Toy controls: "positive: logistic, SGD eta_t ~ 1/sqrt(t)" (``POSITIVE_TOY``, Ĝ_t) must read
    ``POSITIVE``; its series shuffled inside the window and "negative: logistic, constant step"
    (``NEGATIVE_TOY``, Ĝ_t) must read ``NEGATIVE``; the biased ‖g_t‖² (``FLOOR_TOY``) is descriptive."""
    jobs = {
        "positive: logistic, SGD eta_t ~ 1/sqrt(t)": (POSITIVE_TOY, "grad_sq_unbiased", POSITIVE),
        "negative: logistic, constant step": (NEGATIVE_TOY, "grad_sq_unbiased", NEGATIVE),
        "descriptive: logistic, biased |g_t|^2 (a floor plus a falling |grad F|^2)": (FLOOR_TOY, "grad_norm_sq", ()),
    }
    described: dict[str, tuple[RateDescription, Sequence[str]]] = {}
    for name, (toy, column, expected) in jobs.items():
        series = _toy_series(toy, column, horizon, seeds)
        described[name] = (describe_rate(series, label=name, column=column, window=window, level=level), expected)
        if expected == POSITIVE:
            shuffled_name = "negative: the positive control's series shuffled inside the window"
            described[shuffled_name] = (describe_rate(shuffled(series, window), label=shuffled_name, column=column,
                                                      window=window, level=level), NEGATIVE)
    described.update(extra or {})
    checks = [ControlCheck(name, list(expected), d.outcome, not expected or d.outcome in expected)
              for name, (d, expected) in described.items()]
    return RateControls(checks, [d for d, _ in described.values()], failed_controls(checks))


def shuffled(series: Sequence[tuple[np.ndarray, np.ndarray]], window: float = WINDOW,
             seed: int = SHUFFLE_SEED) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each seed's own series with its values permuted inside the fit window (the steps of
    ``analyses.theorem1.rate.block_edges``): the same values, no trend by construction. Deterministic."""
    rng = np.random.default_rng(seed)
    out = []
    for t, g in series:
        t, g = np.asarray(t, dtype=float), np.array(g, dtype=float)
        inside = t > block_edges(int(t[-1]), window)[0]
        g[inside] = rng.permutation(g[inside])
        out.append((t, g))
    return out


def failed_controls(checks: Sequence[ControlCheck]) -> list[str]:
    """The names of the controls whose outcome is not among those they must read."""
    return [c.name for c in checks if not c.passed]
