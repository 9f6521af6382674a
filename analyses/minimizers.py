"""Lemma 2 and the implemented loss: which target does a trained chunk track? (MATH.md)

Two results:

* ``toy_check`` — the review's two-token check, p_y = (1,0), p_{k-1} = (0.5,0.5),
  p = (0.5,0.5), at ε = 0 and ε = 0.1: KL(p ‖ p_y), CE(p_y, p), ℓ^R_k(p), ℓ^F_k(p), the
  minimizers g_k (Lemma 2, reverse) and m_k (forward) and TV(m_k, g_k). Exact values at
  ε = 0: KL(p ‖ p_y) = +inf, CE(p_y, p) = log 2, g_k = e_y, m_k = α·e_y + (1-α)·p_{k-1}.
* ``minimizer_table`` — the on-model 2×2 table from ``probe/minimizer/{k}/{kl_p_g, kl_m_p,
  tv_g, tv_m}``: for runs trained forward or reverse (rows), the distance of p_k to m_k and to
  g_k (columns), as KL (KL(m_k ‖ p_k), KL(p_k ‖ g_k)) and TV. Per step the value is the mean
  over chunks; each run contributes its last ``tail`` fraction of probed steps (the trained
  state); the estimate is the mean over runs and the 95% interval a moving-block bootstrap
  over steps within runs (pooled across seeds).

Tracking rule, per trained direction, on d_t = TV(p_k, m_k) − TV(p_k, g_k): the chunk
*tracks m_k* when d's interval lies below 0, *tracks g_k* when above 0, else ``undecided``.
Lemma 2 on the implemented loss is refuted when forward-trained chunks track m_k.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from analyses.bootstrap import block_indices, percentile_interval
from analyses.io import numeric_column
from analyses.results import Interval, NotMeasured, Result, register
from zerolock_theory.divergences import cross_entropy, kl, total_variation
from zerolock_theory.losses import local_loss
from zerolock_theory.targets import arithmetic_target, geometric_target, label_smooth

__all__ = [
    "ChunkDistances",
    "MinimizerCell",
    "MinimizerTable",
    "ToyCheck",
    "ToyRow",
    "Tracking",
    "minimizer_chunks",
    "minimizer_table",
    "toy_check",
]

PREFIX = "probe/minimizer"
METRICS = {("m", "kl"): "kl_m_p", ("g", "kl"): "kl_p_g", ("m", "tv"): "tv_m", ("g", "tv"): "tv_g"}


@dataclass(frozen=True)
class ToyRow:
    """The two-token check at one label smoothing ε."""

    epsilon: float
    p_y: list[float]
    m: list[float]
    g: list[float]
    kl_p_py: float
    ce_py_p: float
    reverse_loss: float
    forward_loss: float
    tv_m_g: float


@register
@dataclass(frozen=True)
class ToyCheck(Result):
    """The review's two-token check computed with ``zerolock_theory``."""

    kind = "toy_check"
    alpha: float
    p_prev: list[float]
    p: list[float]
    rows: list[ToyRow]
    minimizers_differ: bool


def toy_check(alpha: float = 0.5, epsilons: Sequence[float] = (0.0, 0.1)) -> ToyCheck:
    """Two tokens, p_y = e_1, p_{k-1} = p = (½, ½) (module docstring).

    Guarantees: at ε = 0, ``kl_p_py == inf``, ``ce_py_p == log 2``, ``g == [1, 0]``; every row
    has ``m = α·p_y^ε + (1-α)·p_{k-1}``; ``minimizers_differ`` is true when TV(m_k, g_k) > 1e-9
    in some row.
    """
    dt = torch.float64
    e_y = torch.tensor([1.0, 0.0], dtype=dt)
    p_prev = torch.tensor([0.5, 0.5], dtype=dt)
    p = torch.tensor([0.5, 0.5], dtype=dt)
    rows = []
    for eps in epsilons:
        p_y = label_smooth(e_y, eps)
        m = arithmetic_target(p_y, p_prev, alpha)
        log_g, _ = geometric_target(p_y, p_prev, alpha)
        g = log_g.exp()
        rows.append(
            ToyRow(
                epsilon=float(eps),
                p_y=p_y.tolist(),
                m=m.tolist(),
                g=g.tolist(),
                kl_p_py=float(kl(p, p_y)),
                ce_py_p=float(cross_entropy(p_y, p)),
                reverse_loss=float(local_loss(p, p_y, p_prev, alpha, "reverse")),
                forward_loss=float(local_loss(p, p_y, p_prev, alpha, "forward")),
                tv_m_g=float(total_variation(m, g)),
            )
        )
    differ = any(r.tv_m_g > 1e-9 for r in rows)
    return ToyCheck(float(alpha), p_prev.tolist(), p.tolist(), rows, differ)


def minimizer_chunks(frame: pd.DataFrame) -> list[int]:
    """Chunks k with ``probe/minimizer/{k}/tv_m`` in ``frame``, sorted."""
    pattern = re.compile(rf"^{PREFIX}/(\d+)/tv_m$")
    return sorted(int(m.group(1)) for c in frame.columns if (m := pattern.match(str(c))))


@dataclass(frozen=True)
class MinimizerCell:
    """Distance of forward- or reverse-trained chunks to m_k or g_k."""

    trained: str
    target: str
    kl: Interval
    tv: Interval
    n_steps: int
    n_runs: int


@dataclass(frozen=True)
class Tracking:
    """d = TV(p_k, m_k) − TV(p_k, g_k) for one trained direction, and which target wins."""

    trained: str
    tv_difference: Interval
    tracks: str


