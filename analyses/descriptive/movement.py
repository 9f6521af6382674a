"""Lemma 2 and the implemented loss: which target does a trained chunk move toward? (docs/MATH.md)

The descriptive on-model table (the Lemma 2 verdicts come from ``analyses.descriptive.toy`` and
``analyses.descriptive.tracking``; ``toy_check`` is re-exported from ``analyses.descriptive.toy``):

* ``minimizer_table`` — the on-model 2×2 contrast of *movement* from
  ``probe/minimizer/{k}/{kl_m_p, kl_p_g, tv_m, tv_g}``: rows = the trained direction
  (forward / reverse), columns = the target (m_k / g_k).

Why movement, not level. m_k = α·p_y + (1-α)·p_{k-1} puts mass ≈ α on the label, which an
adapted chunk cannot reach at most positions, while g_k (against the label-smoothed p_y)
stays close to p_{k-1}. So TV(p_k, m_k) is large and TV(p_k, g_k) small for *every* model,
trained or not; comparing levels says nothing about the objective. What the objective does
decide is which distance training *reduces*.

Definitions. For one run, the probed steps with finite values at every chunk and metric,
in step order, n of them (n ≥ 2, else the run is left out and counted in ``n_short``):

* head window = the first n_h = max(1, ⌈head·n⌉) steps (default head = 0.2: the state
  right after the first updates; the probe records ω^{t+1}, after step t); tail window =
  the last n_t = max(1, min(⌈tail·n⌉, n − n_h)) steps (the trained state; shortened so the
  two windows never overlap).
* per chunk k and distance D ∈ {KL(m_k‖p_k), KL(p_k‖g_k), TV(p_k,m_k), TV(p_k,g_k)}:
  head level H_k, tail level T_k (window means), change Δ_k = T_k − H_k, relative change
  Δ_k/H_k and **relative reduction** r_k = −Δ_k/H_k = (H_k − T_k)/H_k (> 0: p_k moved
  toward that target; NaN when H_k = 0, then ignored).
* run value = mean over chunks; cell value = mean over the runs of that direction. The
  KL columns pair KL(m_k‖p_k) with m_k and KL(p_k‖g_k) with g_k (each direction's own gap).

Per trained direction d, the **tracking** difference r_d(m) − r_d(g) (> 0: moves toward m_k
more than toward g_k). The **contrast** (difference-in-differences), when both directions
are present::

    m column   = r_F(m) − r_R(m)   forward-trained chunks approach m_k more than reverse-trained
    g column   = r_R(g) − r_F(g)   reverse-trained chunks approach g_k more than forward-trained
    DiD        = m column + g column = [r_F(m) − r_F(g)] − [r_R(m) − r_R(g)]

``toward`` = ``m_k`` when DiD's interval lies above 0 (the forward loss pulls toward m_k
relative to the reverse loss); ``g_k`` when DiD's interval lies below 0 *and* the g column's
interval lies below 0 (forward-trained chunks approach g_k more than reverse-trained ones);
else ``undecided``. Both are computed for KL and for TV; KL is the primary measure
(``PRIMARY``) because KL(m_k‖p_k) and KL(p_k‖g_k) are exactly the two objectives' local gaps.

Intervals (``level``, default 95%): a two-stage bootstrap. Within a run, the head and the
tail windows are each resampled by a moving-block bootstrap over steps (blocks of
round(n^{1/3}) steps; the same step draws for every chunk and metric, so m- and g-distances
stay paired); with ≥ 2 runs of a direction the runs (seeds) are also resampled with
replacement, each drawn run contributing its own step replicate. Directions are resampled
independently; contrasts are formed replicate by replicate. With one run this is the
moving-block bootstrap over steps alone.

Calibration of these intervals on synthetic frames without movement: docs/ANALYSES.md.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.descriptive.data import DISTANCES, Distances, distances
from analyses.descriptive.toy import ToyCheck, ToyRow, toy_check
from analyses.io import logged_chunks
from analyses.results import Interval, NotMeasured, Result, declare, register
from analyses.stats.bootstrap import block_indices, percentile_interval
from zerolock_theory.records import MINIMIZER

__all__ = ["PRIMARY", "ChunkDistances", "Contrast", "MinimizerCell", "MinimizerTable", "ToyCheck", "ToyRow",
           "Tracking", "minimizer_chunks", "minimizer_table", "movement_table", "toy_check"]

METRICS = {("m", "kl"): "kl_m_p", ("g", "kl"): "kl_p_g", ("m", "tv"): "tv_m", ("g", "tv"): "tv_g"}
ORDER = DISTANCES  # metric axis of the arrays below
MEASURES = ("kl", "tv")
PRIMARY = "kl"
# quantity axis of the per-run statistic: head level, tail level, Δ, relative reduction
HEAD, TAIL, CHANGE, REDUCTION = range(4)


def minimizer_chunks(frame: pd.DataFrame) -> list[int]:
    """Chunks k with ``probe/minimizer/{k}/tv_m`` in ``frame``, sorted."""
    return logged_chunks(frame, MINIMIZER, "tv_m")


@dataclass(frozen=True)
class MinimizerCell:
    """Forward- or reverse-trained chunks (``trained``) against m_k or g_k (``target``).

    ``*_reduction`` is the relative reduction (head − tail)/head of the distance (the
    evidence); ``*_change`` the absolute change tail − head; ``kl``/``tv`` and ``*_head`` the
    tail and head levels (for display only). KL is KL(m_k‖p_k) for m_k, KL(p_k‖g_k) for g_k.
    """

    trained: str
    target: str
    kl: Interval
    tv: Interval
    kl_head: Interval
    tv_head: Interval
    kl_change: Interval
    tv_change: Interval
    kl_reduction: Interval
    tv_reduction: Interval
    n_steps: int
    n_head_steps: int
    n_runs: int

    def reduction(self, measure: str = PRIMARY) -> Interval:
        """The relative reduction of the ``measure`` ("kl" or "tv") distance."""
        return getattr(self, f"{measure}_reduction")


@dataclass(frozen=True)
class Tracking:
    """Within one trained direction: r(m) − r(g), the relative reductions to m_k and g_k."""

    trained: str
    measure: str
    difference: Interval
    toward: str


@dataclass(frozen=True)
class Contrast:
    """The difference-in-differences of relative reductions, forward vs reverse training."""

    measure: str
    m_column: Interval
    g_column: Interval
    did: Interval
    toward: str


@dataclass(frozen=True)
class ChunkDistances:
    """Per chunk, pooled over the runs of one direction: levels and relative reductions.

    Keys are the probe metrics ``kl_m_p``, ``kl_p_g``, ``tv_m``, ``tv_g``.
    """

    trained: str
    chunk: int
    head: dict[str, float]
    tail: dict[str, float]
    reduction: dict[str, float]


@register
@dataclass(frozen=True)
class MinimizerTable(Result):
    """The on-model 2×2 movement table (trained direction × target) and its contrasts."""

    kind = "minimizer_table"
    head: float
    tail: float
    primary: str
    cells: list[MinimizerCell]
    tracking: list[Tracking]
    contrasts: list[Contrast]
    per_chunk: list[ChunkDistances]
    n_nonfinite: int
    n_short: int

    def cell(self, trained: str, target: str) -> MinimizerCell | None:
        return next((c for c in self.cells if c.trained == trained and c.target == target), None)

    def tracking_of(self, trained: str, measure: str | None = None) -> Tracking | None:
        measure = measure or self.primary
        return next(
            (t for t in self.tracking if t.trained == trained and t.measure == measure), None
        )

    def contrast_of(self, measure: str | None = None) -> Contrast | None:
        measure = measure or self.primary
        return next((c for c in self.contrasts if c.measure == measure), None)


MINIMIZERS = declare("minimizers", MinimizerTable, builtin=True)


@dataclass(frozen=True)
class _RunStats:
    """One run: point statistics [4 quantities, 4 metrics], bootstrap replicates, per chunk."""

    point: np.ndarray  # (4, 4)
    boot: np.ndarray  # (n_boot, 4, 4)
    chunks: list[int]
    per_chunk: np.ndarray  # (4, C, 4): head, tail, change, reduction per chunk
    n_head: int
    n_tail: int


def _windows(n: int, head: float, tail: float) -> tuple[int, int]:
    n_head = max(1, math.ceil(head * n))
    n_tail = max(1, min(math.ceil(tail * n), n - n_head))
    return n_head, n_tail


def _stats(head_mean: np.ndarray, tail_mean: np.ndarray) -> np.ndarray:
    """[..., C, 4] window means → [..., 4 quantities, C, 4] (chunk axis kept)."""
    change = tail_mean - head_mean
    with np.errstate(divide="ignore", invalid="ignore"):
        reduction = np.where(head_mean > 0, -change / head_mean, np.nan)
    return np.stack([head_mean, tail_mean, change, reduction], axis=-3)


def _chunk_average(values: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=-2)


def _window_replicates(window: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Moving-block bootstrap means of ``window`` [n, C, 4] → [n_boot, C, 4]."""
    n = window.shape[0]
    idx = block_indices(n, n_boot, rng)
    counts = np.zeros((n_boot, n))
    np.add.at(counts, (np.arange(n_boot)[:, None], idx), 1.0)
    flat = window.reshape(n, -1)
    return (counts @ flat / n).reshape(n_boot, *window.shape[1:])


