"""``zerolock train``: one ZeroLock or backprop run from a recipe plus overrides.

Examples::

    zerolock train --out runs/zl                      # ZeroLock-forward on the embedded model
    zerolock train --config backprop --out runs/bp --steps 400   # a packaged recipe by name
    zerolock train --out runs/zl --resume             # continue from the latest checkpoint
    zerolock train --population-seeds 0 1 2 --out runs/pop   # three seeds as one population: runs/pop/seed-0 ...
    zerolock train --model /models/qwen --data corpus.jsonl --device cuda --dtype bfloat16 --out runs/q
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from zerolock_theory.app.cli import CLIError
from zerolock_theory.app.cli.flags import TRAIN_CONFIG, add_field_flags, flag_values

FLAGS: dict[str, str] = {
    "method": "method.name",
    "divergence": "method.direction",
    "alpha": "method.alpha",
    "epsilon": "method.epsilon",
    "p0": "method.p0",
    "chunks": "model.chunks",
    "model": "model.path",
    "device": "model.device",
    "dtype": "model.dtype",
    "autocast": "model.autocast",
    "data": "data.source",
    "text_field": "data.text_field",
    "seq_len": "data.seq_len",
    "batch_size": "data.batch_size",
    "steps": "run.steps",
    "seed": "run.seed",
    "data_seed": "data.seed",
    "order_seed": "data.order_seed",
    "lr": "optim.lr",
    "optimizer": "optim.name",
    "schedule": "optim.schedule",
    "eval_every": "run.eval_every",
    "checkpoint_every": "run.checkpoint_every",
    "report_to": "run.report_to",
}
"""Flag → ``TrainConfig`` field path; type, help and default come from the field (``cli.flags``)."""


RUN_FLAGS: dict[str, str] = {"threads": "run.threads"}
"""Flags of ``zerolock train`` alone (``zerolock pipeline`` has its own --threads per stage)."""


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Recipe, overrides and the common flags (shared by train, sweep and pipeline)."""
    parser.add_argument("--config", type=Path, help="recipe file (TOML, YAML or JSON) or a packaged recipe's name "
                        "(zerolock recipes lists them)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override any config key, e.g. --set model.lora.rank=4 --set probes.stability.every=1")
    add_field_flags(parser, TRAIN_CONFIG, FLAGS)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def config_from_args(args: argparse.Namespace, base: dict[str, Any] | None = None,
                     values: dict[str, Any] | None = None):
    """A validated ``TrainConfig``: saved config or recipe, then the flags, ``values``, --set."""
    from zerolock_theory.config import TrainConfig, read_recipe
    from zerolock_theory.config_overrides import apply_overrides, apply_values

    typed = {**flag_values(args, FLAGS), **(values or {})}
    if args.no_progress:
        typed["run.progress"] = False
    try:
        raw = base if base is not None else (read_recipe(args.config) if args.config else {})
        if "suite" in raw and base is None:  # a verify suite (verify_quick, verify_full, ...)
            raise CLIError(f"{args.config} is a verify suite ([suite] table): use zerolock verify --config {args.config}")
        return TrainConfig.from_dict(apply_overrides(apply_values(raw, typed), args.overrides))
    except ValueError as exc:
        raise CLIError(str(exc)) from exc


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("train", help="train one run (ZeroLock or backprop)", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_arguments(parser)
    add_field_flags(parser, TRAIN_CONFIG, RUN_FLAGS)
    parser.add_argument("--out", type=Path, required=True, help="run directory")
    parser.add_argument("--population-seeds", type=int, nargs="+", metavar="SEED",
                        help="train one run per seed (run.seed = data.order_seed = SEED) as one population of "
                        "adapters in one forward; each run's directory is --out/seed-SEED, as zerolock train writes it")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--resume", action="store_true", help="continue from the latest complete checkpoint in --out")
    group.add_argument("--overwrite", action="store_true", help="replace --out if it holds one of our runs (never a directory of yours)")
    parser.set_defaults(func=run)


def read_saved(path: Path) -> dict[str, Any]:
    """A run's saved JSON object (``config.json``, ``pipeline.json``) for a resume; one-line errors."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise CLIError(f"{path} is not valid JSON ({exc}); cannot resume") from exc
    if not isinstance(data, dict):
        raise CLIError(f"{path}: top level is not an object; cannot resume")
    return data


def _saved_base(args: argparse.Namespace) -> dict[str, Any] | None:
    """The run's own config.json as the base of a resume without --config (a population's: its
    first member's)."""
    seeds = getattr(args, "population_seeds", None)
    saved = args.out / f"seed-{seeds[0]}" / "config.json" if seeds else args.out / "config.json"
    if not args.resume or args.config or not saved.is_file():
        return None
    return read_saved(saved)


def run(args: argparse.Namespace) -> int:
    from zerolock_theory.training.rundir import check_out

    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise CLIError("train runs in one process, but WORLD_SIZE > 1 (torchrun): use 'zerolock pipeline' "
                       "for multi-process training, or run train without torchrun")
    if args.population_seeds:
        return _run_population(args)
    check_out(args.out, "train", resume=args.resume, overwrite=args.overwrite)  # before reading anything
    config = config_from_args(args, _saved_base(args), flag_values(args, RUN_FLAGS))
    try:
        from zerolock_theory.app.workflows.preflight import check_chunks

        check_chunks(config.model.path, config.model.chunks)
    except ValueError as exc:
        raise CLIError(str(exc)) from exc
    from zerolock_theory.app.workflows.runs import probed_train
    from zerolock_theory.training.state import CheckpointError
    from zerolock_theory.training.steps import NonFiniteLossError

    try:
        summary = probed_train(config, args.out, resume=args.resume, overwrite=args.overwrite)
    except (ValueError, NonFiniteLossError, CheckpointError) as exc:
        raise CLIError(str(exc)) from exc
    if summary.noop:
        print(f"run: {summary.run_dir} already completed {summary.steps} steps; nothing to do")
        return 0
    from zerolock_theory.formatting import human

    start, end = human(summary.initial_eval_ce), human(summary.final_eval_ce)
    print(f"run: {summary.run_dir}  steps: {summary.steps}  held-out CE: {start} -> {end}  "
          f"time: {summary.seconds:.1f}s")
    return 0


def _run_population(args: argparse.Namespace) -> int:
    """``--population-seeds``: one member directory per seed under --out (``workflows.runs``)."""
    from zerolock_theory.training.rundir import check_out

    seeds = args.population_seeds
    if len(set(seeds)) != len(seeds):
        raise CLIError(f"--population-seeds repeats a seed: {seeds}")
    for seed in seeds:  # before reading anything
        check_out(args.out / f"seed-{seed}", "train", resume=args.resume, overwrite=args.overwrite)
    config = config_from_args(args, _saved_base(args), flag_values(args, RUN_FLAGS))
    from zerolock_theory.app.workflows.runs import probed_train_population
    from zerolock_theory.training.state import CheckpointError
    from zerolock_theory.training.steps import NonFiniteLossError

    try:
        summaries = probed_train_population(config, seeds, args.out, resume=args.resume, overwrite=args.overwrite)
    except (ValueError, NonFiniteLossError, CheckpointError) as exc:
        raise CLIError(str(exc)) from exc
    from zerolock_theory.formatting import human

    for summary in summaries:
        if summary.noop:
            print(f"run: {summary.run_dir} already completed {summary.steps} steps; nothing to do")
        else:
            print(f"run: {summary.run_dir}  steps: {summary.steps}  held-out CE: {human(summary.initial_eval_ce)} -> "
                  f"{human(summary.final_eval_ce)}  time: {summary.seconds:.1f}s")
    return 0
