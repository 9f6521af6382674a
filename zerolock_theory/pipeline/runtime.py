"""What a stage process knows besides its model: run directory, store, options, fault plan.

Also the per-stage step timer (throughput over the steps after ``warmup_steps``), the fault
injector (``--fail-stage k --fail-at-step t``) and the recovery clock of a restarted stage.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from zerolock_theory.pipeline.links import LinkSettings
from zerolock_theory.pipeline.options import PipelineOptions

__all__ = ["FAIL_EXIT", "PEER_EXIT", "Runtime", "StepTimer"]

FAIL_EXIT = 17  # exit status of an injected failure
PEER_EXIT = 3  # exit status of a stage that stopped because a neighbour failed


@dataclass
class Runtime:
    """A stage process's environment."""

    run_dir: Path
    store: Any
    options: PipelineOptions
    settings: LinkSettings
    wire: torch.device  # where tensors travel (cpu for gloo, the GPU for nccl)
    recovering: bool = False  # this process replaces a failed one
    inject: bool = True  # this incarnation may inject the configured fault
    resume_step: int = 0  # ``zerolock pipeline --resume``: every stage restarts from this checkpoint
    recovery: dict[str, Any] = field(default_factory=dict)

    def maybe_fail(self, k: int, step: int, micro: int) -> None:
        """Injected failure: stage k, step t, right after its first micro-batch went out."""
        opts = self.options
        if not self.inject or opts.fail_stage != k or opts.fail_at_step != step or micro != 0:
            return
        record = {"stage": k, "step": step, "time": time.time(), "mode": opts.fail_mode}
        self.store.set(f"failure/{k}", json.dumps(record))
        if opts.fail_mode == "exit":
            os._exit(FAIL_EXIT)
        while True:  # "hang": alive, sockets open, silent
            time.sleep(3600)

    def start_recovery_clock(self, k: int, start_step: int) -> None:
        """Read the failure record (if any) once the replacement process is ready to replay."""
        if not self.recovering or not self.store.check([f"failure/{k}"]):
            return
        failure = json.loads(self.store.get(f"failure/{k}").decode())
        now = time.time()
        self.recovery = {"stage": k, "failed_at_step": failure["step"], "restart_step": start_step,
                         "replayed_steps": failure["step"] - start_step + 1,
                         "failure_time": failure["time"], "restart_s": now - failure["time"]}

    def after_step(self, step: int) -> None:
        """Stop the recovery clock when the replacement has redone the step that failed."""
        rec = self.recovery
        if rec and "latency_s" not in rec and step >= rec["failed_at_step"]:
            rec["latency_s"] = time.time() - rec["failure_time"]
            rec["replay_s"] = rec["latency_s"] - rec["restart_s"]


class StepTimer:
    """Labelled tokens per second over the steps after ``warmup``, at this stage."""

    def __init__(self, warmup: int, start_step: int) -> None:
        self.warmup, self.start_step = warmup, start_step
        self.t0: float | None = time.perf_counter() if start_step >= warmup else None
        self.tokens = 0
        self.t1: float | None = None
        self.step_times: list[float] = []
        self.cpu_times: list[float] = []  # CPU seconds of the stage process per step (all its threads)
        self._tic = time.perf_counter()
        self._cpu = time.process_time()

    def begin(self) -> None:
        """Mark the start of a step."""
        self._tic = time.perf_counter()
        self._cpu = time.process_time()

    def end(self, step: int, tokens: int) -> float:
        """Mark the end of ``step``; returns its duration."""
        now = time.perf_counter()
        self.step_times.append(now - self._tic)
        self.cpu_times.append(time.process_time() - self._cpu)
        if step + 1 == self.warmup:
            self.t0 = now
        elif self.t0 is not None and step >= self.warmup:
            self.tokens += tokens
            self.t1 = now
        return now - self._tic

    @property
    def tokens_per_s(self) -> float | None:
        """Throughput of the timed window (None if it is empty)."""
        if self.t0 is None or self.t1 is None or self.t1 <= self.t0:
            return None
        return self.tokens / (self.t1 - self.t0)
