"""Reading run directories and tables (docs/SCHEMA.md).

Analyses read only what a run wrote: ``config.json``, ``manifest.json`` and ``metrics.jsonl``.
Every malformed input raises ``RunDataError`` with a message that names the file, and the
line or column at fault. JSON lines are read by the package's one reader
(``zerolock_theory.jsonio.read_jsonl``): the one tolerated defect is a torn last line of
``metrics.jsonl`` (invalid JSON without a trailing newline: a writer stopped mid-line); it is
dropped with a ``RunDataWarning``.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from zerolock_theory import jsonio, records

__all__ = [
    "Run",
    "RunDataError",
    "RunDataWarning",
    "config_get",
    "layout",
    "load_run",
    "logged_chunks",
    "numeric_column",
    "read_jsonl",
    "read_table",
]

STEP = "step"


class RunDataError(ValueError):
    """A run directory or table is missing, malformed or lacks what an analysis needs."""


class RunDataWarning(UserWarning):
    """A tolerated defect in a run's files (a torn last line, a duplicated step)."""


def config_get(config: Mapping[str, Any], dotted: str, default: Any = None) -> Any:
    """``config["a"]["b"]`` for ``"a.b"``; ``default`` when any level is missing."""
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


@dataclass(frozen=True)
class Run:
    """One loaded run directory: its resolved config, manifest and per-step metrics."""

    path: Path
    config: dict[str, Any]
    manifest: dict[str, Any]
    metrics: pd.DataFrame
    warnings: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return self.path.name

    def get(self, dotted: str, default: Any = None) -> Any:
        """A config value by dotted path (``"optim.lr"``)."""
        return config_get(self.config, dotted, default)


def _read_json_object(path: Path, what: str, *, required: bool) -> dict[str, Any]:
    if not path.is_file():
        if required:
            raise RunDataError(f"{path.parent}: missing {what} ({path.name})")
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunDataError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise RunDataError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def read_jsonl(path: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """``zerolock_theory.jsonio.read_jsonl`` with ``RunDataError`` / ``RunDataWarning``.

    Blank lines are skipped; invalid JSON raises naming the line, except a torn last line
    (invalid and without a trailing newline), dropped with a ``RunDataWarning``.
    """
    try:
        return jsonio.read_jsonl(path, warning=RunDataWarning, stacklevel=3)
    except jsonio.JsonlError as exc:
        raise RunDataError(str(exc)) from exc


def _metrics_frame(path: Path) -> tuple[pd.DataFrame, list[str]]:
    records, notes = read_jsonl(path)
    if not records:
        raise RunDataError(f"{path}: too few rows (no records)")
    for i, record in enumerate(records):
        step = record.get(STEP)
        if isinstance(step, bool) or not isinstance(step, int):
            raise RunDataError(f"{path}: record {i + 1} has no integer '{STEP}' (got {step!r})")
    frame = pd.DataFrame.from_records(records)
    if frame[STEP].duplicated().any():
        dup = int(frame[STEP].duplicated().sum())
        note = f"{path}: {dup} duplicated step(s); the last record of each step is kept"
        warnings.warn(note, RunDataWarning, stacklevel=3)
        notes.append(note)
        frame = frame.drop_duplicates(STEP, keep="last")
    frame = frame.sort_values(STEP, kind="stable").reset_index(drop=True)
    return frame, notes


def load_run(path: str | Path) -> Run:
    """Load a run directory: ``config.json`` and ``metrics.jsonl`` required, manifest optional."""
    root = Path(path)
    if not root.exists():
        raise RunDataError(f"{root}: no such run directory")
    if not root.is_dir():
        raise RunDataError(f"{root}: not a directory")
    metrics_path = root / "metrics.jsonl"
    if not metrics_path.is_file():
        raise RunDataError(f"{root}: missing metrics.jsonl (not a run directory?)")
    config = _read_json_object(root / "config.json", "config", required=True)
    manifest = _read_json_object(root / "manifest.json", "manifest", required=False)
    metrics, notes = _metrics_frame(metrics_path)
    records.with_layout(metrics, _layout(root, config))
    return Run(root, config, manifest, metrics, tuple(notes))


def _layout(root: Path, config: dict[str, Any]) -> records.Layout | str:
    """The run's ``records.Layout`` from its typed config, or why there is none."""
    from zerolock_theory.config import TrainConfig

    try:
        return TrainConfig.from_dict(config).layout()
    except (TypeError, ValueError) as exc:
        return f"{root}: config.json gives no layout of the metrics (K, factors): {exc}"


def layout(frame: pd.DataFrame) -> records.Layout:
    """The layout ``load_run`` attached to a run's metrics; ``RunDataError`` saying why when there is none."""
    try:
        return records.layout_of(frame)
    except ValueError as exc:
        raise RunDataError(str(exc)) from None


def logged_chunks(frame: pd.DataFrame, quantity: records.Quantity, field: str, **fixed: Any) -> list[int]:
    """Chunks 1…K (K from the run's config) when the metrics hold ``quantity``'s ``field`` for
    every chunk; none when they hold it for none or only some (a probe that was off)."""
    found = layout(frame)
    return list(found.coordinates("chunk")) if quantity.present(frame, found, field, **fixed) else []


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a table by extension: ``.csv``, ``.jsonl``/``.ndjson``, ``.json``, ``.parquet``."""
    path = Path(path)
    if not path.is_file():
        raise RunDataError(f"{path}: no such file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            frame = pd.read_csv(path)
        elif suffix in (".jsonl", ".ndjson"):
            records, _ = read_jsonl(path)
            frame = pd.DataFrame.from_records(records)
        elif suffix == ".json":
            frame = pd.DataFrame(json.loads(path.read_text(encoding="utf-8")))
        elif suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        else:
            raise RunDataError(
                f"{path}: unsupported table extension {suffix!r} "
                "(use .csv, .jsonl, .ndjson, .json or .parquet)"
            )
    except RunDataError:
        raise
    except Exception as exc:  # parser errors differ by format; report them uniformly
        raise RunDataError(f"{path}: cannot read table ({type(exc).__name__}: {exc})") from exc
    if frame.empty:
        raise RunDataError(f"{path}: too few rows (empty table)")
    return frame


def numeric_column(frame: pd.DataFrame, column: str, *, where: str = "table") -> pd.Series:
    """``frame[column]`` as float64 (null → NaN); ``RunDataError`` if missing or non-numeric.

    Booleans and strings are non-numeric; ``±inf`` is kept (callers count and reject it).
    """
    if column not in frame.columns:
        near = [c for c in frame.columns if column.split("/")[-1] in str(c)][:5]
        hint = f"; similar: {', '.join(map(str, near))}" if near else ""
        raise RunDataError(f"{where}: missing column {column!r}{hint}")
    series = frame[column]
    if pd.api.types.is_bool_dtype(series):
        raise RunDataError(f"{where}: column {column!r} is boolean, not numeric")
    if pd.api.types.is_numeric_dtype(series):
        return series.astype("float64")
    values = []
    for row, value in zip(series.index, series.tolist(), strict=True):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            values.append(np.nan)
        elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
            value, (bool, np.bool_)
        ):
            values.append(float(value))
        else:
            raise RunDataError(f"{where}: column {column!r} is not numeric (row {row}: {value!r})")
    return pd.Series(values, index=series.index, name=column, dtype="float64")
