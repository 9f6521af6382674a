"""Typed options of a pipelined run (what ``TrainConfig`` does not already say).

A pipelined run is a ``TrainConfig`` (model, data, method, optimizer, run length) plus these
options: which schedule, how many micro-batches per step, the flow-control lead, the
communication timeouts and the fault-injection switches. One stage per chunk: the number of
stages K is ``config.model.chunks``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from zerolock_theory.config import TrainConfig

__all__ = ["SCHEDULES", "PipelineOptions"]

SCHEDULES = ("zerolock", "gpipe", "1f1b")
BACKENDS = ("auto", "gloo", "nccl")
FAIL_MODES = ("exit", "hang")


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


@dataclass
class PipelineOptions:
    """How the stages run, talk and fail. Validated on construction (``ValueError``)."""

    schedule: str = "zerolock"
    """zerolock (local losses, early forwarding), or the backprop baselines gpipe and 1f1b."""
    micro_batches: int = 1
    """Micro-batches M per step: each step's batch is cut into M equal parts (M divides the
    batch size)."""
    max_lead: int = 2
    """Lead L: a stage may start step t once its downstream has completed t - L steps."""
    backend: str = "auto"
    """auto (nccl on cuda, gloo on cpu), gloo or nccl."""
    threads: int = 1
    """Intra-op CPU threads per stage process."""
    comm_timeout_s: float = 120.0
    """Seconds one send/recv or link set-up may take; a silent peer is an error after this."""
    recovery_timeout_s: float = 120.0
    """Seconds the survivors wait for a restarted stage to come back."""
    max_restarts: int = 1
    """Stage restarts the local launcher may make in one run (0 = fail fast)."""
    fail_stage: int | None = None
    """Fault injection: this stage (1-based, = chunk k) fails ..."""
    fail_at_step: int | None = None
    """... in this step, after sending its first micro-batch."""
    fail_mode: str = "exit"
    """exit (an abrupt os._exit) or hang (stops responding)."""
    measure_memory: bool = False
    """Count saved-for-backward bytes (saved_tensors_hooks)."""
    warmup_steps: int = 1
    """Steps left out of the throughput timing."""

    def __post_init__(self) -> None:
        _require(self.schedule in SCHEDULES, f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        _require(self.backend in BACKENDS, f"backend must be one of {BACKENDS}, got {self.backend!r}")
        _require(self.fail_mode in FAIL_MODES, f"fail_mode must be one of {FAIL_MODES}, got {self.fail_mode!r}")
        for name in ("micro_batches", "max_lead", "threads"):
            _require(int(getattr(self, name)) >= 1, f"{name} must be >= 1, got {getattr(self, name)}")
        _require(self.comm_timeout_s > 0 and self.recovery_timeout_s > 0, "timeouts must be > 0")
        _require(self.max_restarts >= 0, f"max_restarts must be >= 0, got {self.max_restarts}")
        _require(self.warmup_steps >= 0, f"warmup_steps must be >= 0, got {self.warmup_steps}")
        _require(
            (self.fail_stage is None) == (self.fail_at_step is None),
            "fault injection needs both fail_stage and fail_at_step",
        )
        _require(
            self.fail_stage is None or self.schedule == "zerolock",
            "fault injection and recovery are implemented for the ZeroLock pipeline only",
        )

    def check_against(self, config: TrainConfig) -> None:
        """Consistency with the run config: micro-batch split, method, failure step and stage."""
        K, bsz = config.model.chunks, config.data.batch_size
        _require(K >= 2, f"a pipeline needs at least 2 stages, got model.chunks = {K}")
        _require(bsz % self.micro_batches == 0,
                 f"data.batch_size {bsz} is not divisible by micro_batches {self.micro_batches}")
        wanted = "zerolock" if self.schedule == "zerolock" else "backprop"
        _require(config.method.name == wanted,
                 f"schedule {self.schedule!r} trains method {wanted!r}, config has {config.method.name!r}")
        if self.schedule == "1f1b":
            _require(self.micro_batches >= K,
                     f"1F1B needs micro_batches >= stages ({K}), got {self.micro_batches}")
        if self.fail_stage is not None:
            _require(1 <= self.fail_stage <= K, f"fail_stage must lie in 1..{K}, got {self.fail_stage}")
            _require(0 <= int(self.fail_at_step) < config.run.steps,
                     f"fail_at_step must lie in [0, {config.run.steps}), got {self.fail_at_step}")
        if self.schedule == "zerolock" and self.max_restarts > 0:
            W = config.run.checkpoint_every
            _require(W > self.max_lead, f"recovery needs run.checkpoint_every ({W}) > max_lead "
                                        f"({self.max_lead}) so a restart point stays on disk")
            _require(config.run.keep_checkpoints >= 2,
                     "recovery needs run.keep_checkpoints >= 2 (a restarted stage may need the "
                     "checkpoint before its newest)")
        _require(not config.probes, "probes run in the single-process trainer only; "
                                    "remove [probes] from a pipelined run's config")

    def replay_capacity(self, config: TrainConfig) -> int:
        """Steps an upstream stage keeps for replay: W + 2L + 1 (see ``replay.py``)."""
        return config.run.checkpoint_every + 2 * self.max_lead + 1

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the run's ``pipeline.json``)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> PipelineOptions:
        """Inverse of ``to_dict``; unknown keys raise ``ValueError``."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(raw) - names
        _require(not unknown, f"unknown pipeline option(s): {sorted(unknown)}")
        return cls(**raw)
