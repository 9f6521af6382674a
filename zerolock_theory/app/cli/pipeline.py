"""``zerolock pipeline``: ZeroLock (or a GPipe/1F1B baseline) with one process per stage.

Examples::

    zerolock pipeline --stages 4 --out runs/pipe                 # 4 local stage processes
    zerolock pipeline --stages 4 --micro-batches 4 --pipeline-schedule 1f1b --out runs/1f1b
    zerolock pipeline --stages 4 --checkpoint-every 5 --fail-stage 2 --fail-at-step 12 --out runs/ft
    torchrun --nproc-per-node 4 -m zerolock_theory pipeline --stages 4 --out runs/pipe

Training flags are those of ``zerolock train``; the stage count K sets ``model.chunks``.
The run directory holds the run-level files of docs/SCHEMA.md (merged from the stages) and
``stages/stage_k/`` with each stage's own checkpoints and metrics (docs/PIPELINE.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from zerolock_theory.app.cli import CLIError
from zerolock_theory.app.cli.flags import PIPELINE_OPTIONS, add_field_flags, flag_values
from zerolock_theory.app.cli.train import FLAGS, add_config_arguments, config_from_args, read_saved

OPTION_FLAGS: dict[str, str] = {
    "micro_batches": "micro_batches",
    "max_lead": "max_lead",
    "backend": "backend",
    "threads": "threads",
    "comm_timeout": "comm_timeout_s",
    "recovery_timeout": "recovery_timeout_s",
    "max_restarts": "max_restarts",
    "fail_stage": "fail_stage",
    "fail_at_step": "fail_at_step",
    "fail_mode": "fail_mode",
    "warmup_steps": "warmup_steps",
}
"""Flag → ``PipelineOptions`` field; type, help and default come from the field (``cli.flags``)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("pipeline", help="pipelined training, one process per stage",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_arguments(parser)
    parser.add_argument("--stages", type=int, required=True, help="number of stages K (= model.chunks)")
    parser.add_argument("--pipeline-schedule", dest="pipeline_schedule", choices=("zerolock", "gpipe", "1f1b"),
                        default="zerolock", help="ZeroLock pipeline, or a backprop baseline on "
                        "torch.distributed.pipelining (--schedule is the learning-rate schedule)")
    add_field_flags(parser, PIPELINE_OPTIONS, OPTION_FLAGS)
    parser.add_argument("--measure-memory", action="store_true",
                        help="count saved-for-backward bytes; print each stage's memory split")
    parser.add_argument("--out", type=Path, required=True, help="run directory")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--resume", action="store_true",
                       help="continue --out from the newest step every stage has a checkpoint for")
    group.add_argument("--overwrite", action="store_true", help="replace --out if it holds one of our runs")
    parser.set_defaults(func=run)


def _saved(path: Path, resume: bool) -> dict[str, Any]:
    """A resumed run's saved JSON (``config.json`` / ``pipeline.json``), one-line errors."""
    return read_saved(path) if resume and path.is_file() else {}


def _options(args: argparse.Namespace):
    from zerolock_theory.pipeline import PipelineOptions

    values = _saved(args.out / "pipeline.json", args.resume)
    for one_off in ("fail_stage", "fail_at_step", "fail_mode"):  # fault injection is not inherited
        values.pop(one_off, None)
    values.update(flag_values(args, OPTION_FLAGS))
    values.update(schedule=args.pipeline_schedule, measure_memory=args.measure_memory)
    try:
        return PipelineOptions.from_dict(values)
    except (ValueError, TypeError) as exc:
        raise CLIError(str(exc)) from exc


def _config(args: argparse.Namespace):
    given = flag_values(args, FLAGS)
    if given.get("model.chunks", args.stages) != args.stages:
        raise CLIError(f"--chunks {given['model.chunks']} contradicts --stages {args.stages}")
    method = "zerolock" if args.pipeline_schedule == "zerolock" else "backprop"
    if given.get("method.name", method) != method:
        raise CLIError(f"--pipeline-schedule {args.pipeline_schedule} trains method {method!r}, "
                       f"not {given['method.name']!r}")
    base = _saved(args.out / "config.json", args.resume) if not args.config else None
    return config_from_args(args, base or None, {"model.chunks": args.stages, "method.name": method})


def _check_stages(config) -> None:
    """K against the model's layer count, before any stage process is spawned."""
    from zerolock_theory.app.workflows.preflight import check_chunks

    try:
        check_chunks(config.model.path, config.model.chunks, "--stages")
    except ValueError as exc:
        raise CLIError(str(exc)) from exc


def run(args: argparse.Namespace) -> int:
    from zerolock_theory.training.rundir import check_out

    check_out(args.out, "pipeline", resume=args.resume, overwrite=args.overwrite)
    config, options = _config(args), _options(args)
    _check_stages(config)
    from zerolock_theory.pipeline import PipelineError, launch, launch_torchrun
    from zerolock_theory.pipeline.launch import under_torchrun
    from zerolock_theory.pipeline.memory import MEMORY_PARTS
    from zerolock_theory.training.state import CheckpointError

    try:
        if under_torchrun():
            if args.resume:
                raise CLIError("--resume is for the local launcher; torchrun restarts whole groups")
            summary = launch_torchrun(config, options, args.out, overwrite=args.overwrite)
            if summary is None:  # not rank 0
                return 0
        else:
            summary = launch(config, options, args.out, overwrite=args.overwrite, resume=args.resume)
    except (PipelineError, ValueError, CheckpointError) as exc:
        raise CLIError(str(exc)) from exc
    ce = "n/a" if summary.final_train_ce is None else f"{summary.final_train_ce:.4f}"
    rates = [r.get("tokens_per_s") for r in summary.results if r.get("tokens_per_s")]
    rate = f"{rates[-1]:.0f} tok/s" if rates else "n/a"
    print(f"run: {summary.run_dir}  schedule: {options.schedule}  stages: {summary.stages}  "
          f"steps: {summary.steps}  final train CE: {ce}  throughput: {rate}  time: {summary.seconds:.1f}s")
    for r in sorted(summary.results, key=lambda r: r.get("stage", 0)):
        mem = r.get("memory") or {}
        if mem.get("total") is not None:
            parts = "  ".join(f"{key} {mem[key] / 2**20:.2f}" for key in (*MEMORY_PARTS, "total", "replay"))
            print(f"stage {r['stage']} memory MiB: {parts}")
    for rec in summary.recoveries:
        print(f"recovery: stage {rec['stage']} failed in step {rec['failed_at_step']}, restarted from "
              f"checkpoint step {rec['restart_step']}, replayed {rec['replayed_steps']} step(s); caught up "
              f"{rec.get('latency_s', float('nan')):.2f}s after the failure (restart "
              f"{rec['restart_s']:.2f}s + replay {rec.get('replay_s', float('nan')):.2f}s)")
    return 0
