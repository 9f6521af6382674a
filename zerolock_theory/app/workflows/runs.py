"""One training run with the probes its config names: the loop plus ``probes.registry``."""

from __future__ import annotations

from pathlib import Path

from probes.registry import build_probes
from zerolock_theory.app.workflows.kill_point import kill_hooks
from zerolock_theory.config import TrainConfig
from zerolock_theory.training.loop import Run, RunSummary, execute, setup

__all__ = ["member_configs", "probed_setup", "probed_train", "probed_train_members", "probed_train_population"]


def probed_setup(config: TrainConfig, out: str | Path, *, resume: bool = False, overwrite: bool = False) -> Run:
    """``setup`` with the hooks built from ``config.probes`` (and a test's kill point, ``workflows.kill_point``)."""
    hooks = [*build_probes(config.probes, config.probe_settings), *kill_hooks(out)]
    return setup(config, out, resume=resume, overwrite=overwrite, hooks=hooks)


def probed_train(config: TrainConfig, out: str | Path, *, resume: bool = False, overwrite: bool = False) -> RunSummary:
    """Train ``config`` into ``out`` with every probe of its ``[probes]`` table attached."""
    return execute(probed_setup(config, out, resume=resume, overwrite=overwrite))


def member_configs(config: TrainConfig, seeds: list[int]) -> list[TrainConfig]:
    """``config`` once per seed s, with ``run.seed`` = ``data.order_seed`` = s (each member its own
    initialisation, dropout and data order, as ``zerolock train --seed s --order-seed s``)."""
    out = []
    for seed in seeds:
        raw = config.to_dict()
        raw["run"]["seed"] = int(seed)
        raw["data"]["order_seed"] = int(seed)
        out.append(TrainConfig.from_dict(raw))
    return out


def probed_train_population(config: TrainConfig, seeds: list[int], out: str | Path, *, resume: bool = False,
                            overwrite: bool = False) -> list[RunSummary]:
    """Train ``config`` for every seed as one population (``training.population_loop``) into
    ``out/seed-{s}``, each member with the probes of its ``[probes]`` table."""
    from zerolock_theory.training.population_loop import train_population

    configs = member_configs(config, seeds)
    outs = [Path(out) / f"seed-{seed}" for seed in seeds]
    hooks = [build_probes(c.probes, c.probe_settings) for c in configs]
    return train_population(configs, outs, resume=resume, overwrite=overwrite, hooks=hooks)


def probed_train_members(configs: list[TrainConfig], outs: list[str | Path], *, resume: bool = False,
                         overwrite: bool = False) -> list[RunSummary]:
    """Train ``configs`` (runs that differ only in their seeds) as one population into ``outs``, one
    directory per member as ``probed_train`` writes it: each member with the probes of its
    ``[probes]`` table (and a test's kill point, ``workflows.kill_point``)."""
    from zerolock_theory.training.population_loop import train_population

    hooks = [[*build_probes(c.probes, c.probe_settings), *kill_hooks(out)] for c, out in zip(configs, outs, strict=True)]
    return train_population(configs, [Path(o) for o in outs], resume=resume, overwrite=overwrite, hooks=hooks)
