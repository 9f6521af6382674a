"""Systems claims: peak activation memory and throughput, next to the paper's numbers.

The paper claims 26.5% lower peak memory and 4.9% higher throughput than 1F1B (PipeDream).
``systems.json`` (written by the systems benchmark) is read in either layout:

* nested: ``{method: {K: {"peak_saved_activation_bytes": [per stage] | number,
  "tokens_per_s": number}}}`` with method ∈ {zerolock, gpipe, 1f1b};
* records: ``[{"method", "chunks" | "K", <peak key>, "tokens_per_s"}, ...]``, optionally under
  a top-level ``"results"`` key.

The peak key is the first key starting with ``peak`` (e.g. ``peak_saved_activation_bytes``).
A per-stage list is reduced to its maximum (the stage that bounds device memory).

For each K and baseline b ∈ {1f1b, gpipe}: memory reduction = 1 − peak_zerolock / peak_b,
throughput gain = tps_zerolock / tps_b − 1.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyses.io import RunDataError
from analyses.results import Result, register

__all__ = [
    "CLAIMED_MEMORY_REDUCTION",
    "CLAIMED_THROUGHPUT_GAIN",
    "SystemsComparison",
    "SystemsRatio",
    "SystemsRow",
    "read_systems",
    "systems_comparison",
]

CLAIMED_MEMORY_REDUCTION = 0.265
CLAIMED_THROUGHPUT_GAIN = 0.049
METHODS: tuple[str, ...] = ("zerolock", "gpipe", "1f1b")
BASELINES: tuple[str, ...] = ("1f1b", "gpipe")


@dataclass(frozen=True)
class SystemsRow:
    """One (method, K) measurement: the peak over stages and the throughput."""

    method: str
    chunks: int
    peak_bytes: float
    tokens_per_s: float


@dataclass(frozen=True)
class SystemsRatio:
    """ZeroLock against one baseline at one K."""

    chunks: int
    baseline: str
    memory_reduction: float
    throughput_gain: float


@register
@dataclass(frozen=True)
class SystemsComparison(Result):
    """Measured memory and throughput ratios with the paper's claims alongside."""

    kind = "systems"
    source: str
    rows: list[SystemsRow]
    ratios: list[SystemsRatio]
    claimed_memory_reduction: float = CLAIMED_MEMORY_REDUCTION
    claimed_throughput_gain: float = CLAIMED_THROUGHPUT_GAIN


def _number(value: Any, where: str) -> float:
    if isinstance(value, list):
        if not value:
            raise RunDataError(f"{where}: empty per-stage list")
        return max(_number(v, where) for v in value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RunDataError(f"{where}: expected a number, got {value!r}")
    return float(value)


def _row(method: str, chunks: Any, entry: dict[str, Any], where: str) -> SystemsRow:
    peak_key = next((k for k in entry if str(k).startswith("peak")), None)
    if peak_key is None or "tokens_per_s" not in entry:
        raise RunDataError(f"{where}: needs a 'peak…' key and 'tokens_per_s'")
    try:
        k = int(chunks)
    except (TypeError, ValueError) as exc:
        raise RunDataError(f"{where}: chunk count {chunks!r} is not an integer") from exc
    return SystemsRow(
        method, k, _number(entry[peak_key], where), _number(entry["tokens_per_s"], where)
    )


def read_systems(path: str | Path) -> list[SystemsRow]:
    """Parse ``systems.json`` (either layout, module docstring) into rows."""
    path = Path(path)
    if path.is_dir():
        path = path / "systems.json"
    if not path.is_file():
        raise RunDataError(f"{path}: no such file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunDataError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        data = data["results"]
    rows = []
    if isinstance(data, list):
        for i, rec in enumerate(data):
            if not isinstance(rec, dict) or "method" not in rec:
                raise RunDataError(f"{path}: record {i + 1} needs a 'method'")
            chunks = rec.get("chunks", rec.get("K"))
            rows.append(_row(str(rec["method"]).lower(), chunks, rec, f"{path}: record {i + 1}"))
    elif isinstance(data, dict):
        for method, per_k in data.items():
            if str(method).lower() not in METHODS or not isinstance(per_k, dict):
                continue
            for chunks, entry in per_k.items():
                if isinstance(entry, dict):
                    rows.append(
                        _row(str(method).lower(), chunks, entry, f"{path}: {method}/{chunks}")
                    )
    else:
        raise RunDataError(f"{path}: expected a JSON object or list")
    if not rows:
        raise RunDataError(f"{path}: no measurements for {', '.join(METHODS)}")
    return rows


def systems_comparison(path: str | Path) -> SystemsComparison:
    """Ratios of ZeroLock to each baseline per K (module docstring).

    Guarantees: one ratio per K where both ZeroLock and the baseline were measured;
    ``memory_reduction = 1 − zl/base`` and ``throughput_gain = zl/base − 1`` exactly.
    """
    rows = read_systems(path)
    by = {(r.method, r.chunks): r for r in rows}
    ratios = []
    for k in sorted({r.chunks for r in rows}):
        zl = by.get(("zerolock", k))
        for base in BASELINES:
            b = by.get((base, k))
            if zl is None or b is None or b.peak_bytes <= 0 or b.tokens_per_s <= 0:
                continue
            ratios.append(
                SystemsRatio(
                    k,
                    base,
                    1.0 - zl.peak_bytes / b.peak_bytes,
                    zl.tokens_per_s / b.tokens_per_s - 1.0,
                )
            )
    return SystemsComparison(str(path), rows, ratios)