def _run_stats(
    data: Distances, head: float, tail: float, n_boot: int, rng: np.random.Generator
) -> tuple[_RunStats | None, int]:
    """The run's statistics (None when fewer than 2 usable steps) and its dropped count."""
    chunks, values = list(data.chunks), data.values  # (rows, C, 4)
    probed = ~np.isnan(values).all(axis=(1, 2))
    finite = np.isfinite(values).all(axis=(1, 2))
    dropped = int((probed & ~finite).sum())
    series = values[finite]
    n = series.shape[0]
    if n < 2:
        return None, dropped
    n_head, n_tail = _windows(n, head, tail)
    h, t = series[:n_head], series[n - n_tail :]
    per_chunk = _stats(h.mean(axis=0), t.mean(axis=0))
    boot = _stats(_window_replicates(h, n_boot, rng), _window_replicates(t, n_boot, rng))
    return (
        _RunStats(
            _chunk_average(per_chunk), _chunk_average(boot), chunks, per_chunk, n_head, n_tail
        ),
        dropped,
    )


def _direction_replicates(
    stats: list[_RunStats], n_boot: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Point estimate (mean over runs) [4, 4] and replicates [n_boot, 4, 4]."""
    point = np.mean([s.point for s in stats], axis=0)
    boot = np.stack([s.boot for s in stats])  # (R, n_boot, 4, 4)
    if len(stats) == 1:
        return point, boot[0]
    draw = rng.integers(0, len(stats), size=(n_boot, len(stats)))
    return point, boot[draw, np.arange(n_boot)[:, None]].mean(axis=1)


def _interval(estimate: float, samples: np.ndarray, level: float) -> Interval:
    return percentile_interval(float(estimate), samples, level)


def _tracks(diff: Interval) -> str:
    if diff.low > 0:
        return "m_k"
    if diff.high < 0:
        return "g_k"
    return "undecided"


def _check_windows(head: float, tail: float) -> None:
    if not 0.0 < tail <= 1.0:
        raise ValueError(f"tail must lie in (0, 1], got {tail}")
    if not 0.0 < head < 1.0:
        raise ValueError(f"head must lie in (0, 1), got {head}")


def movement_table(
    runs: Sequence[tuple[str, Distances]],
    *,
    head: float = 0.2,
    tail: float = 0.5,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> MinimizerTable:
    """The 2×2 movement table from ``(direction, distances)`` pairs (module docstring;
    ``analyses.descriptive.data.distances``).

    Guarantees: one cell per (trained direction present, target ∈ {m, g}); one ``Tracking``
    per (direction, measure ∈ {kl, tv}); one ``Contrast`` per measure when both "forward"
    and "reverse" runs are present, none otherwise; probed steps with a non-finite value are
    dropped and counted in ``n_nonfinite``; runs with < 2 usable probed steps are left out
    and counted in ``n_short``. Raises ``NotMeasured`` when no run carries
    ``probe/minimizer/*`` keys or none has 2 usable probed steps; ``ValueError`` unless
    0 < head < 1 and 0 < tail ≤ 1.
    """
    _check_windows(head, tail)
    rng = np.random.default_rng(seed)
    usable = [(d, data) for d, data in runs if data.chunks]
    if not usable:
        raise NotMeasured("no run has probe/minimizer/{k}/* keys")
    by_direction: dict[str, list[_RunStats]] = {}
    dropped = short = 0
    for direction, data in usable:
        stats, n_bad = _run_stats(data, head, tail, n_boot, rng)
        dropped += n_bad
        if stats is None:
            short += 1
        else:
            by_direction.setdefault(direction, []).append(stats)
    if not by_direction:
        raise NotMeasured("no run has 2 probed steps with finite probe/minimizer/{k}/* values")
    cells, tracking, per_chunk = [], [], []
    reps: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for direction in sorted(by_direction):
        stats = by_direction[direction]
        point, boot = reps[direction] = _direction_replicates(stats, n_boot, rng)

        def iv(q: int, metric: str, point=point, boot=boot) -> Interval:
            j = ORDER.index(metric)
            return _interval(point[q, j], boot[:, q, j], level)

        for target in ("m", "g"):
            kl_m, tv_m = METRICS[(target, "kl")], METRICS[(target, "tv")]
            cells.append(
                MinimizerCell(
                    direction,
                    target,
                    kl=iv(TAIL, kl_m),
                    tv=iv(TAIL, tv_m),
                    kl_head=iv(HEAD, kl_m),
                    tv_head=iv(HEAD, tv_m),
                    kl_change=iv(CHANGE, kl_m),
                    tv_change=iv(CHANGE, tv_m),
                    kl_reduction=iv(REDUCTION, kl_m),
                    tv_reduction=iv(REDUCTION, tv_m),
                    n_steps=sum(s.n_tail for s in stats),
                    n_head_steps=sum(s.n_head for s in stats),
                    n_runs=len(stats),
                )
            )
        for measure in MEASURES:
            diff = _reduction_gap(point, boot, measure)
            interval = _interval(diff[0], diff[1], level)
            tracking.append(Tracking(direction, measure, interval, _tracks(interval)))
        per_chunk.extend(_per_chunk(direction, stats))
    contrasts = []
    if "forward" in reps and "reverse" in reps:
        contrasts = [_contrast(reps["forward"], reps["reverse"], m, level) for m in MEASURES]
    return MinimizerTable(
        float(head), float(tail), PRIMARY, cells, tracking, contrasts, per_chunk, dropped, short
    )


def minimizer_table(
    runs: Sequence[tuple[str, pd.DataFrame]],
    *,
    head: float = 0.2,
    tail: float = 0.5,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> MinimizerTable:
    """``movement_table`` over ``(direction, metrics)`` pairs."""
    _check_windows(head, tail)
    return movement_table([(direction, distances(frame)) for direction, frame in runs],
                          head=head, tail=tail, n_boot=n_boot, level=level, seed=seed)


def _reduction(point: np.ndarray, boot: np.ndarray, measure: str, target: str):
    j = ORDER.index(METRICS[(target, measure)])
    return point[REDUCTION, j], boot[:, REDUCTION, j]


def _reduction_gap(point: np.ndarray, boot: np.ndarray, measure: str):
    """r(m) − r(g): point value and replicates."""
    pm, bm = _reduction(point, boot, measure, "m")
    pg, bg = _reduction(point, boot, measure, "g")
    return pm - pg, bm - bg


def _contrast(forward, reverse, measure: str, level: float) -> Contrast:
    fm, fm_b = _reduction(*forward, measure, "m")
    fg, fg_b = _reduction(*forward, measure, "g")
    rm, rm_b = _reduction(*reverse, measure, "m")
    rg, rg_b = _reduction(*reverse, measure, "g")
    m_col = _interval(fm - rm, fm_b - rm_b, level)
    g_col = _interval(rg - fg, rg_b - fg_b, level)
    did = _interval(fm - rm + rg - fg, fm_b - rm_b + rg_b - fg_b, level)
    if did.low > 0:
        toward = "m_k"
    elif did.high < 0 and g_col.high < 0:
        toward = "g_k"
    else:
        toward = "undecided"
    return Contrast(measure, m_col, g_col, did, toward)


def _per_chunk(direction: str, stats: list[_RunStats]) -> list[ChunkDistances]:
    out = []
    for k in sorted(set().union(*(s.chunks for s in stats))):
        rows = np.stack([s.per_chunk[:, s.chunks.index(k)] for s in stats if k in s.chunks])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(rows, axis=0)  # (4 quantities, 4 metrics)
        head_, tail_, _, red = (dict(zip(ORDER, map(float, q), strict=True)) for q in mean)
        out.append(ChunkDistances(direction, k, head_, tail_, red))
    return out
