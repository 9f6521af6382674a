"""Grids of runs, resumable: one after another, on parallel workers, or as Slurm jobs.

A grid is a list of axes, each a dotted config key with its values. Every combination
becomes one run directory under the sweep directory, named from the values. Running a
sweep again skips completed runs and resumes half-written ones from their checkpoints.
``run_grid(..., jobs=N)`` spreads the runs over N worker processes and
``launcher="slurm"`` submits each as a Slurm job (``workflows/launch.py``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zerolock_theory.app.workflows.launch import (
    PointTask,
    PopulationTask,
    describe,
    run_local_parallel,
    submit_slurm,
)
from zerolock_theory.app.workflows.runs import probed_train, probed_train_members
from zerolock_theory.config import TrainConfig, check_sources
from zerolock_theory.config_overrides import apply_values, parse_value
from zerolock_theory.jsonio import read_records
from zerolock_theory.training.resume import check_resume, read_saved_config
from zerolock_theory.training.rundir import check_out, prepare_kind, run_kind, write_marker
from zerolock_theory.training.state import checkpoint_step, latest_checkpoint

__all__ = ["GridPoint", "check_sweep_dirs", "expand_grid", "is_complete", "parse_axis", "populations", "run_grid",
           "validate_grid"]


@dataclass(frozen=True)
class GridPoint:
    """One combination of the grid: its run name and its overrides."""

    name: str
    overrides: tuple[tuple[str, Any], ...]


def parse_axis(text: str) -> tuple[str, list[Any]]:
    """``"optim.lr=1e-3,3e-3"`` → ("optim.lr", [0.001, 0.003]) (values parsed as JSON when possible)."""
    key, sep, values = text.partition("=")
    if not sep or "." not in key or not values:
        raise ValueError(f"grid axis {text!r} must look like section.key=v1,v2,...")
    return key, [parse_value(item) for item in values.split(",")]


def _label(key: str, value: Any) -> str:
    short = key.split(".")[-1]
    return re.sub(r"[^A-Za-z0-9.+-]", "_", f"{short}-{value}")


def expand_grid(axes: Iterable[tuple[str, list[Any]]]) -> list[GridPoint]:
    """Every combination of the axes, in order, with unique readable names."""
    axes = list(axes)
    points = []
    for combo in itertools.product(*[[(k, v) for v in values] for k, values in axes]):
        name = "_".join(_label(k, v) for k, v in combo) or "run"
        points.append(GridPoint(name, tuple(combo)))
    names = [p.name for p in points]
    if len(set(names)) != len(names):
        raise ValueError("grid produces duplicate run names; give each axis distinct values")
    return points


def is_complete(run_dir: Path, steps: int) -> bool:
    """A run is complete when its metrics hold every step and its last checkpoint exists."""
    metrics = run_dir / "metrics.jsonl"
    final = run_dir / "checkpoints" / f"step_{steps:08d}" / "COMPLETE"
    if not (metrics.is_file() and final.is_file()):
        return False
    return len({r.get("step") for r in read_records(metrics)}) >= steps


def validate_grid(base: dict[str, Any], points: list[GridPoint]) -> list[TrainConfig]:
    """Every point's validated config, with its model directory and data source checked."""
    configs = [TrainConfig.from_dict(apply_values(base, dict(p.overrides))) for p in points]
    for config in configs:
        check_sources(config)
    return configs


def check_sweep_dirs(out: Path, points: list[GridPoint], configs: list[TrainConfig]) -> None:
    """Refuse a sweep directory or run directory that is not ours (``OutDirError``), or a run
    that would resume with a different config (``ValueError``), before any run starts."""
    check_out(out, "sweep", resume=Path(out).is_dir() and run_kind(out) == "sweep")
    for point, config in zip(points, configs, strict=True):
        run_dir = Path(out) / point.name
        if check_out(run_dir, "train", resume=run_dir.is_dir() and run_kind(run_dir) == "train") == "resume":
            saved = read_saved_config(run_dir)
            if saved is not None:
                check_resume(saved, config, checkpoint_step(latest_checkpoint(run_dir)))


