"""``zerolock sweep``: a grid of runs (learning rate × direction × seed × α …), resumable.

Example::

    zerolock sweep --config zerolock_forward --out runs/sweep \\
        --grid optim.lr=1e-3,3e-3 --grid method.direction=forward,reverse \\
        --grid run.seed=0,1,2 --set method.epsilon=0.1

Run it again after an interruption: complete runs are skipped, a half-written run resumes.

Spread the runs (results equal those of --jobs 1 when run.threads is fixed):

    zerolock sweep --out runs/sweep --grid run.seed=0,1,2,3 --jobs 4    # 4 worker processes
    zerolock sweep --out runs/sweep --grid run.seed=0,1,2,3 --launcher slurm \\
        --slurm partition=gpu --slurm gpus_per_node=1 --slurm time=120
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zerolock_theory.app.cli import CLIError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("sweep", help="run a grid of runs, resumably", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, help="base recipe (TOML, YAML or JSON)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a base config key")
    parser.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                        help="one axis of the grid; repeat for more axes")
    parser.add_argument("--out", type=Path, required=True, help="sweep directory (one run per sub-directory)")
    parser.add_argument("--dry-run", action="store_true", help="list the runs without training")
    parser.add_argument("--jobs", type=int, default=1,
                        help="worker processes (one GPU each when there are several, else one CPU thread each)")
    parser.add_argument("--launcher", choices=("local", "slurm"), default="local",
                        help="run here, or submit one Slurm job per run through submitit (needs the slurm extra)")
    parser.add_argument("--slurm", action="append", default=[], metavar="KEY=VALUE",
                        help="sbatch parameter for --launcher slurm, e.g. partition=gpu, time=120 (minutes)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from zerolock_theory.app.workflows.sweep import (
        check_sweep_dirs,
        expand_grid,
        parse_axis,
        run_grid,
    )
    from zerolock_theory.config import TrainConfig, check_sources, read_recipe
    from zerolock_theory.config_overrides import apply_overrides, apply_values

    if args.jobs < 1:
        raise CLIError(f"--jobs must be >= 1, got {args.jobs}")
    try:
        slurm = _slurm_parameters(args.slurm)
        base = apply_overrides(read_recipe(args.config) if args.config else {}, args.overrides)
        points = expand_grid(parse_axis(axis) for axis in args.grid)
        configs = [TrainConfig.from_dict(apply_values(base, dict(p.overrides)))
                   for p in points]  # validate every config before the first run starts
        if args.dry_run:
            for point in points:
                print(point.name)
            return 0
        for config in configs:
            check_sources(config)
        check_sweep_dirs(args.out, points, configs)
    except ValueError as exc:
        raise CLIError(str(exc)) from exc
    from zerolock_theory.training.state import CheckpointError
    from zerolock_theory.training.steps import NonFiniteLossError

    try:
        run_grid(base, points, args.out, jobs=args.jobs, launcher=args.launcher, slurm=slurm)
    except (ValueError, RuntimeError, NonFiniteLossError, CheckpointError) as exc:  # RuntimeError: a worker's run
        raise CLIError(str(exc)) from exc
    print(f"sweep: {len(points)} runs in {args.out}")
    return 0


def _slurm_parameters(items: list[str]) -> dict[str, object]:
    """``["partition=gpu", "time=120"]`` → ``{"partition": "gpu", "time": 120}``."""
    from zerolock_theory.config_overrides import parse_value

    params: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--slurm {item!r} must look like KEY=VALUE")
        params[key] = parse_value(value)
    return params
