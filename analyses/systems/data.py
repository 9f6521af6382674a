"""The systems family's inputs, read once from the benchmark's JSON files.

The systems rows read no metrics: their quantities are the files the systems benchmark and the
schedule model write. Each reader parses one file into a small frozen dataclass (numpy arrays
where a quantity has one value per repeat), with the one-line ``RunDataError`` a malformed file
gives; the statistics of ``analyses.systems`` (``memory``, ``throughput``) take these, never a
path.

* ``read_systems``: ``systems.json``'s peak bytes and tokens per second per (method, K), in
  either layout (``analyses.systems.memory``'s docstring);
* ``systems_data``: ``systems.json`` whole: those rows, ZeroLock's and 1F1B's per-stage memory
  split per K and repeat (``SplitRepeats``), the setup (micro-batches, batch, sequence length),
  and the memory map beside it when there is one;
* ``read_map``: ``memory_map.json``: one ``MemoryMapPoint`` per measured size, in file order;
* ``prediction_data``: ``schedule_prediction.json``'s predicted cells of one cost variant, its
  provenance, and the validation errors of ``schedule_validation.json`` when given.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analyses.io import RunDataError

__all__ = [
    "METHODS", "PROVENANCE_KEYS", "SPLIT_PARTS", "MapData", "MemoryMapPoint", "PredictedCell", "PredictionData",
    "SplitRepeats", "SystemsData", "SystemsRow", "prediction_data", "read_map", "read_systems", "systems_data",
]

SPLIT_PARTS: tuple[str, ...] = ("weights", "gradients", "optimizer", "activations", "communication")
METHODS: tuple[str, ...] = ("zerolock", "gpipe", "1f1b")
PROVENANCE_KEYS: tuple[str, ...] = ("machine", "date", "command")
"""What a prediction file records about where its costs were measured (benchmarks/schedule_calibrate.py)."""


@dataclass(frozen=True)
class SystemsRow:
    """One (method, K) measurement: the peak over stages and the throughput."""

    method: str
    chunks: int
    peak_bytes: float
    tokens_per_s: float


def _json(path: Path) -> Any:
    if not path.is_file():
        raise RunDataError(f"{path}: no such file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunDataError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc


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
    return SystemsRow(method, k, _number(entry[peak_key], where), _number(entry["tokens_per_s"], where))


def _systems_path(path: str | Path) -> Path:
    path = Path(path)
    return path / "systems.json" if path.is_dir() else path


def _rows(data: Any, path: Path) -> list[SystemsRow]:
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
                    rows.append(_row(str(method).lower(), chunks, entry, f"{path}: {method}/{chunks}"))
    else:
        raise RunDataError(f"{path}: expected a JSON object or list")
    if not rows:
        raise RunDataError(f"{path}: no measurements for {', '.join(METHODS)}")
    return rows


def read_systems(path: str | Path) -> list[SystemsRow]:
    """Parse ``systems.json`` (either layout) into rows; ``RunDataError`` when missing or malformed."""
    path = _systems_path(path)
    return _rows(_json(path), path)


def _bytes(value: Any, where: str) -> float:
    """A byte count: a finite number >= 0."""
    number = _number(value, where)
    if not math.isfinite(number) or number < 0:
        raise RunDataError(f"{where}: expected a finite byte count >= 0, got {number!r}")
    return number


def _peak(stages: list[dict[str, Any]], key: str, where: str) -> tuple[float, dict[str, float]]:
    """The largest stage value of ``key`` and that stage's split."""
    if not stages or not all(isinstance(s, dict) for s in stages):
        raise RunDataError(f"{where}: expected a list of per-stage memory splits")
    values = [_bytes(s.get(key), f"{where}: {key}") for s in stages]
    top = max(range(len(values)), key=values.__getitem__)
    return values[top], {k: _bytes(stages[top].get(k), f"{where}: {k}") for k in (*SPLIT_PARTS, "total")}


@dataclass(frozen=True)
class SplitRepeats:
    """ZeroLock and 1F1B at one K: the peak stage's total and activations (bytes) per repeat, and each
    method's split at its peak-total stage in the first repeat."""

    chunks: int
    zerolock_total: np.ndarray
    baseline_total: np.ndarray  # > 0
    zerolock_activations: np.ndarray
    baseline_activations: np.ndarray  # > 0
    zerolock_split: dict[str, float]
    baseline_split: dict[str, float]


