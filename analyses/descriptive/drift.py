"""The drift check of Assumption 5 (docs/MATH.md, "Assumption 5", what the proof needs).

Lemma 4 uses D_T = Σ_{t<T} max(φ_t, 0) ≤ C_fo·Σ_{t<T} q_t, i.e. D_T growing no faster than
Σ η_t² (~ log T for η_t ∝ 1/√t). From the ``stability`` probe's totals
(``probe/stability/{obj}/total/{phi,q}``), per run, over its probed steps in order:

* D_T = cumulative Σ max(φ_t, 0), Q_T = cumulative Σ q_t, S_T = cumulative signed Σ φ_t;
* per-seed statistics: the growth exponents of D_T and Q_T (least-squares slope of log on
  log T over the last half of the steps; NaN where the sum is 0) and the end ratio D_T/Q_T.

Over the seeds of the group: t-intervals (``analyses.stats.seeds.seed_interval``). Growth of D_T
like Σ η_t (exponent ≈ ½ on η_t ∝ 1/√t) while Q_T grows like log T (exponent → 0) breaks the
proof's step even when S_T cancels. This is descriptive: it has no verdict of its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.descriptive.data import DriftTotals, stability_totals
from analyses.results import Interval, NotMeasured, Result, declare, register
from analyses.stats.seeds import seed_interval
from zerolock_theory.vocab import OBJECTIVES

__all__ = ["DriftCheck", "DriftRun", "drift_check", "drift_curves", "drift_of", "drift_run", "growth_exponent"]

CURVE_POINTS = 200


def growth_exponent(t: np.ndarray, cumulative: np.ndarray) -> float:
    """Slope of log(cumulative) on log t over the last half of the points where it is > 0."""
    half = t.size // 2
    x, y = t[half:], cumulative[half:]
    ok = (x > 0) & (y > 0) & np.isfinite(y)
    if ok.sum() < 2 or np.ptp(np.log(x[ok])) == 0:
        return math.nan
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


@dataclass(frozen=True)
class DriftRun:
    """D_T, Q_T and S_T of one run (thinned curves) and its per-seed statistics."""

    run: str
    steps: list[int]
    d: list[float]
    q: list[float]
    s: list[float]
    d_exponent: float
    q_exponent: float
    end_ratio: float | None


def drift_curves(totals: DriftTotals) -> DriftRun:
    """The drift curves of one run; ``NotMeasured`` without finite φ_t and q_t."""
    if totals.missing:
        raise NotMeasured(totals.missing)
    phi, q = totals.phi, totals.q
    ok = np.isfinite(phi) & np.isfinite(q)
    if ok.sum() < 2:
        raise NotMeasured(f"{totals.run}: fewer than 2 steps with finite phi_t and q_t ({totals.objective})")
    t = np.arange(1, int(ok.sum()) + 1, dtype=float)  # T = number of probed steps summed
    d, qc, s = np.cumsum(np.clip(phi[ok], 0, None)), np.cumsum(q[ok]), np.cumsum(phi[ok])
    pos = np.unique(np.linspace(0, t.size - 1, min(t.size, CURVE_POINTS)).astype(int))
    steps = totals.steps[ok]
    return DriftRun(
        run=totals.run,
        steps=steps[pos].astype(int).tolist(),
        d=d[pos].tolist(),
        q=qc[pos].tolist(),
        s=s[pos].tolist(),
        d_exponent=growth_exponent(t, d),
        q_exponent=growth_exponent(t, qc),
        end_ratio=float(d[-1] / qc[-1]) if qc[-1] > 0 else None,
    )


def drift_run(frame: pd.DataFrame, obj: str, run: str = "run") -> DriftRun:
    """``drift_curves`` of the run's ``analyses.descriptive.data.stability_totals``."""
    return drift_curves(stability_totals(frame, obj, run))


@register
@dataclass(frozen=True)
class DriftCheck(Result):
    """D_T, Σ q_t and signed Σ φ_t of one group, with seed intervals of their growth."""

    kind = "drift_check"
    objective: str
    group: str
    runs: list[DriftRun]
    d_exponent: Interval | None
    q_exponent: Interval | None
    end_ratio: Interval | None


DRIFT = {o: declare(f"drift_{o}", DriftCheck, builtin=True) for o in OBJECTIVES}
"""The drift check of each objective's runs."""


def drift_of(runs: Sequence[DriftTotals], obj: str, *, group: str = "", level: float = 0.95) -> DriftCheck:
    """Drift curves of every run that has the stability totals (``NotMeasured`` if none)."""
    built, reasons = [], []
    for totals in runs:
        try:
            built.append(drift_curves(totals))
        except NotMeasured as exc:
            reasons.append(str(exc))
    if not built:
        raise NotMeasured("; ".join(reasons) or "no run")
    ratios = [r.end_ratio for r in built if r.end_ratio is not None]
    return DriftCheck(
        objective=obj,
        group=group,
        runs=built,
        d_exponent=seed_interval([r.d_exponent for r in built], level),
        q_exponent=seed_interval([r.q_exponent for r in built], level),
        end_ratio=seed_interval(ratios, level),
    )


def drift_check(runs: Sequence[tuple[str, pd.DataFrame]], obj: str, *, group: str = "", level: float = 0.95) -> DriftCheck:
    """``drift_of`` over ``(name, metrics)`` pairs."""
    return drift_of([stability_totals(frame, obj, name) for name, frame in runs], obj, group=group, level=level)
