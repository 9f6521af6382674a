"""Seed-level statistics and the diverged-run rule, shared by every verdict.

docs/MATH.md, "Statistics for every verdict": the unit of replication is the seed. Each
verdict reduces every run (one seed) to ONE statistic, then puts an interval over the seeds.
Steps are autocorrelated, so resampling steps gives intervals that are too narrow; nothing
here resamples steps.

* ``seed_interval(values)``: Student-t interval of the mean over seeds,
  mean ± t_{n−1, (1+level)/2} · sd / √n. Exact coverage when the per-seed statistics are
  i.i.d. normal; with fewer than ``MIN_SEEDS`` finite values it returns ``None`` ("not
  testable"), never a guess.
* ``diverged(frame)``: a run is outside the theorem's hypotheses when a training loss is
  non-finite, or when its OWN objective is not stable (``objective_trend``): its value on the
  fixed held-out batches at the end lies more than ``DIVERGENCE_MARGIN`` (0) nats above its
  value at ω^0 (runs without that log: the training objective's last-tenth mean against its
  first-tenth mean). Not held-out task CE: an objective that is not
  the task loss (the reverse local losses with p_0 nearly uniform) may raise the task CE
  while it is stable; held-out CE is kept in ``Divergence`` as an outcome. Such runs are
  flagged and excluded from every verdict (and listed in the report). The pilot that chooses
  η_0 uses the same criterion (``zerolock_theory.app.workflows.verify``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from scipy import stats

from analyses.io import layout
from analyses.results import Interval
from zerolock_theory.records import (
    CHUNK,
    EVAL_CE,
    EVAL_CE_INITIAL,
    EVAL_OBJECTIVE,
    EVAL_OBJECTIVE_INITIAL,
    FINAL_CE,
    TRAIN_LOSS,
)

__all__ = [
    "DIVERGENCE_MARGIN",
    "MIN_SEEDS",
    "Divergence",
    "ObjectiveTrend",
    "diverged",
    "held_out_ce",
    "objective_trend",
    "own_objective",
    "regime_check",
    "seed_interval",
    "share_interval",
    "split_diverged",
]

MIN_SEEDS = 3
"""A primary group needs at least this many seeds (finite per-seed statistics) for a verdict."""

DIVERGENCE_MARGIN = 0.0
"""Nats: the own objective this far above its start (``objective_trend``) marks a run diverged."""

TREND_FRACTION = 0.1
"""The share of the steps at each end whose mean ``objective_trend`` compares (a tenth)."""

LOSS_COLUMNS = (TRAIN_LOSS, FINAL_CE)
EVAL_INITIAL = EVAL_CE_INITIAL
T = TypeVar("T")


def seed_interval(values: Iterable[float], level: float = 0.95, *, min_seeds: int = MIN_SEEDS) -> Interval | None:
    """t-interval of the mean of per-seed statistics; ``None`` with fewer than ``min_seeds`` finite values.

    Non-finite values are dropped first (a seed whose statistic is undefined carries no
    evidence). With all values equal the interval is the point itself.
    """
    x = np.asarray([float(v) for v in values], dtype=float)
    x = x[np.isfinite(x)]
    if x.size < max(2, min_seeds):
        return None
    mean = float(x.mean())
    half = float(stats.t.ppf(0.5 + level / 2.0, df=x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return Interval(mean, mean - half, mean + half, level)


def share_interval(values: Iterable[float], level: float = 0.95, *, min_seeds: int = MIN_SEEDS) -> Interval | None:
    """``seed_interval`` of per-seed shares (fractions), with the interval clipped to [0, 1]."""
    iv = seed_interval(values, level, min_seeds=min_seeds)
    if iv is None:
        return None
    return Interval(iv.estimate, max(0.0, iv.low), min(1.0, iv.high), iv.level)


@dataclass(frozen=True)
class Divergence:
    """Why a run is flagged as diverged (``reason``), with the figures that decided it.

    ``start_loss``/``end_loss``: the own objective at the start and the end (``objective_trend``; the criterion);
    ``start_ce``/``end_ce``: held-out CE at the start and the end (an outcome, when logged).
    """

    reason: str
    start_ce: float | None = None
    end_ce: float | None = None
    start_loss: float | None = None
    end_loss: float | None = None


@dataclass(frozen=True)
class ObjectiveTrend:
    """The own objective (``column``) at both ends of a run (``objective_trend``)."""

    column: str
    first: float
    last: float
    steps: int

    @property
    def stable(self) -> bool:
        """Finite, and the end not above the start."""
        return math.isfinite(self.first) and math.isfinite(self.last) and self.last <= self.first


def _chunk_loss_columns(frame: pd.DataFrame) -> list[str]:
    return [str(c) for c in CHUNK.columns(layout(frame), "loss") if c in frame.columns]


def own_objective(frame: pd.DataFrame) -> tuple[str, pd.Series] | None:
    """(name, per-step values) of the objective the run itself trains, or None.

    ``train/loss`` when logged; else Σ_k ``chunk/{k}/loss`` (ZeroLock: the sum of its local
    losses ℓ_k; backprop logs only chunk K's, which is L); else ``train/final_ce`` (tables
    without loss columns). A step missing a chunk's loss is NaN (not finite).
    """
    if TRAIN_LOSS in frame.columns:
        return TRAIN_LOSS, pd.to_numeric(frame[TRAIN_LOSS], errors="coerce")
    chunks = _chunk_loss_columns(frame)
    if chunks:
        values = frame[chunks].apply(pd.to_numeric, errors="coerce").sum(axis=1, skipna=False, min_count=1)
        return "sum of chunk/k/loss", values
    if FINAL_CE in frame.columns:
        return FINAL_CE, pd.to_numeric(frame[FINAL_CE], errors="coerce")
    return None


def objective_trend(frame: pd.DataFrame, fraction: float = TREND_FRACTION) -> ObjectiveTrend | None:
    """The own objective at both ends of a run; None without one or with fewer than 2 values.

    Held-out first: with ``eval/objective_initial`` (at ω^0) and a later ``eval/objective``, the
    two values on the run's FIXED held-out batches (a paired comparison). Otherwise (tables
    without them) the means of the training objective (``own_objective``) over the first and
    last ``fraction`` of its logged steps (≥ 1 each). The training batches differ from step to
    step: on the embedded model with seed 0's data order their task CE falls by 0.27 nats from
    the first 5 batches to the last 5 of 50 even when nothing is learned (η_0 = 0.003), so a
    short run's training trend measures the batches, not the run.
    """
    held = _held_out_objective(frame)
    if held is not None:
        return held
    found = own_objective(frame)
    if found is None:
        return None
    name, series = found
    values = series.dropna().to_numpy(dtype=float) if series.notna().any() else np.array([])
    if values.size < 2:
        return None
    n = max(1, int(round(fraction * values.size)))
    return ObjectiveTrend(name, float(np.mean(values[:n])), float(np.mean(values[-n:])), int(values.size))


def _held_out_objective(frame: pd.DataFrame) -> ObjectiveTrend | None:
    """``eval/objective_initial`` → the last ``eval/objective``, when both are logged."""
    if EVAL_OBJECTIVE_INITIAL not in frame.columns or EVAL_OBJECTIVE not in frame.columns:
        return None
    initial = pd.to_numeric(frame[EVAL_OBJECTIVE_INITIAL], errors="coerce").dropna()
    later = pd.to_numeric(frame[EVAL_OBJECTIVE], errors="coerce").dropna()
    if initial.empty or later.empty:
        return None
    return ObjectiveTrend("held-out own objective", float(initial.iloc[0]), float(later.iloc[-1]), 1 + len(later))


def held_out_ce(frame: pd.DataFrame) -> tuple[float | None, float | None]:
    """Held-out CE at the start (``eval/ce_initial``, else the first ``eval/ce``) and at the end."""
    if EVAL_CE not in frame.columns:
        return None, None
    ce = pd.to_numeric(frame[EVAL_CE], errors="coerce").dropna().to_numpy(dtype=float)
    if ce.size == 0:
        return None, None
    start = float(ce[0])
    if EVAL_INITIAL in frame.columns:
        initial = pd.to_numeric(frame[EVAL_INITIAL], errors="coerce").dropna()
        if len(initial):
            start = float(initial.iloc[0])
    return start, float(ce[-1])


def diverged(frame: pd.DataFrame, margin: float = DIVERGENCE_MARGIN) -> Divergence | None:
    """``Divergence`` when the run left the theorem's regime (module docstring), else ``None``."""
    for column in (*LOSS_COLUMNS, *_chunk_loss_columns(frame)):
        if column in frame.columns:
            loss = pd.to_numeric(frame[column], errors="coerce").dropna().to_numpy(dtype=float)
            if loss.size and not np.isfinite(loss).all():
                step = int(frame.loc[pd.to_numeric(frame[column], errors="coerce").notna(), "step"]
                           .to_numpy()[~np.isfinite(loss)][0]) if "step" in frame.columns else -1
                return Divergence(f"non-finite {column} at step {step}")
    start, end = held_out_ce(frame)
    trend = objective_trend(frame)
    if trend is None:
        return None
    if trend.last > trend.first + margin:
        return Divergence(f"own objective ({trend.column}) rose {trend.last - trend.first:.3g} nats (> {margin:g}): "
                          f"start {trend.first:.4g} -> end {trend.last:.4g}", start, end,
                          trend.first, trend.last)
    return None


