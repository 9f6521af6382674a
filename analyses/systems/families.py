"""Known-answer memory maps for the systems memory row, through the same code as the row.

Each construction is a curve of ZeroLock ÷ 1F1B per-stage peak memory against tokens per
micro-batch whose answer is known, written as the ``memory_map.json`` (and ``systems.json``) the
suite writes and read back by ``analyses.systems.memory.memory_claim``. Each curve is measured
from several smallest sizes up to the same largest one: the row must read the same whichever
size the measurement started from.

* ``crosses_once``: weights and optimizer state fixed, activations proportional to the tokens
  (the K = 4 embedded-model split, scaled): the total ratio (W_Z + a_Z·n) / (W_B + a_B·n) falls
  from above 1 (16 and 32 tokens) through 1 (between 32 and 64) and through 0.735 at
  n* = (W_Z − 0.735·W_B) / (0.735·a_B − a_Z) ≈ 231 tokens, between the measured 128 and 256.
  Truth: reaches 0.735 from a micro-batch size on, the crossing between 128 and 256, within 10%
  of n*; from a smallest size of 256 the crossing lies at or below the first measured size.
* ``short_through_one``: the ratio falls from above 1 to 0.85 and never reaches 0.735. Truth:
  short of 26.5% at every measured size, from every smallest size.
* ``short_below_one``: ZeroLock below 1F1B everywhere (1 to 0.85), never reaching 0.735. Truth:
  short of 26.5% at every measured size.
* ``short_above_one``: ZeroLock above 1F1B everywhere. Truth: short of 26.5% at every measured size.
* ``below_everywhere``: a constant 0.6. Truth: reaches 0.735 from a micro-batch size on, at or
  below the smallest measured size.
* ``exactly_at``: tabled ratios 0.95, 0.85, 0.735, 0.70, 0.65 at 32 … 512 tokens, 0.735 exactly
  at 128 (1F1B 1000 bytes, ZeroLock 735). Truth: reaches 0.735 from 128 tokens on, the crossing
  at 128 exactly (at or below 0.735 counts as the paper's claim).
* ``touches_and_rises``: 0.9, 0.8, 0.735, 0.8, 0.9. Truth: rises above 0.735 again, having reached
  it at 128 tokens.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from analyses.systems.memory import CLAIMED_MEMORY_RATIO

__all__ = ["CONSTRUCTIONS", "Construction", "SEQ_LEN", "write_map"]

SEQ_LEN = 16
"""Tokens per sequence of the constructed maps (every size is a whole number of sequences)."""
W_Z, W_B, A_Z, A_B = 6_246_640.0, 4_148_976.0, 52_601.0, 90_428.0  # bytes; activations per token


def _linear(w_z: float, w_b: float, a_z: float, a_b: float) -> Callable[[int], tuple[float, float, float, float]]:
    """(ZeroLock weights, ZeroLock activations, 1F1B weights, 1F1B activations) at n tokens."""
    return lambda n: (w_z, a_z * n, w_b, a_b * n)


def _tabled(ratios: dict[int, float]) -> Callable[[int], tuple[float, float, float, float]]:
    """1F1B 1000 bytes of activations at every size, ZeroLock ``1000·ratio`` (weights 0)."""
    return lambda n: (0.0, 1000.0 * ratios[n], 0.0, 1000.0)


@dataclass(frozen=True)
class Construction:
    """A curve with its true outcome, measured from each of ``smallest`` up to ``largest`` tokens."""

    name: str
    split: Callable[[int], tuple[float, float, float, float]]
    smallest: tuple[int, ...]
    largest: int
    truth: str  # the map's true outcome word (analyses.systems.memory.MAP_OUTCOMES)
    bracket: tuple[int, int] | None = None  # the measured sizes around the crossing, if located
    crossing: float | None = None  # the closed-form crossing, if any

    def sizes(self, smallest: int) -> list[int]:
        """Powers of two from ``smallest`` to ``largest``."""
        return [smallest * 2 ** i for i in range(int(math.log2(self.largest // smallest)) + 1)]

    def ratio(self, n: int) -> float:
        wz, az, wb, ab = self.split(n)
        return (wz + az) / (wb + ab)


def _closed_form() -> float:
    return (W_Z - CLAIMED_MEMORY_RATIO * W_B) / (CLAIMED_MEMORY_RATIO * A_B - A_Z)


FROM, SHORT, RISES = ("as the paper claims from a micro-batch size on", "short of the paper's 26.5% at every measured size",
                      "rises above 0.735 again at a larger size")
CONSTRUCTIONS: tuple[Construction, ...] = (
    Construction("crosses_once", _linear(W_Z, W_B, A_Z, A_B), (16, 32, 64, 128), 2048, FROM, (128, 256),
                 _closed_form()),
    Construction("crosses_once_from_above", _linear(W_Z, W_B, A_Z, A_B), (256,), 2048, FROM),
    Construction("short_through_one", _linear(1.5 * W_B, W_B, 0.85 * A_B, A_B), (16, 32, 64, 128, 256), 4096,
                 SHORT),
    Construction("short_below_one", _linear(W_B, W_B, 0.85 * A_B, A_B), (16, 32, 64, 128), 2048, SHORT),
    Construction("short_above_one", _linear(1.5 * W_B, W_B, 1.05 * A_B, A_B), (16, 32, 64, 128), 2048, SHORT),
    Construction("below_everywhere", _linear(0.6 * W_B, W_B, 0.6 * A_B, A_B), (16, 32, 64, 128), 2048, FROM),
    Construction("exactly_at", _tabled({32: 0.95, 64: 0.85, 128: 0.735, 256: 0.70, 512: 0.65}), (32,), 512, FROM,
                 (64, 128), 128.0),
    Construction("touches_and_rises", _tabled({32: 0.9, 64: 0.8, 128: 0.735, 256: 0.8, 512: 0.9}), (32,), 512,
                 RISES, (64, 128), 128.0),
)


def _stages(weights: float, activations: float) -> list[dict[str, float]]:
    """A peak stage with this split and a smaller second stage."""
    peak = {"weights": weights, "gradients": 0.0, "optimizer": 0.0, "activations": activations,
            "communication": 0.0, "total": weights + activations}
    return [peak, {**peak, "weights": 0.0, "activations": 0.5, "total": 0.5}]


def write_map(folder: Path, construction: Construction, smallest: int) -> Path:
    """``memory_map.json`` and ``systems.json`` of the curve measured from ``smallest``; the systems path."""
    folder.mkdir(parents=True, exist_ok=True)
    points = []
    for n in construction.sizes(smallest):
        wz, az, wb, ab = construction.split(n)
        points.append({"tokens": n, "sequences": n // SEQ_LEN, "zerolock": _stages(wz, az), "1f1b": _stages(wb, ab)})
    (folder / "memory_map.json").write_text(json.dumps({"K": 4, "micro_batches": 4, "seq_len": SEQ_LEN,
                                                        "points": points}), encoding="utf-8")
    wz, az, wb, ab = construction.split(smallest)
    entry = {"peak_saved_bytes": [1], "tokens_per_s": 1.0, "memory": [_stages(wz, az)]}
    base = {**entry, "memory": [_stages(wb, ab)]}
    systems = folder / "systems.json"
    systems.write_text(json.dumps({"zerolock": {"4": entry}, "1f1b": {"4": base}, "gpipe": {"4": base},
                                   "setup": {"micro_batches": 4, "batch_size": 4 * smallest // SEQ_LEN,
                                             "seq_len": SEQ_LEN}}), encoding="utf-8")
    return systems
