"""Outcome: held-out CE of the final chunk over training, ZeroLock next to backprop.

Per run, from ``eval/ce`` (CE(e_y, p_K) at ω^{t+1}, every ``eval_every`` steps) and
``eval/ce_initial`` (at ω^0):

* start = ``eval/ce_initial`` when present, else the first ``eval/ce``;
* end = the last ``eval/ce``; best = the minimum over start and every ``eval/ce``;
* relative improvement = (start − end) / start.

Per group of runs (same method and settings, several seeds) each number is the mean over
runs, and the curve is the mean ``eval/ce`` over the eval steps common to all runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.descriptive.data import HeldOut, held_out
from analyses.results import NotMeasured, Result, declare, register
from zerolock_theory.records import EVAL_CE, EVAL_CE_INITIAL

__all__ = ["OutcomeComparison", "OutcomeGroup", "OutcomeRun", "compare_held_out", "compare_outcomes", "outcome_of",
           "outcome_run"]

EVAL = EVAL_CE
INITIAL = EVAL_CE_INITIAL


@dataclass(frozen=True)
class OutcomeRun:
    """Start, end, best and relative improvement of one run's held-out CE."""

    run: str
    start: float
    end: float
    best: float
    relative_improvement: float
    steps: list[int]
    ce: list[float]


def outcome_of(data: HeldOut) -> OutcomeRun:
    """The outcome numbers of one run (module docstring); ``NotMeasured`` without ``eval/ce``."""
    if data.missing:
        raise NotMeasured(data.missing)
    start = float(data.ce[0]) if data.initial is None else data.initial
    end = float(data.ce[-1])
    best = float(min(start, data.ce.min()))
    rel = (start - end) / start if start != 0 else math.nan
    return OutcomeRun(data.run, start, end, best, float(rel), data.steps.tolist(), data.ce.tolist())


def outcome_run(frame: pd.DataFrame, run: str = "run") -> OutcomeRun:
    """``outcome_of`` the run's ``analyses.descriptive.data.held_out``."""
    return outcome_of(held_out(frame, run))


@dataclass(frozen=True)
class OutcomeGroup:
    """Mean outcome numbers over the runs (seeds) of one group, and the mean curve."""

    group: str
    method: str
    runs: list[OutcomeRun]
    start: float
    end: float
    best: float
    relative_improvement: float
    steps: list[int]
    mean_ce: list[float]


@register
@dataclass(frozen=True)
class OutcomeComparison(Result):
    """Outcome per group of runs (ZeroLock groups and backprop groups side by side)."""

    kind = "outcome"
    groups: list[OutcomeGroup]

    def best_end(self, method: str) -> OutcomeGroup | None:
        """The group of ``method`` with the lowest final CE."""
        cands = [g for g in self.groups if g.method == method]
        return min(cands, key=lambda g: g.end) if cands else None


OUTCOME = declare("outcome", OutcomeComparison, builtin=True)


def compare_held_out(groups: Mapping[str, tuple[str, Sequence[HeldOut]]]) -> OutcomeComparison:
    """``{group: (method, [held-out CE of each run, ...])}`` → per-group means (module docstring).

    Guarantees: group numbers are means of the run numbers; ``mean_ce`` is the mean over runs
    at their common eval steps. Raises ``NotMeasured`` when no run has ``eval/ce``.
    """
    out = []
    for label, (method, runs) in groups.items():
        measured = [outcome_of(r) for r in runs if not r.missing]
        if not measured:
            continue
        common = sorted(set.intersection(*(set(r.steps) for r in measured)))
        curves = [[dict(zip(r.steps, r.ce, strict=True))[s] for s in common] for r in measured]
        mean = np.mean(curves, axis=0).tolist() if common else []
        out.append(
            OutcomeGroup(
                group=label,
                method=method,
                runs=measured,
                start=float(np.mean([r.start for r in measured])),
                end=float(np.mean([r.end for r in measured])),
                best=float(np.mean([r.best for r in measured])),
                relative_improvement=float(np.mean([r.relative_improvement for r in measured])),
                steps=common,
                mean_ce=mean,
            )
        )
    if not out:
        raise NotMeasured(f"no run has {EVAL}")
    return OutcomeComparison(out)


def compare_outcomes(
    groups: Mapping[str, tuple[str, Sequence[tuple[str, pd.DataFrame]]]],
) -> OutcomeComparison:
    """``compare_held_out`` over ``{group: (method, [(run, metrics), ...])}``."""
    return compare_held_out({label: (method, [held_out(frame, name) for name, frame in runs])
                             for label, (method, runs) in groups.items()})
