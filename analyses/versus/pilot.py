"""ZeroLock against backprop: the abstract's claim as statistics (docs/THEOREM1.md).

The abstract says ZeroLock's rate "differs from BP only by polylog factors" and reports a
held-out CE after 1000 steps. On the task loss L = CE(p_y, p_K), for two groups of runs (one
run per seed each):

* the rate description (``analyses.theorem1.rate.describe_rate``) of each method's global Ĝ_t
  (``GLOBAL_COLUMN``: two independent half-batches of the training batch, full backprop
  through all chunks: unbiased, no floor), and the difference of their exponents
  β_ZeroLock − β_backprop;
* the held-out CE at T (``CE_COLUMN``, the last logged value of each run), ZeroLock − backprop;
* steps to the same held-out CE: with c* = the larger (worse) of the two methods' mean final
  CE, the first eval step at which each method's mean CE curve (mean over its seeds at the
  eval steps every seed logged) is ≤ c*. The worse method reaches c* at its own horizon (or
  earlier if its curve went below and came back); ``None`` when a curve never reaches it.

Differences and their intervals: **paired by seed** when at least ``MIN_SEEDS`` seed names
are common to both groups (a seed redraws the adapter initialisation and batch order, shared
by the two methods, so the paired difference removes that noise): the t-interval of the
per-seed differences; otherwise **Welch**'s interval (unequal variances, ``scipy.stats``).

Outcome (``VERSUS_OUTCOMES``) on the held-out CE difference: interval above 0 → "zerolock
worse", below 0 → "zerolock better", else "no difference detected"; no interval → "not
testable". Deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from analyses.io import RunDataError
from analyses.results import Interval, Result, declare, register
from analyses.stats.seeds import MIN_SEEDS, seed_interval
from analyses.theorem1.rate import WINDOWS, RateDescription, describe_rate
from analyses.versus.data import CECurve, VersusRun, ce_curve, versus_run
from zerolock_theory.records import EVAL_CE, GLOBAL_GRAD_SQ_UNBIASED

__all__ = [
    "CE_COLUMN",
    "GLOBAL_COLUMN",
    "PAIRINGS",
    "VERSUS_OUTCOMES",
    "Versus",
    "difference_interval",
    "final_ce",
    "mean_curve",
    "mean_of_curves",
    "steps_to_ce",
    "versus",
    "versus_of",
]

GLOBAL_COLUMN = GLOBAL_GRAD_SQ_UNBIASED
CE_COLUMN = EVAL_CE
VERSUS_OUTCOMES = ("zerolock worse", "no difference detected", "zerolock better", "not testable")
PAIRINGS = ("paired by seed", "Welch", "none")


def difference_interval(a: Mapping[str, float], b: Mapping[str, float], level: float = 0.95
                        ) -> tuple[Interval | None, str]:
    """Interval of mean(a) − mean(b) over seeds and its pairing (``PAIRINGS``); module docstring."""
    a = {k: float(v) for k, v in a.items() if math.isfinite(v)}
    b = {k: float(v) for k, v in b.items() if math.isfinite(v)}
    common = sorted(set(a) & set(b))
    if len(common) >= MIN_SEEDS:
        return seed_interval([a[k] - b[k] for k in common], level), PAIRINGS[0]
    x, y = np.array(list(a.values())), np.array(list(b.values()))
    if x.size < MIN_SEEDS or y.size < MIN_SEEDS:
        return None, PAIRINGS[2]
    ci = stats.ttest_ind(x, y, equal_var=False).confidence_interval(level)
    return Interval(float(x.mean() - y.mean()), float(ci.low), float(ci.high), level), PAIRINGS[1]


def final_ce(frame: pd.DataFrame, column: str = CE_COLUMN, *, where: str = "run") -> tuple[int, float]:
    """``(step, CE)`` of the last logged held-out CE of one run (``analyses.versus.data.ce_curve``)."""
    return ce_curve(frame, column, where=where).last()


def mean_of_curves(curves: Sequence[CECurve]) -> pd.Series:
    """Mean over runs of their CE at the steps every run logged (index: step, sorted)."""
    series = [pd.Series(c.ce, index=c.steps) for c in curves]
    table = pd.concat(series, axis=1, join="inner") if series else pd.DataFrame()
    return table.mean(axis=1).sort_index()


def mean_curve(frames: Sequence[pd.DataFrame], column: str = CE_COLUMN) -> pd.Series:
    """``mean_of_curves`` of ``column`` over metrics frames."""
    return mean_of_curves([ce_curve(frame, column) for frame in frames])


def steps_to_ce(curve: pd.Series, target: float) -> int | None:
    """The first step at which ``curve`` ≤ ``target`` (``None`` if never)."""
    reached = curve[curve <= target + 1e-12]
    return int(reached.index[0]) if len(reached) else None


@register
@dataclass(frozen=True)
class Versus(Result):
    """ZeroLock against backprop on the task loss (module docstring)."""

    kind = "versus_backprop"
    outcome: str
    rate_zerolock: RateDescription | None
    rate_backprop: RateDescription | None
    beta_difference: Interval | None  # β_ZeroLock − β_backprop
    beta_pairing: str
    ce_zerolock: Interval | None
    ce_backprop: Interval | None
    ce_difference: Interval | None  # ZeroLock − backprop, nats
    ce_pairing: str
    target_ce: float
    steps_zerolock: int | None
    steps_backprop: int | None
    notes: list[str]

    def __post_init__(self) -> None:
        if self.outcome not in VERSUS_OUTCOMES:
            raise ValueError(f"versus outcome must be one of {VERSUS_OUTCOMES}, got {self.outcome!r}")


VERSUS = declare("versus_backprop", Versus)


def _rate(runs: Sequence[VersusRun], column: str, label: str, notes: list[str], **kwargs
          ) -> tuple[RateDescription | None, dict[str, float]]:
    unread = next((r for r in runs if r.t is None), None)
    if unread is not None:
        notes.append(f"{label}: {unread.rate_missing}")
        return None, {}
    series = [(r.t, r.g) for r in runs]
    rate = describe_rate(series, names=[r.name for r in runs], label=label, column=column, **kwargs)
    return rate, {s.name: s.beta for s in rate.per_seed}


def _ce(runs: Sequence[VersusRun], label: str, notes: list[str]) -> dict[str, float]:
    out = {}
    for run in runs:
        try:
            out[run.name] = run.ce.last()[1]
        except RunDataError as exc:
            notes.append(f"{label}: {exc}")
    return out


def versus_of(
    zerolock: Sequence[VersusRun],
    backprop: Sequence[VersusRun],
    *,
    column: str = GLOBAL_COLUMN,
    window: float = WINDOWS[0],
    level: float = 0.95,
) -> Versus:
    """The comparison over each method's seeds (``analyses.versus.data.versus_run``, read with
    ``column``); seed names pair runs."""
    notes: list[str] = []
    rz, bz = _rate(zerolock, column, "ZeroLock", notes, window=window, level=level)
    rb, bb = _rate(backprop, column, "backprop", notes, window=window, level=level)
    beta_diff, beta_pairing = difference_interval(bz, bb, level)
    cz, cb = _ce(zerolock, "ZeroLock", notes), _ce(backprop, "backprop", notes)
    ce_diff, ce_pairing = difference_interval(cz, cb, level)
    target, steps_z, steps_b = math.nan, None, None
    if cz and cb:
        target = max(float(np.mean(list(cz.values()))), float(np.mean(list(cb.values()))))
        steps_z = steps_to_ce(mean_of_curves([r.ce for r in zerolock if r.name in cz]), target)
        steps_b = steps_to_ce(mean_of_curves([r.ce for r in backprop if r.name in cb]), target)
    if ce_diff is None:
        outcome = "not testable"
    elif ce_diff.low > 0:
        outcome = "zerolock worse"
    elif ce_diff.high < 0:
        outcome = "zerolock better"
    else:
        outcome = "no difference detected"
    return Versus(outcome, rz, rb, beta_diff, beta_pairing, seed_interval(cz.values(), level),
                  seed_interval(cb.values(), level), ce_diff, ce_pairing, target, steps_z, steps_b, notes)


def versus(
    zerolock: Sequence[tuple[str, pd.DataFrame]],
    backprop: Sequence[tuple[str, pd.DataFrame]],
    *,
    column: str = GLOBAL_COLUMN,
    ce_column: str = CE_COLUMN,
    window: float = WINDOWS[0],
    level: float = 0.95,
) -> Versus:
    """``versus_of`` over ``(seed name, metrics frame)`` pairs of each method."""
    def read(runs: Sequence[tuple[str, pd.DataFrame]]) -> list[VersusRun]:
        return [versus_run(frame, name, column=column, ce_column=ce_column) for name, frame in runs]

    return versus_of(read(zerolock), read(backprop), column=column, window=window, level=level)
