"""Metrics logging: one protocol, slash-separated keys, one JSON object per step."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Protocol

__all__ = ["JsonlLogger", "MetricsLogger", "read_metrics", "to_json_value"]


class MetricsLogger(Protocol):
    """Anything that takes one record per step."""

    def log(self, record: dict[str, Any]) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


def to_json_value(value: Any) -> Any:
    """JSON-ready value, recursively: NaN → None (undefined), ±inf → "inf"/"-inf", tensors → numbers/lists."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, dict):
        return {k: to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    return value


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """All complete records of a ``metrics.jsonl`` (a torn last line is ignored)."""
    records = []
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise ValueError(f"{path}: line {i + 1} is not valid JSON") from None
    return records


class JsonlLogger:
    """Append-only ``metrics.jsonl``; on resume, records at or after ``keep_before`` are dropped."""

    def __init__(self, path: str | Path, keep_before: int | None = None) -> None:
        self.path = Path(path)
        if keep_before is not None and self.path.exists():
            kept = [r for r in read_metrics(self.path) if r.get("step", -1) < keep_before]
            tmp = self.path.with_suffix(".jsonl.tmp")
            tmp.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
            os.replace(tmp, self.path)
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())

    def log(self, record: dict[str, Any]) -> None:
        clean = {k: to_json_value(v) for k, v in record.items()}
        self._file.write(json.dumps(clean) + "\n")
        self._file.flush()

    def flush(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self.flush()
            self._file.close()
