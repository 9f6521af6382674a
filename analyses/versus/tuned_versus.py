"""ZeroLock against backprop with each method at its own best η_0 (docs/TUNED.md, MATH.md).

Over the runs of a tuned grid (``analyses.versus.tuning``), each method at the η_0 that the
validation split chose:

* **held-out CE at the budget on the test split** (``test/ce``, the last logged value), per
  method, with its t-interval over seeds;
* **two comparisons**, ZeroLock forward − backprop and ZeroLock reverse − backprop, **paired by
  seed** (a seed fixes the adapters' initialisation and the batch order for every method):
  the t-interval of the per-seed differences and the two-sided paired t-test's p-value;
* **Holm over the two comparisons** at level α = 1 − ``level``: sort the p-values, reject the
  j-th smallest while p_(j) ≤ α / (m − j + 1) (m = 2). A rejected comparison reads "zerolock
  worse" or "zerolock better" by the sign of the mean difference, one not rejected "no
  difference detected", fewer than ``MIN_SEEDS`` paired seeds "not testable". The intervals
  are shown at ``level`` and at the Bonferroni level 1 − α/m (which Holm's first step uses);
* **steps to backprop's CE**: the first step at which a variant's mean test-CE curve (mean
  over its seeds at the eval steps) is ≤ backprop's mean test CE at the budget; ``None``
  ("not reached within the budget") when it never is.

The selection never reads the test split, and nothing here depends on the labels or the order
of the η_0 grid: only the chosen runs' values enter.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from analyses.results import Interval, Result, declare, register
from analyses.stats.seeds import MIN_SEEDS, seed_interval
from analyses.versus.pilot import steps_to_ce
from analyses.versus.tuning import Selection, TunedRun, select_all

__all__ = ["TUNED_OUTCOMES", "Comparison", "MethodResult", "TunedVersus", "holm", "mean_test_curve", "tuned_versus"]

TUNED_OUTCOMES = ("zerolock worse", "no difference detected", "zerolock better", "not testable")
VARIANTS = ("zerolock-forward", "zerolock-reverse")


@dataclass(frozen=True)
class MethodResult:
    """One method at its chosen η_0: the choice, the seeds and the test CE at the budget."""

    method: str
    lr: float
    on_boundary: bool
    seeds: tuple[int, ...]
    test_ce: Interval | None
    test_ce_by_seed: dict[int, float]
    validation_scores: dict[float, float]
    initial_test_ce: float


@dataclass(frozen=True)
class Comparison:
    """One ZeroLock variant − backprop, paired by seed, with its Holm decision."""

    variant: str
    outcome: str
    difference: Interval | None
    difference_bonferroni: Interval | None
    p_value: float
    holm_rejected: bool
    seeds: tuple[int, ...]
    steps_to_backprop: int | None


@register
@dataclass(frozen=True)
class TunedVersus(Result):
    """The tuned comparison: every method, and each variant against backprop (module docstring)."""

    kind = "tuned_versus"

    methods: dict[str, MethodResult]
    comparisons: dict[str, Comparison]
    target_ce: float
    budget: int
    level: float
    curves: tuple[dict, ...] = ()
    """The chosen runs' test-split curves (``analyses.versus.tuned.curves_table`` records), for the report's figures."""


TUNED = declare("versus_tuned", TunedVersus, builtin=True)


def holm(p_values: Mapping[str, float], alpha: float) -> dict[str, bool]:
    """Holm's step-down rejections at family level ``alpha`` (NaN p-values are never rejected)."""
    finite = sorted((p, k) for k, p in p_values.items() if math.isfinite(p))
    m = len(p_values)
    out = {k: False for k in p_values}
    for j, (p, key) in enumerate(finite):
        if p > alpha / (m - j):
            break
        out[key] = True
    return out


def _chosen(runs: Sequence[TunedRun], selection: Selection) -> list[TunedRun]:
    return sorted((r for r in runs if r.method == selection.method and r.lr == selection.lr), key=lambda r: r.seed)


def mean_test_curve(runs: Sequence[TunedRun]):
    """Mean over runs of the test-split CE against steps done (0 = the initial value), at the steps
    every run logged (``analyses.versus.data.TunedData``)."""
    import pandas as pd

    curves = []
    for run in runs:
        data = run.data
        if data is None or not data.test.logged:
            continue
        curve = pd.Series(data.test.ce, index=data.test.steps + 1)
        if not math.isnan(data.test_initial):
            curve = pd.concat([pd.Series([data.test_initial], index=[0]), curve])
        curves.append(curve)
    if not curves:
        return pd.Series(dtype=float)
    return pd.concat(curves, axis=1, join="inner").mean(axis=1).sort_index()


def _method(runs: Sequence[TunedRun], selection: Selection, level: float) -> MethodResult:
    chosen = _chosen(runs, selection)
    by_seed = {r.seed: r.test for r in chosen}
    initial = mean_test_curve(chosen[:1])
    return MethodResult(selection.method, selection.lr, selection.on_boundary, tuple(by_seed),
                        seed_interval(by_seed.values(), level), by_seed, selection.scores,
                        float(initial.iloc[0]) if len(initial) else math.nan)


def _paired(a: dict[int, float], b: dict[int, float]) -> tuple[list[int], np.ndarray]:
    seeds = sorted(s for s in set(a) & set(b) if math.isfinite(a[s]) and math.isfinite(b[s]))
    return seeds, np.array([a[s] - b[s] for s in seeds])


def tuned_versus(runs: Sequence[TunedRun], level: float = 0.95) -> TunedVersus:
    """The comparison over a tuned grid's runs (module docstring); needs a backprop group."""
    selections = select_all(runs)
    if "backprop" not in selections:
        raise ValueError("a tuned comparison needs backprop runs")
    methods = {m: _method(runs, s, level) for m, s in selections.items()}
    bp = methods["backprop"]
    target = float(np.mean([v for v in bp.test_ce_by_seed.values() if math.isfinite(v)] or [math.nan]))
    alpha = 1.0 - level
    variants = [v for v in VARIANTS if v in methods]
    paired = {v: _paired(methods[v].test_ce_by_seed, bp.test_ce_by_seed) for v in variants}
    p_values = {v: (float(stats.ttest_1samp(d, 0.0).pvalue) if len(d) >= MIN_SEEDS and np.ptp(d) > 0
                    else (0.0 if len(d) >= MIN_SEEDS and d[0] != 0 else math.nan))
                for v, (_, d) in paired.items()}
    rejected = holm(p_values, alpha)
    comparisons = {}
    for v in variants:
        seeds, d = paired[v]
        diff = seed_interval(d, level)
        if diff is None:
            outcome = "not testable"
        elif rejected[v]:
            outcome = "zerolock worse" if diff.estimate > 0 else "zerolock better"
        else:
            outcome = "no difference detected"
        curve = mean_test_curve(_chosen(runs, selections[v]))
        comparisons[v] = Comparison(v, outcome, diff, seed_interval(d, 1.0 - alpha / len(variants)),
                                    p_values[v], rejected[v], tuple(seeds), steps_to_ce(curve, target))
    budget = max((r.steps for r in runs), default=0)
    return TunedVersus(methods, comparisons, target, budget, level)