@dataclass(frozen=True)
class ChunkDistances:
    """Per-chunk means over the tail steps, pooled over runs of one direction."""

    trained: str
    chunk: int
    tv_m: float
    tv_g: float
    kl_m_p: float
    kl_p_g: float


@register
@dataclass(frozen=True)
class MinimizerTable(Result):
    """The on-model 2×2 table (trained direction × target) with the tracking test."""

    kind = "minimizer_table"
    tail: float
    cells: list[MinimizerCell]
    tracking: list[Tracking]
    per_chunk: list[ChunkDistances]
    n_nonfinite: int

    def cell(self, trained: str, target: str) -> MinimizerCell | None:
        return next((c for c in self.cells if c.trained == trained and c.target == target), None)

    def tracking_of(self, trained: str) -> Tracking | None:
        return next((t for t in self.tracking if t.trained == trained), None)


def _tail_frame(frame: pd.DataFrame, tail: float) -> pd.DataFrame:
    chunks = minimizer_chunks(frame)
    cols = [f"{PREFIX}/{k}/{m}" for k in chunks for m in METRICS.values()]
    probed = frame[[c for c in cols if c in frame.columns]].notna().any(axis=1)
    rows = frame[probed]
    keep = max(1, math.ceil(tail * len(rows))) if len(rows) else 0
    return rows.iloc[len(rows) - keep :]


def _chunk_mean(frame: pd.DataFrame, metric: str) -> tuple[np.ndarray, int]:
    """Per-step mean over chunks of one metric (finite steps only) and the dropped count."""
    chunks = minimizer_chunks(frame)
    values = np.stack(
        [numeric_column(frame, f"{PREFIX}/{k}/{metric}").to_numpy() for k in chunks], axis=1
    )
    finite = np.isfinite(values).all(axis=1)
    dropped = int((~finite & ~np.isnan(values).all(axis=1)).sum())
    return values[finite].mean(axis=1), dropped


def _pooled(
    series: list[np.ndarray], n_boot: int, rng: np.random.Generator, level: float
) -> Interval:
    series = [s for s in series if s.size]
    if not series:
        nan = float("nan")
        return Interval(nan, nan, nan, level)
    estimate = float(np.mean([s.mean() for s in series]))
    boot = np.mean([s[block_indices(s.size, n_boot, rng)].mean(axis=1) for s in series], axis=0)
    return percentile_interval(estimate, boot, level)


def _tracks(diff: Interval) -> str:
    if diff.high < 0:
        return "m_k"
    if diff.low > 0:
        return "g_k"
    return "undecided"


def minimizer_table(
    runs: Sequence[tuple[str, pd.DataFrame]],
    *,
    tail: float = 0.5,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> MinimizerTable:
    """The 2×2 table from ``(direction, metrics)`` pairs (module docstring).

    Guarantees: one cell per (trained direction present, target ∈ {m, g}); ``tracks`` follows
    the tracking rule; non-finite values are dropped and counted in ``n_nonfinite``. Raises
    ``NotMeasured`` when no run carries ``probe/minimizer/*`` keys.
    """
    if not 0.0 < tail <= 1.0:
        raise ValueError(f"tail must lie in (0, 1], got {tail}")
    rng = np.random.default_rng(seed)
    usable = [(d, _tail_frame(f, tail)) for d, f in runs if minimizer_chunks(f)]
    if not usable:
        raise NotMeasured(f"no run has {PREFIX}/{{k}}/* keys")
    cells, tracking, per_chunk, dropped = [], [], [], 0
    for direction in sorted({d for d, _ in usable}):
        frames = [f for d, f in usable if d == direction]
        means: dict[str, list[np.ndarray]] = {}
        for metric in METRICS.values():
            means[metric] = []
            for frame in frames:
                values, n_bad = _chunk_mean(frame, metric)
                means[metric].append(values)
                dropped += n_bad
        for target in ("m", "g"):
            kl_i = _pooled(means[METRICS[(target, "kl")]], n_boot, rng, level)
            tv_i = _pooled(means[METRICS[(target, "tv")]], n_boot, rng, level)
            n_steps = sum(s.size for s in means[METRICS[(target, "tv")]])
            cells.append(MinimizerCell(direction, target, kl_i, tv_i, n_steps, len(frames)))
        diffs = [_paired_diff(f) for f in frames]
        diff = _pooled(diffs, n_boot, rng, level)
        tracking.append(Tracking(direction, diff, _tracks(diff)))
        per_chunk.extend(_per_chunk(direction, frames))
    return MinimizerTable(float(tail), cells, tracking, per_chunk, dropped)


def _paired_diff(frame: pd.DataFrame) -> np.ndarray:
    chunks = minimizer_chunks(frame)
    tv_m = np.stack([numeric_column(frame, f"{PREFIX}/{k}/tv_m").to_numpy() for k in chunks], 1)
    tv_g = np.stack([numeric_column(frame, f"{PREFIX}/{k}/tv_g").to_numpy() for k in chunks], 1)
    ok = np.isfinite(tv_m).all(axis=1) & np.isfinite(tv_g).all(axis=1)
    return (tv_m[ok] - tv_g[ok]).mean(axis=1)


def _per_chunk(direction: str, frames: list[pd.DataFrame]) -> list[ChunkDistances]:
    out = []
    for k in sorted(set.intersection(*(set(minimizer_chunks(f)) for f in frames))):
        vals = {}
        for metric in ("tv_m", "tv_g", "kl_m_p", "kl_p_g"):
            col = np.concatenate(
                [numeric_column(f, f"{PREFIX}/{k}/{metric}").to_numpy() for f in frames]
            )
            col = col[np.isfinite(col)]
            vals[metric] = float(col.mean()) if col.size else float("nan")
        out.append(ChunkDistances(direction, k, **vals))
    return out
