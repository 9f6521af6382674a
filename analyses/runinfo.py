"""What the suite knows about each run (``RunInfo``), its group (``GroupKey``) and the check
that runs are comparable.

A run's config is read as a ``TrainConfig`` (``TrainConfig.from_dict``): a config that does
not load is an error naming the run, never a silent default, and every field read here
exists in the typed config.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyses.io import Run, RunDataError
from zerolock_theory.config import TrainConfig, alpha_of

__all__ = ["SHARED_SETTINGS", "GroupKey", "IncomparableRuns", "RunInfo", "check_comparable", "run_config",
           "run_info"]


def _tokenizer(run: Run, config: TrainConfig) -> str:
    """The tokenizer's fingerprint from the manifest (``training.manifest.tokenizer_identity``);
    a manifest without it falls back to the model directory, whose tokenizer the run used."""
    identity = run.manifest.get("tokenizer")
    if isinstance(identity, dict) and identity.get("sha256"):
        return f"{identity.get('name') or '?'} (size {identity.get('size')}, sha256 {str(identity['sha256'])[:12]})"
    return f"the tokenizer of {config.model.path}"


SHARED_SETTINGS: dict[str, Callable[[Run, TrainConfig], str]] = {
    "model.path": lambda run, config: config.model.path,
    "tokenizer": _tokenizer,
    "data.source": lambda run, config: config.data.source,
    "data.text_field": lambda run, config: config.data.text_field,
}
"""What every analysed run must share: contrasts across runs need one model, tokenizer (its
fingerprint in ``manifest.json``) and corpus."""


class IncomparableRuns(RunDataError):
    """The runs differ in a ``SHARED_SETTINGS`` entry, so contrasting them would be meaningless."""


def run_config(run: Run, name: str | None = None) -> TrainConfig:
    """The run's ``config.json`` as a typed ``TrainConfig``; ``RunDataError`` naming the run if it does not load."""
    try:
        return TrainConfig.from_dict(run.config)
    except (TypeError, ValueError) as exc:
        raise RunDataError(f"{name or run.path}: config.json does not load: {exc}") from exc


def check_comparable(runs: Sequence[Run], names: Sequence[str]) -> None:
    """Raise ``IncomparableRuns`` (one line naming the setting and the runs) when runs differ in a shared setting."""
    configs = [run_config(run, name) for run, name in zip(runs, names, strict=True)]
    for key, read in SHARED_SETTINGS.items():
        values: dict[str, list[str]] = {}
        for run, config, name in zip(runs, configs, names, strict=True):
            values.setdefault(str(read(run, config)), []).append(name)
        if len(values) > 1:
            parts = [f"{v or '(unset)'!r} ({', '.join(n[:3])}{', ...' if len(n) > 3 else ''})" for v, n in values.items()]
            raise IncomparableRuns(
                f"runs differ in {key}: {' vs '.join(parts)}; analyse runs of one model, tokenizer and data set"
            )


@dataclass(frozen=True)
class GroupKey:
    """Everything that defines a group of runs except the seed (runs of a group are replicates)."""

    method: str
    direction: str  # "" for backprop
    optimizer: str
    lr: float
    schedule: str
    chunks: int
    alpha: float
    epsilon: float
    model: str

    @property
    def head(self) -> str:
        """``zerolock/forward``, ``zerolock/reverse`` or ``backprop``."""
        return f"{self.method}/{self.direction}" if self.direction else self.method

    @property
    def label(self) -> str:
        """The group's one-line label (report tables, JSON)."""
        text = f"{self.head} {self.optimizer} lr={self.lr:g} {self.schedule} K={self.chunks}"
        if self.method == "zerolock":
            text += f" alpha={self.alpha:g} eps={self.epsilon:g}"
        return text + (f" {Path(self.model).name}" if self.model else "")

    @property
    def short(self) -> str:
        """A legend label: the method and direction with η_0."""
        return f"{self.head} lr={self.lr:g}"


@dataclass(frozen=True)
class RunInfo:
    """What the suite needs to know about one run, read from its config and manifest."""

    name: str
    path: str
    key: GroupKey
    seed: int
    n_records: int
    last_step: int
    config: dict[str, Any]
    manifest: dict[str, Any]
    warnings: list[str]

    method = property(lambda self: self.key.method)
    direction = property(lambda self: self.key.direction)
    optimizer = property(lambda self: self.key.optimizer)
    lr = property(lambda self: self.key.lr)
    schedule = property(lambda self: self.key.schedule)
    chunks = property(lambda self: self.key.chunks)
    alpha = property(lambda self: self.key.alpha)
    epsilon = property(lambda self: self.key.epsilon)
    model = property(lambda self: self.key.model)
    group = property(lambda self: self.key.label)


def run_info(run: Run, name: str) -> RunInfo:
    """Summarise ``run`` (its config read as a ``TrainConfig``); the group key leaves out only the seed."""
    config = run_config(run, name)
    zerolock = config.method.name == "zerolock"
    key = GroupKey(
        method=config.method.name,
        direction=config.method.direction if zerolock else "",
        optimizer=config.optim.name,
        lr=float(config.optim.lr),
        schedule=config.optim.schedule,
        chunks=int(config.model.chunks),
        alpha=alpha_of(config.method, config.model.chunks),  # the output chunk's α when one per chunk
        epsilon=float(config.method.epsilon),
        model=config.model.path,
    )
    steps = run.metrics["step"]
    return RunInfo(name=name, path=str(run.path), key=key, seed=int(config.run.seed), n_records=int(len(steps)),
                   last_step=int(steps.max()), config=run.config, manifest=run.manifest, warnings=list(run.warnings))
