"""The memory map: ZeroLock / 1F1B per-stage peak memory against tokens per micro-batch.

The total ratio depends on the micro-batch size (weights and optimizer state are fixed, the
activations grow with the tokens a micro-batch carries), so one setting cannot answer "26.5% less
than 1F1B" in general. At the largest K of the suite, with its micro-batches m and sequence
length, the memory runs (``workflows.systems.run_one``, one repeat: the split is a deterministic
accounting) are repeated at ``FACTORS`` × the suite's sequences per micro-batch. Writes
``memory_map.json``: ``{"K", "micro_batches", "seq_len", "points": [{"sequences", "tokens",
"zerolock": [split per stage], "1f1b": [split per stage]}], "skipped": [...]}``, read by
``analyses.systems.memory.memory_map``. A size that fails (a corpus too small for the larger batch, a
device out of memory) is listed in ``skipped`` and the map goes on; with fewer than 3 sizes the
row falls back to the suite's one setting.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from zerolock_theory.app.workflows.systems import MemorySettings, run_one

__all__ = ["FACTORS", "measure_memory_map"]

FACTORS: tuple[int, ...] = (1, 2, 4, 8)
"""Multiples of the suite's sequences per micro-batch at which the map is measured."""
METHODS: tuple[str, ...] = ("zerolock", "1f1b")


def measure_memory_map(settings: MemorySettings, out: Path, log=print, factors: tuple[int, ...] = FACTORS) -> Path:
    """Every size of the map at the largest K; writes and returns ``out/memory_map.json``."""
    out.mkdir(parents=True, exist_ok=True)
    K = max(settings.stages)
    per_micro = settings.batch_size // settings.micro_batches
    points, skipped = [], []
    for factor in factors:
        sequences = per_micro * factor
        sized = replace(settings, batch_size=sequences * settings.micro_batches, repeats=1, steps=2, warmup=1)
        point = {"sequences": sequences, "tokens": sequences * settings.seq_len}
        try:
            for method in METHODS:
                point[method] = run_one(sized, method, K, out / "map" / f"x{factor}")["memory"][0]
        except Exception as exc:  # noqa: BLE001 -- a size the corpus or device cannot hold: recorded, not fatal
            skipped.append(f"{point['tokens']} tokens: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
            log(f"memory map: {point['tokens']} tokens per micro-batch skipped ({skipped[-1]})")
            continue
        points.append(point)
        log(f"memory map: {point['tokens']} tokens per micro-batch done")
    path = out / "memory_map.json"
    path.write_text(json.dumps({"K": K, "micro_batches": settings.micro_batches, "seq_len": settings.seq_len,
                                "points": points, "skipped": skipped}, indent=1))
    return path
