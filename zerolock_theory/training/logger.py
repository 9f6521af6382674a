"""Metrics logging: one protocol, slash-separated keys, one JSON object per step.

``metrics.jsonl`` is the source of truth (analyses read only it). ``open_loggers`` adds
export backends behind the same ``MetricsLogger`` protocol (``run.report_to``):

* ``tensorboard``: event files in ``RUN/tensorboard`` (scalars stored as float64, so they
  read back equal to the JSONL); on resume, events from the restart step on are purged;
* ``wandb``: a Weights & Biases run in ``RUN/wandb`` (``WANDB_MODE=offline`` works without
  an account), named after the run directory, with the config attached.

Records are written in the package's JSON convention (``zerolock_theory.jsonio``: NaN → null,
±inf → "inf"/"-inf") and read back with its one reader (``jsonio.read_records``). Only finite
and infinite numbers are exported; undefined values (None/NaN), strings and lists stay in the
JSONL only.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Protocol

from zerolock_theory.jsonio import dumps, read_records

__all__ = [
    "BACKENDS", "JsonlLogger", "MetricsLogger", "MultiLogger", "TensorBoardLogger", "WandbLogger",
    "open_loggers",
]

BACKENDS = ("tensorboard", "wandb")
"""Export backends that ``run.report_to`` may name."""


class MetricsLogger(Protocol):
    """Anything that takes one record per step."""

    def log(self, record: dict[str, Any]) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class JsonlLogger:
    """Append-only ``metrics.jsonl``; on resume, records at or after ``keep_before`` are dropped."""

    def __init__(self, path: str | Path, keep_before: int | None = None) -> None:
        self.path = Path(path)
        if keep_before is not None and self.path.exists():
            kept = [r for r in read_records(self.path) if r.get("step", -1) < keep_before]
            tmp = self.path.with_suffix(".jsonl.tmp")
            tmp.write_text("".join(dumps(r) + "\n" for r in kept), encoding="utf-8")
            os.replace(tmp, self.path)
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())

    def log(self, record: dict[str, Any]) -> None:
        self._file.write(dumps(record) + "\n")
        self._file.flush()

    def flush(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self.flush()
            self._file.close()


def _scalars(record: dict[str, Any]) -> dict[str, float]:
    """The numeric entries of a record other than ``step`` (bools and NaN left out)."""
    out = {}
    for key, value in record.items():
        if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
            value = value.item()
        if key == "step" or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isnan(value):
            out[key] = float(value)
    return out


class TensorBoardLogger:
    """Scalars of every record to TensorBoard event files (float64, step = ``record["step"]``)."""

    def __init__(self, log_dir: str | Path, purge_step: int | None = None) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as err:
            raise ValueError("run.report_to names tensorboard, which is not installed; "
                             "pip install 'zerolock-theory[tensorboard]'") from err
        self._writer = SummaryWriter(str(log_dir), purge_step=purge_step or None)

    def log(self, record: dict[str, Any]) -> None:
        step = int(record.get("step", 0))
        for key, value in _scalars(record).items():
            self._writer.add_scalar(key, value, step, new_style=True, double_precision=True)

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


class WandbLogger:
    """Scalars of every record to a Weights & Biases run kept in ``run_dir/wandb``."""

    def __init__(self, run_dir: str | Path, config: dict[str, Any] | None = None) -> None:
        try:
            import wandb
        except ImportError as err:
            raise ValueError("run.report_to names wandb, which is not installed; "
                             "pip install 'zerolock-theory[wandb]'") from err
        run_dir = Path(run_dir)
        (run_dir / "wandb").mkdir(parents=True, exist_ok=True)
        self._run = wandb.init(dir=str(run_dir), name=run_dir.name, config=config or {},
                               project=os.environ.get("WANDB_PROJECT", "zerolock-theory"),
                               reinit="create_new")

    def log(self, record: dict[str, Any]) -> None:
        self._run.log(_scalars(record), step=int(record.get("step", 0)))

    def flush(self) -> None:
        """W&B flushes on its own schedule."""

    def close(self) -> None:
        self._run.finish()


class MultiLogger:
    """Fans every call out to several loggers, in order (the JSONL first)."""

    def __init__(self, loggers: list[MetricsLogger]) -> None:
        self.loggers = loggers

    def log(self, record: dict[str, Any]) -> None:
        for logger in self.loggers:
            logger.log(record)

    def flush(self) -> None:
        for logger in self.loggers:
            logger.flush()

    def close(self) -> None:
        for logger in self.loggers:
            logger.close()


def open_loggers(run_dir: str | Path, report_to: list[str] | tuple[str, ...] = (), *,
                 keep_before: int | None = None, config: dict[str, Any] | None = None) -> MultiLogger:
    """``RUN/metrics.jsonl`` plus one export backend per name in ``report_to`` (``BACKENDS``)."""
    run_dir = Path(run_dir)
    loggers: list[MetricsLogger] = [JsonlLogger(run_dir / "metrics.jsonl", keep_before=keep_before)]
    try:
        for name in report_to:
            if name == "tensorboard":
                loggers.append(TensorBoardLogger(run_dir / "tensorboard", purge_step=keep_before))
            elif name == "wandb":
                loggers.append(WandbLogger(run_dir, config))
            else:
                raise ValueError(f"unknown run.report_to backend {name!r}; choose from {BACKENDS}")
    except Exception:
        MultiLogger(loggers).close()
        raise
    return MultiLogger(loggers)
