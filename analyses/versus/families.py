"""Known-answer constructions for the tuned comparison, through the same code as the row.

Each construction builds ``TunedRun`` lists whose answer is known and runs them through
``analyses.versus.tuned_versus.tuned_versus`` (docs/TUNED.md shows the table). The runs come from a
small logistic-regression toy (numpy, deterministic per seed): ``n`` points x ~ N(0, I_d) plus
a bias feature, y ~ Bernoulli(σ(⟨w*, x⟩)), split once into train / validation / test (fixed by
``data_seed``, the same for every run); a seed draws the initial weights and the minibatch
order; SGD with η_t = η_0/√(t+1); the CE of each split is logged every ``eval_every`` steps.

* ``same``: one algorithm plays all three methods over one grid. Truth: no difference.
* ``handicap``: the ZeroLock "variants" add a fixed bias vector to every gradient (they
  converge to a worse point at every η_0). Truth: ZeroLock worse.
* ``untuned``: the same algorithm at a fixed pair of step sizes (ZeroLock 0.1, backprop 0.4),
  no selection: what the pilot's pair compares. Truth: no difference between the methods,
  the comparison reads the step sizes.
* ``relabelled``: ``same`` and ``handicap`` with the η_0 labels permuted. Truth: the outcome
  of the unrelabelled grid.
* ``split_disagreement``: runs whose validation CE prefers one η_0 and test CE another.
  Truth: the validation's choice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analyses.versus.data import tuned_data
from analyses.versus.tuning import METHODS, TunedRun
from zerolock_theory.records import EVAL_CE, EVAL_CE_INITIAL, STEP_TIME_S, TEST_CE, TEST_CE_INITIAL

__all__ = ["CONSTRUCTIONS", "logistic_runs", "relabel", "split_disagreement"]


def _data(n: int, dim: int, data_seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(data_seed)
    x = np.hstack([rng.normal(size=(n, dim)), np.ones((n, 1))])
    w_star = rng.normal(size=dim + 1)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-x @ w_star))).astype(float)
    return x, y


def _ce(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    z = x @ w
    return float(np.mean(np.logaddexp(0.0, z) - y * z))


def _sgd(x, y, splits, lr, seed, steps, batch, eval_every, bias) -> pd.DataFrame:
    rng = np.random.default_rng(1000 + seed)
    train, val, test = splits
    w = rng.normal(scale=0.1, size=x.shape[1])
    rows = [{"step": 0, EVAL_CE_INITIAL: _ce(w, x[val], y[val]), TEST_CE_INITIAL: _ce(w, x[test], y[test])}]
    for t in range(steps):
        idx = rng.choice(train, size=batch)
        z = x[idx] @ w
        grad = x[idx].T @ (1.0 / (1.0 + np.exp(-z)) - y[idx]) / batch + bias
        w = w - lr / np.sqrt(t + 1.0) * grad
        row = rows[0] if t == 0 else {"step": t}
        row[STEP_TIME_S] = 0.001
        if (t + 1) % eval_every == 0 or t + 1 == steps:
            row.update({EVAL_CE: _ce(w, x[val], y[val]), TEST_CE: _ce(w, x[test], y[test])})
        if t:
            rows.append(row)
    return pd.DataFrame(rows)


def logistic_runs(lrs: Sequence[float], seeds: Sequence[int], *, handicap: float = 0.0, steps: int = 300,
                  n: int = 600, dim: int = 8, batch: int = 8, eval_every: int = 25, data_seed: int = 0,
                  methods: Sequence[str] = METHODS) -> list[TunedRun]:
    """Every method × η_0 × seed of the toy; ZeroLock's gradients carry a bias of norm ``handicap``."""
    x, y = _data(n, dim, data_seed)
    order = np.random.default_rng(data_seed + 1).permutation(n)
    splits = (order[: n // 2], order[n // 2 : 3 * n // 4], order[3 * n // 4 :])
    direction = np.ones(x.shape[1]) / np.sqrt(x.shape[1])
    runs = []
    for method in methods:
        bias = 0.0 if method == "backprop" else handicap * direction
        for lr in lrs:
            for seed in seeds:
                frame = _sgd(x, y, splits, lr, seed, steps, batch, eval_every, bias)
                last = frame.dropna(subset=[TEST_CE]).iloc[-1]
                runs.append(TunedRun(method, float(lr), int(seed), float(last[EVAL_CE]), float(last[TEST_CE]),
                                     steps, tuned_data(frame)))
    return runs


def relabel(runs: Sequence[TunedRun], mapping: dict[float, float]) -> list[TunedRun]:
    """The same runs with each η_0 renamed by ``mapping`` (and listed in reverse order)."""
    return [TunedRun(r.method, mapping[r.lr], r.seed, r.validation, r.test, r.steps, r.data, r.path)
            for r in reversed(runs)]


def split_disagreement(lrs: Sequence[float] = (0.01, 0.1, 1.0), seeds: Sequence[int] = (0, 1, 2)) -> list[TunedRun]:
    """Validation prefers ``lrs[0]`` for every method, the test split ``lrs[-1]`` (by 1 nat)."""
    runs = []
    for method in METHODS:
        for i, lr in enumerate(lrs):
            for seed in seeds:
                val = 3.0 + 0.1 * i + 0.01 * seed
                test = 3.0 - 1.0 * i + 0.01 * seed + (0.2 if method != "backprop" else 0.0)
                runs.append(TunedRun(method, float(lr), int(seed), val, test, 100))
    return runs


GRID = (0.05, 0.2, 0.8)
PERMUTED = {0.05: 0.8, 0.2: 0.05, 0.8: 0.2}
SEEDS = (0, 1, 2)

CONSTRUCTIONS: dict[str, tuple[str, object]] = {
    "same algorithm as all three methods, tuned": ("no difference", lambda: logistic_runs(GRID, SEEDS)),
    "same algorithm, eta_0 grid relabelled": ("no difference",
                                               lambda: relabel(logistic_runs(GRID, SEEDS), PERMUTED)),
    "ZeroLock gradients biased (norm 0.3), tuned": ("zerolock worse",
                                                    lambda: logistic_runs(GRID, SEEDS, handicap=0.3)),
    "biased, eta_0 grid relabelled": ("zerolock worse",
                                      lambda: relabel(logistic_runs(GRID, SEEDS, handicap=0.3), PERMUTED)),
    "same algorithm, untuned pair (ZeroLock 0.05, backprop 0.8)": (
        "no difference (the pair measures step sizes)",
        lambda: logistic_runs((0.05,), SEEDS, methods=METHODS[:2]) + logistic_runs((0.8,), SEEDS, methods=METHODS[2:])),
    "test split prefers another eta_0": ("validation's choice (0.01)", split_disagreement),
}
"""Construction → (truth, runs); ``scripts/tuned_constructions.py`` prints the docs table."""
