"""Theorem 1 over a set of runs: bound tests per group, the primary group, controls, diverged runs.

``theorem1_results(table)`` takes ``(info, frame)`` pairs (``analyses.suite.RunInfo`` and the
metrics table) and returns the results the verdict rows read:

* ``diverged`` (``DivergedRuns``): the runs outside the theorem's hypotheses
  (``analyses.stats.seeds.diverged``); they are excluded from every bound test below.
* ``convergence_reverse`` / ``convergence_forward`` (``BoundSet``): ZeroLock's local Ĝ_t
  (``train/grad_sq_unbiased`` = Σ_k ⟨g^{(1)}_k, g^{(2)}_k⟩) by training direction: R (paper,
  reverse) and R̄ (implemented, forward).
* ``convergence_backprop``: backprop's Ĝ_t, the positive control run on the model.
* ``convergence_global`` / ``convergence_global_backprop``: ‖∇L‖² on the probe batch
  (``probe/gradient/global_sq``) of the ZeroLock forward groups (what implementations train)
  and of backprop: the
  abstract's comparison with backprop, which Theorem 1 does not cover.
* ``control_logistic``: the convex toy (``analyses.theorem1.controls``, batch 256) at the primary horizon, 10 seeds.

Primary group (pre-registered rule, decided before looking at outcomes): among groups
trained with SGD and η_t ∝ 1/√t (``optim.schedule = inv_sqrt``), the one with the most
runs (seeds), diverged ones included; ties go to the smaller η_0, then the first group label
in sorted order. Its diverged runs are excluded from its test (which may then be "not
testable"), never replaced by another group. Other groups are descriptive.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analyses.io import RunDataError
from analyses.results import NotMeasured, Result, declare, register
from analyses.stats.seeds import split_diverged
from analyses.theorem1.controls import LogisticToy, logistic_table
from analyses.theorem1.convergence import (
    GHAT_COLUMN,
    GLOBAL_COLUMN,
    BoundTest,
    bound_test,
    series_from_table,
)
from analyses.theorem1.data import rate_series

__all__ = ["CONTROL_SEEDS", "CONTROL_TOY", "BoundSet", "DivergedRuns", "primary_index", "theorem1_results"]

CONTROL_TOY = LogisticToy(batch=256)
CONTROL_SEEDS = tuple(range(10))  # cheap, and a tighter seed interval than 3 seeds


@register
@dataclass(frozen=True)
class DivergedRuns(Result):
    """Runs flagged as diverged (name → reason); excluded from every verdict."""

    kind = "diverged_runs"
    runs: dict[str, str]


@register
@dataclass(frozen=True)
class BoundSet(Result):
    """Bound tests of one quantity, one per group of runs; ``primary`` indexes the primary one (-1: none)."""

    kind = "bound_set"
    quantity: str
    column: str
    tests: list[BoundTest]
    schedules: list[str]
    lrs: list[float]
    primary: int
    notes: list[str]

    def primary_test(self) -> BoundTest | None:
        """The primary group's test, or None when no group ran the theorem's schedule."""
        return self.tests[self.primary] if self.primary >= 0 else None


DIVERGED = declare("diverged", DivergedRuns, builtin=True)
CONVERGENCE = {name: declare(f"convergence_{name}", BoundSet, builtin=True)
               for name in ("reverse", "forward", "backprop", "global", "global_backprop")}
"""Theorem 1's bound test per group: local Ĝ_t of each ZeroLock direction and backprop, and the global one."""
CONTROL_LOGISTIC = declare("control_logistic", BoundTest, builtin=True)


def primary_index(tests: Sequence[BoundTest], schedules: Sequence[str], lrs: Sequence[float]) -> int:
    """The primary group (module docstring): most runs under ``inv_sqrt``, then the smaller η_0."""
    best, key = -1, None
    for i, (test, schedule, lr) in enumerate(zip(tests, schedules, lrs, strict=True)):
        if schedule != "inv_sqrt":
            continue
        k = (test.seeds + len(test.excluded), -lr)
        if key is None or k > key:
            best, key = i, k
    return best


