"""What the suite knows about each run (``RunInfo``) and the check that runs are comparable."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyses.io import Run, RunDataError

__all__ = ["SHARED_SETTINGS", "IncomparableRuns", "RunInfo", "check_comparable", "run_info"]


SHARED_SETTINGS: tuple[str, ...] = ("model.path", "model.tokenizer", "data.source", "data.text_field")
"""Config fields every analysed run must share: contrasts across runs need one model, tokenizer
(the model directory's, unless ``model.tokenizer`` names one) and corpus."""


class IncomparableRuns(RunDataError):
    """The runs differ in a ``SHARED_SETTINGS`` field, so contrasting them would be meaningless."""


def check_comparable(runs: Sequence[Run], names: Sequence[str]) -> None:
    """Raise ``IncomparableRuns`` (one line naming the field and the runs) when runs differ in a shared setting."""
    for key in SHARED_SETTINGS:
        values: dict[str, list[str]] = {}
        for run, name in zip(runs, names, strict=True):
            values.setdefault(str(run.get(key, "")), []).append(name)
        if len(values) > 1:
            parts = [f"{v or '(unset)'!r} ({', '.join(n[:3])}{', ...' if len(n) > 3 else ''})" for v, n in values.items()]
            raise IncomparableRuns(
                f"runs differ in {key}: {' vs '.join(parts)}; analyse runs of one model, tokenizer and data set"
            )


@dataclass(frozen=True)
class RunInfo:
    """What the suite needs to know about one run, read from its config and manifest."""

    name: str
    path: str
    method: str
    direction: str
    optimizer: str
    lr: float
    schedule: str
    seed: int
    chunks: int
    alpha: float
    epsilon: float
    model: str
    group: str
    n_records: int
    last_step: int
    config: dict[str, Any]
    manifest: dict[str, Any]
    warnings: list[str]


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def run_info(run: Run, name: str) -> RunInfo:
    """Summarise ``run``; the group label leaves out only the seed."""
    method = str(run.get("method.name", "unknown"))
    direction = str(run.get("method.direction", "")) if method == "zerolock" else ""
    optimizer = str(run.get("optim.name", ""))
    lr = _float(run.get("optim.lr"))
    schedule = str(run.get("optim.schedule", ""))
    chunks = _int(run.get("model.chunks"))
    alpha = _float(run.get("method.alpha"))
    epsilon = _float(run.get("method.epsilon", 0.0))
    model = str(run.get("model.path", ""))
    seed = _int(run.get("run.seed", run.get("data.seed")))
    head = f"{method}/{direction}" if direction else method
    group = f"{head} {optimizer} lr={lr:g} {schedule} K={chunks}"
    if method == "zerolock":
        group += f" alpha={alpha:g} eps={epsilon:g}"
    if model:
        group += f" {Path(model).name}"
    steps = run.metrics["step"]
    return RunInfo(
        name=name,
        path=str(run.path),
        method=method,
        direction=direction,
        optimizer=optimizer,
        lr=lr,
        schedule=schedule,
        seed=seed,
        chunks=chunks,
        alpha=alpha,
        epsilon=epsilon,
        model=model,
        group=group,
        n_records=int(len(steps)),
        last_step=int(steps.max()),
        config=run.config,
        manifest=run.manifest,
        warnings=list(run.warnings),
    )
