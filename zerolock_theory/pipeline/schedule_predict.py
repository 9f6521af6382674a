"""ZeroLock ÷ 1F1B throughput from the schedule model, split into a bubble and a work factor.

For one configuration (per-stage costs, K, m):

  ratio        = period(1F1B) / period(ZeroLock)               (> 1: ZeroLock is faster)
  bubble       = period(1F1B) / max_s busy_1F1B(s)             (≥ 1: what the bubble costs 1F1B)
  work         = max_s busy_1F1B(s) / period(ZeroLock)          (< 1: ZeroLock's extra readouts)
  ratio        = bubble × work                                  (exactly)
  readout_share = share of ZeroLock's busiest stage spent in readouts and the local loss

``period`` is the steady-state step time (``Timeline.period``), ``busy`` a stage's work per
step. ``predict_grid`` evaluates every (shape, K, m) with costs scaled from a calibration.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from zerolock_theory.pipeline.schedule_costs import ModelShape, scaled_costs
from zerolock_theory.pipeline.schedule_model import StageCosts, simulate

__all__ = ["PredictionRow", "predict", "predict_grid"]

STEPS = 3
"""Simulated steps per configuration (the period is taken over steps 2..STEPS)."""


@dataclass(frozen=True)
class PredictionRow:
    """The modelled comparison at one (model, K, m)."""

    model: str
    chunks: int
    micro_batches: int
    ratio: float
    bubble: float
    work: float
    readout_share: float
    period_1f1b_s: float
    period_zerolock_s: float


def predict(model: str, K: int, m: int, zerolock: list[StageCosts], baseline: list[StageCosts],
            devices: int | None = None) -> PredictionRow:
    """One ``PredictionRow`` (module docstring) from per-stage costs."""
    bp = simulate("1f1b", K, m, baseline, steps=STEPS, devices=devices)
    zl = simulate("zerolock", K, m, zerolock, steps=STEPS, devices=devices)
    top = max(range(K), key=lambda s: zl.busy[s])
    c = zerolock[top]
    readout = m * (2 * c.readout + c.readout_backward + c.loss)
    busiest = max(bp.busy)
    return PredictionRow(model, K, m, float(bp.period / zl.period), float(bp.period / busiest),
                         float(busiest / zl.period), float(readout / zl.busy[top]),
                         float(bp.period), float(zl.period))


def predict_grid(shapes: Iterable[ModelShape], Ks: Iterable[int], ms: Iterable[int], flop_rates: dict[str, float],
                 loss_s_per_element: dict[str, float], tokens: int = 512, seq_len: int = 512,
                 link_bytes_per_s: float | None = None) -> list[PredictionRow]:
    """Rows for every shape × K × m with K ≤ the shape's layers (one device per stage)."""
    rows = []
    for shape in shapes:
        for K in Ks:
            if K > shape.layers:
                continue
            costs = scaled_costs(shape, K, tokens, seq_len, flop_rates, loss_s_per_element, link_bytes_per_s)
            rows.extend(predict(shape.name, K, m, costs["zerolock"], costs["baseline"]) for m in ms)
    return rows
