"""``zerolock verify``: the main job, from nothing to a report with a verdict per claim.

Examples::

    zerolock verify --quick --out runs/verify-quick       # embedded model, about 3 minutes on 2 cores
    zerolock verify --out runs/verify                     # the full default suite
    zerolock verify --out runs/qwen --model /models/Qwen2.5-0.5B --data corpus.jsonl \\
        --device cuda --dtype bfloat16

Re-running with the same --out resumes: finished runs are skipped.
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
    parser.add_argument("--quick", action="store_true", help="the small suite (fewer steps, seeds and rates)")
    parser.add_argument("--model", default="embedded", help="'embedded' or a local Hugging Face model directory")
    parser.add_argument("--data", default="embedded", help="'embedded', a .txt file or directory, or .jsonl")
    parser.add_argument("--device", default="auto", help="auto (cuda when present), cpu, cuda, ...")
    parser.add_argument("--dtype", default=None,
                        help="parameter dtype (float32); 'bfloat16' on a GPU means float32 weights with bf16 autocast")
    parser.add_argument("--steps", type=int, help="override the steps per run")
    parser.add_argument("--seeds", type=int, help="override the number of seeds")
    parser.add_argument("--chunks", type=int, help="override K")
    parser.add_argument("--overwrite", action="store_true", help="replace --out if it holds another of our runs (never a directory of yours)")
    parser.set_defaults(func=run)


def _spec(args: argparse.Namespace):
    from zerolock_theory.workflows.verify import FULL, QUICK

    spec = QUICK if args.quick else FULL
    changes = {}
    if args.steps is not None:
        if args.steps < 5:
            raise CLIError("--steps must be at least 5 for the rate fits")
        changes["steps"] = args.steps
    if args.seeds is not None:
        if args.seeds < 1:
            raise CLIError("--seeds must be >= 1")
        changes["seeds"] = tuple(range(args.seeds))
    if args.chunks is not None:
        changes["chunks"] = args.chunks
    return dataclasses.replace(spec, **changes)


def run(args: argparse.Namespace) -> int:
    from zerolock_theory.training.state import CheckpointError
    from zerolock_theory.training.steps import NonFiniteLossError
    from zerolock_theory.workflows.verify import verify

    dtype, autocast = "float32", None
    if args.dtype in ("bfloat16", "float16"):
        autocast = args.dtype  # keep master weights in fp32, compute in bf16/fp16
    elif args.dtype is not None:
        dtype = args.dtype
    try:
        result = verify(_spec(args), args.out, model=args.model, data=args.data, device=args.device,
                        dtype=dtype, autocast=autocast, overwrite=args.overwrite)
    except (FileExistsError, ValueError, NonFiniteLossError, CheckpointError) as exc:
        raise CLIError(str(exc)) from exc
    width = max(len(v["claim"]) for v in result.verdicts)
    print(f"\n{'claim':<{width}}  {'verdict':<13}  measured")
    for v in result.verdicts:
        print(f"{v['claim']:<{width}}  {v['verdict']:<13}  {v['figure']}")
    print(f"\nreport: {result.report_html}")
    print(f"markdown: {result.report_markdown}")
    print(f"runs: {len(result.run_dirs)} in {result.out / 'runs'}; wall time {result.seconds:.0f}s")
    return 0
