"""``zerolock verify``: the main job, from nothing to a report with a verdict per claim.

Examples::

    zerolock verify --quick --out runs/verify-quick       # smoke test: embedded model, about 3 minutes on 2 cores
    zerolock verify --out runs/verify                     # the full suite: 1000 steps, 3 seeds per primary group
    zerolock verify --out runs/qwen --model /models/Qwen2.5-0.5B --data corpus.jsonl \\
        --device cuda --dtype bfloat16

η_0 of the primary group is chosen by a pilot (the largest η_0 of the grid whose short
pilot's held-out CE does not rise), unless --lr fixes it. Re-running with the same --out
resumes: finished runs are skipped.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from zerolock_theory.cli import CLIError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("verify", help="run the suite, analyse it and write the report",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="output directory (runs/, analysis/, report/)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: the small suite, too short for Theorem 1's bound test")
    parser.add_argument("--model", default="embedded", help="'embedded' or a local Hugging Face model directory")
    parser.add_argument("--data", default="embedded", help="'embedded', a .txt file or directory, or .jsonl")
    parser.add_argument("--device", default="auto", help="auto (cuda when present), cpu, cuda, ...")
    parser.add_argument("--dtype", default=None,
                        help="parameter dtype (float32); 'bfloat16' on a GPU means float32 weights with bf16 autocast")
    parser.add_argument("--steps", type=int, help="override the steps per run")
    parser.add_argument("--seeds", type=int, help="override the number of seeds")
    parser.add_argument("--chunks", type=int, help="override K")
    parser.add_argument("--jobs", type=int, default=None,
                        help="runs trained at once, one thread each (default: 2 on CPU, 1 on a GPU)")
    parser.add_argument("--lr", type=float, help="fix eta_0 of SGD (skips the pilot that chooses it)")
    parser.add_argument("--overwrite", action="store_true", help="replace --out if it holds another of our runs (never a directory of yours)")
    parser.set_defaults(func=run)


def _spec(args: argparse.Namespace):
    from zerolock_theory.workflows.verify import FULL, QUICK

    spec = QUICK if args.quick else FULL
    changes = {}
    if args.steps is not None:
        if args.steps < 5:
            raise CLIError("--steps must be at least 5 (the bound test needs 500 for a verdict)")
        changes["steps"] = args.steps
    if args.seeds is not None:
        if args.seeds < 1:
            raise CLIError("--seeds must be >= 1")
        changes["seeds"] = tuple(range(args.seeds))
    if args.chunks is not None:
        changes["chunks"] = args.chunks
    if args.lr is not None:
        if not args.lr > 0:
            raise CLIError(f"--lr must be > 0, got {args.lr}")
        changes["lr"] = args.lr
    return dataclasses.replace(spec, **changes)


def _default_jobs(device: str) -> int:
    """2 single-threaded runs at once on CPU (the 2-core budget of the suite), 1 on a GPU."""
    import os

    import torch

    on_gpu = device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())
    return 1 if on_gpu else max(1, min(2, os.cpu_count() or 1))


def run(args: argparse.Namespace) -> int:
    from zerolock_theory.training.state import CheckpointError
    from zerolock_theory.training.steps import NonFiniteLossError
    from zerolock_theory.workflows.verify import verify

    dtype, autocast = "float32", None
    if args.dtype in ("bfloat16", "float16"):
        autocast = args.dtype  # keep master weights in fp32, compute in bf16/fp16
    elif args.dtype is not None:
        dtype = args.dtype
    if args.jobs is not None and args.jobs < 1:
        raise CLIError(f"--jobs must be >= 1, got {args.jobs}")
    jobs = args.jobs if args.jobs is not None else _default_jobs(args.device)
    try:
        result = verify(_spec(args), args.out, model=args.model, data=args.data, device=args.device,
                        dtype=dtype, autocast=autocast, overwrite=args.overwrite, jobs=jobs)
    except (FileExistsError, ValueError, NonFiniteLossError, CheckpointError) as exc:
        raise CLIError(str(exc)) from exc
    width = max(len(v["claim"]) for v in result.verdicts)
    vwidth = max(13, *(len(v["verdict"]) for v in result.verdicts))
    if result.scope:
        print(f"\n{result.scope}")
    print(f"\n{'claim':<{width}}  {'verdict':<{vwidth}}  measured")
    for v in result.verdicts:
        print(f"{v['claim']:<{width}}  {v['verdict']:<{vwidth}}  {v['figure']}")
    print(f"\nreport: {result.report_html}")
    print(f"markdown: {result.report_markdown}")
    print(f"runs: {len(result.run_dirs)} in {result.out / 'runs'}; wall time {result.seconds:.0f}s")
    return 0