def _bound_set(quantity: str, column: str, runs, excluded: dict[str, str], level: float) -> BoundSet:
    if not runs:
        raise NotMeasured(f"no run for the {quantity} bound test")
    by_group: dict[str, list] = {}
    for info, frame in runs:
        by_group.setdefault(info.group, []).append((info, frame))
    tests, schedules, lrs, notes = [], [], [], []
    for group, members in sorted(by_group.items()):
        gone = [n for n in excluded if n in {i.name for i, _ in members}]
        kept = [(i, f) for i, f in members if i.name not in excluded]
        try:
            series = [rate_series(f, column, i.name).pair() for i, f in kept]
        except RunDataError as exc:
            notes.append(f"{group}: {exc}")
            continue
        tests.append(bound_test(series, names=[i.name for i, _ in kept], label=group, column=column,
                                level=level, excluded=gone))
        schedules.append(members[0][0].schedule if members[0][0].optimizer == "sgd" else "")
        lrs.append(members[0][0].lr)
    if not tests:
        raise NotMeasured("; ".join(notes) or f"no usable run for the {quantity} bound test")
    return BoundSet(quantity, column, tests, schedules, lrs, primary_index(tests, schedules, lrs), notes)


def control_logistic(horizon: int, level: float = 0.95) -> BoundTest:
    """The convex control at ``horizon`` steps (at least 60), ``CONTROL_SEEDS``, its Ĝ_t."""
    table = logistic_table(max(60, horizon), CONTROL_SEEDS, CONTROL_TOY, exact=False)
    series = [series_from_table(part, "grad_sq_unbiased")[:2] for _, part in table.groupby("seed")]
    return bound_test(series, names=[f"seed {s}" for s in CONTROL_SEEDS],
                      label="logistic regression, SGD, eta_t ~ 1/sqrt(t)", column="grad_sq_unbiased", level=level)


def theorem1_results(
    table: Sequence[tuple[Any, pd.DataFrame]], level: float = 0.95
) -> tuple[dict[str, Result], dict[str, str]]:
    """Every Theorem 1 result that has its data, and the reasons for those that do not."""
    _, flagged = split_diverged(table, name=lambda item: item[0].name, frame=lambda item: item[1])
    excluded = {name: div.reason for name, div in flagged.items()}
    results: dict[str, Result] = {DIVERGED.name: DivergedRuns(excluded)}
    skipped: dict[str, str] = {}
    allruns = list(table)
    zl = {d: [(i, f) for i, f in allruns if i.method == "zerolock" and i.direction == d] for d in ("reverse", "forward")}
    bp = [(i, f) for i, f in allruns if i.method == "backprop"]
    jobs = {
        "reverse": ("local, reverse (R)", GHAT_COLUMN, zl["reverse"]),
        "forward": ("local, forward (R-bar)", GHAT_COLUMN, zl["forward"]),
        "backprop": ("backprop", GHAT_COLUMN, bp),
        "global": ("global, ZeroLock forward", GLOBAL_COLUMN, zl["forward"]),
        "global_backprop": ("global, backprop", GLOBAL_COLUMN, bp),
    }
    for group, (quantity, column, runs) in jobs.items():
        try:
            results[CONVERGENCE[group].name] = _bound_set(quantity, column, runs, excluded, level)
        except (RunDataError, NotMeasured) as exc:
            skipped[CONVERGENCE[group].name] = str(exc)
    horizons = [r.primary_test().horizon for r in results.values()
                if isinstance(r, BoundSet) and r.primary_test() is not None and r.column == GHAT_COLUMN]
    results[CONTROL_LOGISTIC.name] = control_logistic(max(horizons, default=60), level)
    return results, skipped