def _split_repeats(K: int, zl_runs: list, bp_runs: list, where: str) -> SplitRepeats:
    columns: list[tuple[float, float, float, float]] = []
    splits = []
    for r, (zl, bp) in enumerate(zip(zl_runs, bp_runs, strict=False)):
        (zt, zs), (bt, bs) = _peak(zl, "total", f"{where} repeat {r + 1}"), _peak(bp, "total", f"{where} repeat {r + 1}")
        za, _ = _peak(zl, "activations", where)
        ba, _ = _peak(bp, "activations", where)
        if bt <= 0 or ba <= 0:
            raise RunDataError(f"{where}: 1F1B peak is not positive")
        columns.append((zt, bt, za, ba))
        splits.append((zs, bs))
    zt, bt, za, ba = (np.array(c, dtype=float) for c in zip(*columns, strict=True))
    return SplitRepeats(K, zt, bt, za, ba, splits[0][0], splits[0][1])


@dataclass(frozen=True)
class MemoryMapPoint:
    """One measured micro-batch size: ZeroLock ÷ 1F1B at the peak stage, total and activations, and
    each method's split (bytes) at its peak stage."""

    tokens: int
    sequences: int
    total: float  # the largest over the size's repeats (a size reaches 0.735 only when every repeat does)
    activations: float  # the largest over the size's repeats
    zerolock_split: dict[str, float]  # of the repeat with the largest total
    baseline_split: dict[str, float]
    repeats: int = 1  # how many times the size was measured
    lowest: float | None = None  # the smallest total over the repeats (None: measured once)


@dataclass(frozen=True)
class MapData:
    """``memory_map.json``: its setting and one point per entry, in the file's order (repeats not merged)."""

    chunks: int
    micro_batches: int
    seq_len: int
    points: tuple[MemoryMapPoint, ...]


