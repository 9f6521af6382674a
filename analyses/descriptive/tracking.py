"""Lemma 2 on the model, descriptive: which target does a trained chunk track? (docs/MATH.md, "Lemma 2").

Reads what the run wrote: the ``readouts`` store (full p̃ = (p_0..p_K) on the probe batch at
stored steps, step 0 = the untrained model) and ``probe_batch.json`` (the labels). For the
first stored step 0 and the last stored step T, per chunk k and position, with ONE ε for both
targets (``method.epsilon`` when > 0, else ``EPSILON``) and α = ``method.alpha``:

    m_k = α·p_y^ε + (1-α)·p_{k-1},   g_k ∝ (p_y^ε)^α · p_{k-1}^{1-α}   (p_{k-1} at the same step),

and one symmetric bounded metric, the total variation TV. Per run (one seed), means over
positions and chunks: d_0(target) (untrained) and d_T(target) (trained), the relative
reduction r(target) = (d_0 − d_T)/d_0 (> 0: moved toward the target, relative to the
untrained model) and the statistic r(m) − r(g) (> 0: tracks m_k more than g_k).

A top-k store (``readouts`` mode ``topk``, the default for large vocabularies) gives an
approximate TV (the tail mass spread evenly); ``exact`` says which, and ``analyses.text`` notes it.

Effect-size floor: the run's movement TV(p_k^T, p_k^0) (mean over positions and chunks) must
reach ``MOVE_FLOOR``; a run whose readouts barely moved is "not measurable" and left out.
Per training direction (its primary group: most seeds), a t-interval over seeds
(``analyses.stats.seeds.seed_interval``); ``toward`` is ``m_k`` / ``g_k`` when the interval lies
above / below 0, ``undecided`` when it covers 0, ``not testable`` with < 3 measurable seeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analyses.descriptive.data import Readouts, readouts
from analyses.results import Interval, NotMeasured, Result, declare, register
from analyses.stats.seeds import seed_interval
from analyses.verdict import MOVE_FLOOR, GroupFigures

__all__ = ["DirectionTracking", "RunTracking", "TrackingSet", "direction_tracking", "run_tracking",
           "tracking_of"]

EPSILON = 0.1


@dataclass(frozen=True)
class RunTracking:
    """One run: distances to m_k and g_k untrained and trained, in TV, and its movement."""

    run: str
    step: int
    epsilon: float
    movement: float
    d0_m: float
    d0_g: float
    dT_m: float
    dT_g: float
    r_m: float
    r_g: float
    difference: float
    measurable: bool
    exact: bool  # False: a top-k store, the tail spread evenly over the rest (TV approximate)


def _tv_to_targets(probs: np.ndarray, p_y: np.ndarray, alpha: float) -> tuple[float, float]:
    """Mean over chunks and positions of TV(p_k, m_k) and TV(p_k, g_k) from [K+1, N, V]."""
    tv_m, tv_g = [], []
    for k in range(1, probs.shape[0]):
        prev, p_k = probs[k - 1], probs[k]
        m = alpha * p_y + (1 - alpha) * prev
        log_g = alpha * np.log(p_y) + (1 - alpha) * np.log(np.clip(prev, 1e-300, None))
        g = np.exp(log_g - log_g.max(-1, keepdims=True))
        g /= g.sum(-1, keepdims=True)
        tv_m.append(0.5 * np.abs(p_k - m).sum(-1).mean())
        tv_g.append(0.5 * np.abs(p_k - g).sum(-1).mean())
    return float(np.mean(tv_m)), float(np.mean(tv_g))


def tracking_of(data: Readouts, alpha: float, epsilon: float) -> RunTracking:
    """The per-run statistics (module docstring) from ``analyses.descriptive.data.readouts``;
    ``NotMeasured`` without a store holding step 0 and a later step."""
    if data.missing:
        raise NotMeasured(data.missing)
    eps = epsilon if epsilon > 0 else EPSILON
    first, last, labels = data.first, data.last, data.labels
    vocab = first.shape[-1]
    p_y = np.full((labels.size, vocab), eps / vocab)
    p_y[np.arange(labels.size), labels] += 1.0 - eps
    d0_m, d0_g = _tv_to_targets(first, p_y, alpha)
    dT_m, dT_g = _tv_to_targets(last, p_y, alpha)
    movement = float(np.mean([0.5 * np.abs(last[k] - first[k]).sum(-1).mean() for k in range(1, first.shape[0])]))
    r_m, r_g = (d0_m - dT_m) / d0_m, (d0_g - dT_g) / d0_g
    return RunTracking(data.run, data.step, eps, movement, d0_m, d0_g, dT_m, dT_g, r_m, r_g, r_m - r_g,
                       movement >= MOVE_FLOOR, data.exact)


def run_tracking(run_dir: str | Path, alpha: float, epsilon: float, run: str = "run") -> RunTracking:
    """``tracking_of`` the run's ``analyses.descriptive.data.readouts``."""
    return tracking_of(readouts(run_dir, run), alpha, epsilon)


@dataclass(frozen=True)
class DirectionTracking:
    """r(m) − r(g) over the seeds of one training direction's primary group."""

    trained: str
    group: str
    runs: list[RunTracking]
    difference: Interval | None
    toward: str

    def figures(self) -> GroupFigures:
        """The group's figures (``analyses.verdict.GroupFigures``), stated by ``analyses.text``."""
        measurable = [r for r in self.runs if r.measurable]
        return GroupFigures(self.group, self.trained, "tracking", self.toward, len(self.runs), "r(m) - r(g)",
                            self.difference, measurable=len(measurable), exact=all(r.exact for r in measurable))


def direction_tracking(runs: Sequence[RunTracking], trained: str, group: str = "", level: float = 0.95) -> DirectionTracking:
    """Interval over measurable seeds and where it points (module docstring)."""
    measurable = [r for r in runs if r.measurable]
    diff = seed_interval([r.difference for r in measurable], level)
    if not measurable:
        toward = "not measurable"
    elif diff is None:
        toward = "not testable"
    else:
        toward = "m_k" if diff.low > 0 else "g_k" if diff.high < 0 else "undecided"
    return DirectionTracking(trained, group, list(runs), diff, toward)


@register
@dataclass(frozen=True)
class TrackingSet(Result):
    """Lemma 2 on the model: one ``DirectionTracking`` per training direction (forward first)."""

    kind = "tracking"
    directions: list[DirectionTracking]
    excluded: list[str]

    def of(self, trained: str) -> DirectionTracking | None:
        """The entry of one training direction."""
        return next((d for d in self.directions if d.trained == trained), None)


TRACKING = declare("tracking", TrackingSet, builtin=True)