def regime_check(frame: pd.DataFrame) -> dict[str, Any]:
    """The pilot's stability criterion on one run: ``ok``, ``why`` and its figures.

    Stable = every loss finite and the own objective at the end not above its start
    (``objective_trend``: on the fixed held-out batches; the rule of ``diverged`` with margin 0). Held-out
    task CE is returned as an outcome (``eval_ce_start``, ``eval_ce_end``), never a criterion.
    """
    start_ce, end_ce = held_out_ce(frame)
    out: dict[str, Any] = {"ok": False, "eval_ce_start": start_ce, "eval_ce_end": end_ce,
                           "objective_start": None, "objective_end": None}
    ce = "" if start_ce is None or end_ce is None else f"; held-out CE {start_ce:.4f} -> {end_ce:.4f}"
    why = diverged(frame, margin=math.inf)
    if why is not None:
        return {**out, "why": why.reason + ce}
    trend = objective_trend(frame)
    if trend is None:
        return {**out, "why": "no training objective logged" + ce}
    return {**out, "ok": trend.stable, "objective_start": trend.first, "objective_end": trend.last,
            "why": f"own objective ({trend.column}) {trend.first:.4f} -> {trend.last:.4f}{ce}"}


def split_diverged(
    items: Sequence[T],
    *,
    name: Callable[[T], str],
    frame: Callable[[T], pd.DataFrame],
    margin: float = DIVERGENCE_MARGIN,
) -> tuple[list[T], dict[str, Divergence]]:
    """``(kept, flagged)``: the items whose run did not diverge, and name → ``Divergence`` of the others.

    Every verdict uses ``kept`` only and lists ``flagged`` (e.g. ``split_diverged(table,
    name=lambda x: x[0].name, frame=lambda x: x[1])`` for the suite's ``(RunInfo, frame)`` pairs).
    """
    kept, flagged = [], {}
    for item in items:
        why = diverged(frame(item), margin)
        if why is None:
            kept.append(item)
        else:
            flagged[name(item)] = why
    return kept, flagged


def finite_or_none(x: float) -> float | None:
    """``x`` as a float, or None when it is not finite (the JSON of the CLI forms)."""
    return float(x) if math.isfinite(x) else None


def finite_mean(values: Sequence[float]) -> float:
    """Mean of the finite values (NaN when there are none)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else math.nan


def interval_dict(x: Interval | None, point: float, level: float) -> dict:
    """``{estimate, low, high, level}`` of a seed interval; without one, the point estimate alone."""
    if x is None:
        return {"estimate": finite_or_none(point), "low": None, "high": None, "level": level}
    return {"estimate": x.estimate, "low": x.low, "high": x.high, "level": x.level}
