"""One training run with the probes its config names: the loop plus ``probes.registry``."""

from __future__ import annotations

from pathlib import Path

from probes.registry import build_probes
from zerolock_theory.app.workflows.kill_point import kill_hooks
from zerolock_theory.config import TrainConfig
from zerolock_theory.training.loop import Run, RunSummary, execute, setup

__all__ = ["probed_setup", "probed_train"]


def probed_setup(config: TrainConfig, out: str | Path, *, resume: bool = False, overwrite: bool = False) -> Run:
    """``setup`` with the hooks built from ``config.probes`` (and a test's kill point, ``workflows.kill_point``)."""
    hooks = [*build_probes(config.probes, config.probe_settings), *kill_hooks(out)]
    return setup(config, out, resume=resume, overwrite=overwrite, hooks=hooks)


def probed_train(config: TrainConfig, out: str | Path, *, resume: bool = False, overwrite: bool = False) -> RunSummary:
    """Train ``config`` into ``out`` with every probe of its ``[probes]`` table attached."""
    return execute(probed_setup(config, out, resume=resume, overwrite=overwrite))
