"""The package's one JSON convention, and its one JSON-lines reader.

Every file the package writes is strict JSON (no ``NaN``/``Infinity`` tokens):

* an undefined value (NaN) is ``null``;
* the theory's infinities (an unbounded ratio, a degenerate minimizer) are the strings
  ``"inf"`` and ``"-inf"``;
* tensors and numpy values become plain numbers and lists, paths become strings, dataclasses
  become objects.

``read_jsonl`` reads a JSON-lines file (``metrics.jsonl``, tables): one object a line, blank
lines skipped, non-standard ``NaN``/``Infinity`` literals refused. The one tolerated defect is
a torn last line (invalid JSON without a trailing newline: a writer stopped mid-line); it is
dropped with a warning.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from pathlib import Path
from typing import Any

__all__ = [
    "JsonlError",
    "TornLineWarning",
    "dumps",
    "from_json_float",
    "loads",
    "read_jsonl",
    "read_records",
    "to_json_value",
]

INFINITIES = {"inf": math.inf, "-inf": -math.inf}
"""The strings that stand for the theory's infinities."""


class JsonlError(ValueError):
    """A JSON-lines file is missing or malformed; the message names the file and the line."""


class TornLineWarning(UserWarning):
    """A torn last line of a JSON-lines file was dropped."""


def to_json_value(value: Any) -> Any:
    """JSON-ready value, recursively: NaN → None, ±inf → "inf"/"-inf", tensors/numpy → plain."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    elif hasattr(value, "tolist"):  # tensors, numpy arrays and numpy scalars
        value = value.tolist()
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    return value


def from_json_float(value: Any) -> float:
    """Inverse of ``to_json_value`` for one float: None → NaN, "inf"/"-inf" → ±inf."""
    if value is None:
        return math.nan
    if isinstance(value, str):
        if value not in INFINITIES:
            raise ValueError(f"expected a number, null, \"inf\" or \"-inf\", got {value!r}")
        return INFINITIES[value]
    return float(value)


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` of ``to_json_value(value)``: strict JSON, non-ASCII kept."""
    kwargs.setdefault("ensure_ascii", False)
    return json.dumps(to_json_value(value), allow_nan=False, **kwargs)


class _NonStandardLiteral(ValueError):
    """NaN, Infinity or -Infinity in JSON text (not JSON)."""


def _no_constant(name: str) -> Any:
    raise _NonStandardLiteral(f"non-standard JSON literal {name} (this package writes NaN as "
                              "null, infinities as \"inf\"/\"-inf\")")


def loads(text: str) -> Any:
    """``json.loads`` that refuses the non-standard ``NaN``/``Infinity`` literals (ValueError)."""
    return json.loads(text, parse_constant=_no_constant)


def read_jsonl(path: str | Path, *, warning: type[Warning] = TornLineWarning,
               stacklevel: int = 2) -> tuple[list[dict[str, Any]], list[str]]:
    """Parse a JSON-lines file into records; return ``(records, notes)``.

    Blank lines are skipped. Invalid JSON raises ``JsonlError`` naming the line, except on a
    torn last line (invalid and without a trailing newline), which is dropped with a
    ``warning`` (its message is also returned in ``notes``). Each line must hold an object.
    """
    path = Path(path)
    if not path.is_file():
        raise JsonlError(f"{path.parent}: missing {path.name}")
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    records: list[dict[str, Any]] = []
    notes: list[str] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = loads(line)
        except _NonStandardLiteral as exc:
            raise JsonlError(f"{path}: line {i + 1}: {exc}") from None
        except json.JSONDecodeError as exc:
            if i != last or text.endswith("\n"):
                raise JsonlError(f"{path}: line {i + 1}: invalid JSON ({exc.msg})") from exc
            note = f"{path}: line {i + 1}: torn last line dropped ({exc.msg})"
            warnings.warn(note, warning, stacklevel=stacklevel + 1)
            notes.append(note)
            continue
        if not isinstance(record, dict):
            raise JsonlError(f"{path}: line {i + 1}: expected a JSON object")
        records.append(record)
    return records, notes


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file (``read_jsonl`` without the notes)."""
    return read_jsonl(path, stacklevel=3)[0]