def _count(value: Any, where: str) -> int:
    """A positive whole number (tokens, sequences, K, micro-batches, sequence length)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value != int(value) or value < 1:
        raise RunDataError(f"{where}: expected a whole number >= 1, got {value!r}")
    return int(value)


def _map_point(raw: Any, where: str) -> MemoryMapPoint:
    """One measured size of ``memory_map.json``; ``RunDataError`` for a size below 1 token or a 1F1B peak
    (total or activations) that is not positive."""
    if not isinstance(raw, dict):
        raise RunDataError(f"{where}: a point is not an object")
    for key in ("tokens", "sequences", "zerolock", "1f1b"):
        if key not in raw:
            raise RunDataError(f"{where}: a point has no {key!r}")
    tokens, sequences = _count(raw["tokens"], f"{where}: tokens"), _count(raw["sequences"], f"{where}: sequences")
    where = f"{where}: {tokens} tokens"
    (zt, zs), (bt, bs) = _peak(raw["zerolock"], "total", f"{where}, zerolock"), _peak(raw["1f1b"], "total",
                                                                                        f"{where}, 1f1b")
    za, ba = _peak(raw["zerolock"], "activations", f"{where}, zerolock")[0], _peak(raw["1f1b"], "activations",
                                                                                  f"{where}, 1f1b")[0]
    if bt <= 0 or ba <= 0:
        raise RunDataError(f"{where}: the 1F1B peak is not positive (total {bt:g}, activations {ba:g} bytes)")
    return MemoryMapPoint(tokens, sequences, zt / bt, za / ba, zs, bs)


def read_map(path: str | Path) -> MapData:
    """``memory_map.json`` (or the one in a folder); ``RunDataError`` with one line if malformed (a key
    missing, a size below 1 token, a byte count that is not a finite number >= 0, a 1F1B peak that is not
    positive)."""
    path = Path(path)
    path = path / "memory_map.json" if path.is_dir() else path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunDataError(f"{path}: not a memory map ({exc})") from exc
    if not isinstance(data, dict):
        raise RunDataError(f"{path}: not a memory map (expected a JSON object)")
    for key in ("K", "micro_batches", "seq_len", "points"):
        if key not in data:
            raise RunDataError(f"{path}: not a memory map (no {key!r})")
    if not isinstance(data["points"], list):
        raise RunDataError(f"{path}: not a memory map ('points' is not a list)")
    chunks, micro, seq = (_count(data[k], f"{path}: {k}") for k in ("K", "micro_batches", "seq_len"))
    return MapData(chunks, micro, seq, tuple(_map_point(raw, str(path)) for raw in data["points"]))


@dataclass(frozen=True)
class SystemsData:
    """``systems.json`` read once: the measured rows, the memory splits, the setup and the map beside it."""

    path: Path
    measured: tuple[SystemsRow, ...]
    splits: tuple[SplitRepeats, ...]  # by K, ascending; the K where both methods recorded a split
    micro_batches: Any  # the setup's values as recorded (None when absent)
    batch_size: Any
    seq_len: Any
    map: MapData | None  # ``memory_map.json`` in the same folder, when present


def systems_data(path: str | Path) -> SystemsData:
    """``systems.json`` (or the one in a folder) and the ``memory_map.json`` beside it; ``RunDataError``
    when either is missing (the map may be absent) or malformed."""
    path = _systems_path(path)
    data = _json(path)
    measured = _rows(data, path)
    zl, bp = data.get("zerolock", {}), data.get("1f1b", {})
    zl, bp = (x if isinstance(x, dict) else {} for x in (zl, bp))
    splits = []
    for K in sorted({int(k) for k in zl} & {int(k) for k in bp}):
        z, b = zl[str(K)].get("memory"), bp[str(K)].get("memory")
        if isinstance(z, list) and isinstance(b, list) and z and b:
            splits.append(_split_repeats(K, z, b, f"{path}: K={K}"))
    setup = data.get("setup", {}) if isinstance(data.get("setup"), dict) else {}
    found = read_map(path.parent) if (path.parent / "memory_map.json").is_file() else None
    return SystemsData(path, tuple(measured), tuple(splits),
                       *(setup.get(k) for k in ("micro_batches", "batch_size", "seq_len")), found)


@dataclass(frozen=True)
class PredictedCell:
    """The modelled ratio at one (model, K, m), with its two factors (ratio = bubble × work)."""

    model: str
    chunks: int
    micro_batches: int
    ratio: float
    bubble: float
    work: float
    readout_share: float


@dataclass(frozen=True)
class PredictionData:
    """One cost variant of ``schedule_prediction.json``, its provenance, and the validation errors."""

    path: Path
    variant: str
    cells: tuple[PredictedCell, ...]  # non-empty, ratio > 0
    provenance: dict[str, str]  # of ``PROVENANCE_KEYS``, those recorded
    validation_errors: tuple[float, ...]  # predicted/measured − 1 of the CPU step times; empty without a file


def _cell(raw: Any, where: str) -> PredictedCell:
    try:
        cell = PredictedCell(str(raw["model"]), int(raw["chunks"]), int(raw["micro_batches"]),
                             *(float(raw[k]) for k in ("ratio", "bubble", "work", "readout_share")))
    except (KeyError, TypeError, ValueError) as exc:
        raise RunDataError(f"{where}: a prediction row needs model, chunks, micro_batches, ratio, bubble, "
                           f"work, readout_share ({exc})") from exc
    if not cell.ratio > 0:
        raise RunDataError(f"{where}: ratio must be > 0, got {cell.ratio}")
    return cell


def prediction_data(path: str | Path, validation: str | Path | None = None,
                    variant: str = "measured_rates") -> PredictionData:
    """The prediction file (or the one in a folder) and, when given, the validation file; ``RunDataError``
    when missing, malformed, or without rows for ``variant``."""
    path = Path(path)
    path = path / "schedule_prediction.json" if path.is_dir() else path
    data = _json(path)
    rows = data.get("variants", {}).get(variant) if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        raise RunDataError(f"{path}: no prediction rows for variant {variant!r}")
    cells = tuple(_cell(r, f"{path}: row {i + 1}") for i, r in enumerate(rows))
    errors: tuple[float, ...] = ()
    if validation is not None:
        vpath = Path(validation)
        vpath = vpath / "schedule_validation.json" if vpath.is_dir() else vpath
        errors = tuple(float(r["error"]) for r in _json(vpath).get("validation", []))
    recorded = data.get("provenance") if isinstance(data.get("provenance"), dict) else {}
    return PredictionData(path, variant, cells, {k: str(recorded[k]) for k in PROVENANCE_KEYS if recorded.get(k)},
                          errors)