def populations(tasks: list[PointTask]) -> tuple[list[PointTask | PopulationTask], list[str]]:
    """Group ``tasks`` into populations: runs whose configs differ only in their seeds
    (``population_loop.MEMBER_SEEDS``) form one ``PopulationTask`` (in the order of their first
    member); a run alone in its group, or a group a population cannot train (no LoRA), stays a
    ``PointTask``. Returns the tasks and one line per group saying how it is trained."""
    from zerolock_theory.training.population_loop import MEMBER_SEEDS, check_members

    groups: dict[str, list[PointTask]] = {}
    for task in tasks:
        raw = TrainConfig.from_dict(task.raw).to_dict()
        for key in MEMBER_SEEDS:
            section, name = key.split(".")
            raw.get(section, {}).pop(name, None)
        groups.setdefault(repr(sorted(raw.items())), []).append(task)
    out: list[PointTask | PopulationTask] = []
    lines: list[str] = []
    for members in groups.values():
        names = ", ".join(m.name for m in members)
        if len(members) == 1:
            out.append(members[0])
            continue
        try:
            check_members([TrainConfig.from_dict(m.raw) for m in members])
        except ValueError as exc:
            out.extend(members)
            lines.append(f"separate runs ({exc}): {names}")
            continue
        out.append(PopulationTask(members[0].name, tuple(members)))
        lines.append(f"one population of {len(members)} seeds (one forward for all): {names}")
    return out, lines


def run_grid(
    base: dict[str, Any],
    points: list[GridPoint],
    out: Path,
    log: Callable[[str], None] = print,
    *,
    jobs: int = 1,
    launcher: str = "local",
    slurm: dict[str, Any] | None = None,
    population: bool = False,
) -> list[Path]:
    """Run every grid point under ``out``; skip complete runs, resume partial ones.

    ``out`` must be new, empty or an earlier sweep, and every run directory in it new, empty or
    one of our train runs: checked for all points before the first run starts. ``jobs > 1``
    runs them on that many worker processes (``launch.run_local_parallel``); ``launcher =
    "slurm"`` submits them as Slurm jobs with sbatch parameters ``slurm`` and returns without
    waiting. Returns the run directories in grid order either way.

    ``population``: the unfinished runs that differ only in their seeds train as one population
    each (``populations``; each member its own run directory, as a single run writes it; a killed
    population resumes from its members' latest common checkpoint); the others run separately.
    The log says which. Slurm always submits single runs.
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive int, got {jobs!r}")
    if launcher not in ("local", "slurm"):
        raise ValueError(f"launcher must be 'local' or 'slurm', got {launcher!r}")
    configs = validate_grid(base, points)
    check_sweep_dirs(out, points, configs)
    prepare_kind(out, "sweep")
    if run_kind(out) != "sweep":
        write_marker(out, "sweep")
    tasks, run_dirs = [], []
    for i, point in enumerate(points, start=1):
        config = configs[i - 1]
        run_dir = out / point.name
        run_dirs.append(run_dir)
        if is_complete(run_dir, config.run.steps):
            log(f"[{i}/{len(points)}] {point.name}: complete, skipped")
            continue
        resume = run_dir.exists() and any(run_dir.iterdir())
        log(f"[{i}/{len(points)}] {point.name}: {'resuming' if resume else 'starting'}")
        tasks.append(PointTask(point.name, config.to_dict(), run_dir, resume))
    if launcher == "slurm":
        submit_slurm(tasks, out / "slurm", slurm or {}, log)
        return run_dirs
    if population:
        tasks, lines = populations(tasks)
        for line in lines:
            log(line)
    if jobs > 1 and len(tasks) > 1:
        run_local_parallel(tasks, jobs, configs[0].model.device, log)
        return run_dirs
    for task in tasks:
        if isinstance(task, PopulationTask):
            summaries = probed_train_members([TrainConfig.from_dict(m.raw) for m in task.members],
                                             [m.run_dir for m in task.members], resume=True)
            for member, summary in zip(task.members, summaries, strict=True):
                log(f"{member.name}: done, {describe(summary)}")
        else:
            summary = probed_train(TrainConfig.from_dict(task.raw), task.run_dir, resume=task.resume)
            log(f"{task.name}: done, {describe(summary)}")
    return run_dirs
