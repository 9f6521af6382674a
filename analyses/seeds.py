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
  non-finite, or its held-out CE ends more than ``DIVERGENCE_MARGIN`` nats above its start.
  Such runs are flagged and excluded from every verdict (and listed in the report).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pandas as pd
from scipy import stats

from analyses.results import Interval

__all__ = [
    "DIVERGENCE_MARGIN",
    "MIN_SEEDS",
    "Divergence",
    "diverged",
    "seed_interval",
    "share_interval",
    "split_diverged",
]

MIN_SEEDS = 3
"""A primary group needs at least this many seeds (finite per-seed statistics) for a verdict."""

DIVERGENCE_MARGIN = 0.5
"""Nats: held-out CE ending this far above its start marks a run as diverged."""

LOSS_COLUMNS = ("train/loss", "train/final_ce")
EVAL_CE, EVAL_INITIAL = "eval/ce", "eval/ce_initial"
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
    """Why a run is flagged as diverged (``reason``), with the figures that decided it."""

    reason: str
    start_ce: float | None = None
    end_ce: float | None = None


def diverged(frame: pd.DataFrame, margin: float = DIVERGENCE_MARGIN) -> Divergence | None:
    """``Divergence`` when the run left the theorem's regime (module docstring), else ``None``."""
    for column in LOSS_COLUMNS:
        if column in frame.columns:
            loss = pd.to_numeric(frame[column], errors="coerce").dropna().to_numpy(dtype=float)
            if loss.size and not np.isfinite(loss).all():
                step = int(frame.loc[pd.to_numeric(frame[column], errors="coerce").notna(), "step"]
                           .to_numpy()[~np.isfinite(loss)][0]) if "step" in frame.columns else -1
                return Divergence(f"non-finite {column} at step {step}")
    if EVAL_CE not in frame.columns:
        return None
    ce = pd.to_numeric(frame[EVAL_CE], errors="coerce").dropna().to_numpy(dtype=float)
    if ce.size == 0:
        return None
    start = ce[0]
    if EVAL_INITIAL in frame.columns:
        initial = pd.to_numeric(frame[EVAL_INITIAL], errors="coerce").dropna()
        if len(initial):
            start = float(initial.iloc[0])
    end = float(ce[-1])
    if not math.isfinite(end):
        return Divergence("non-finite held-out CE", start, end)
    if end > start + margin:
        return Divergence(f"held-out CE rose {end - start:.3g} nats (> {margin:g}): {start:.4g} -> {end:.4g}", start, end)
    return None


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
