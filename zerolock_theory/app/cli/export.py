"""zerolock export: write a run's LoRA adapter in peft's format.

The directory it writes holds adapter_config.json and adapter_model.safetensors, which
PeftModel.from_pretrained(base_model, DIR) loads. Every LoRA run also writes the same into
RUN/adapter at its last step.

Example:
  zerolock export runs/zl --out runs/zl-peft
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zerolock_theory.app.cli import CLIError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("export", help="write a run's adapter in peft's format", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="run directory (from train or sweep)")
    parser.add_argument("--out", type=Path, required=True, help="new or empty directory for the adapter")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from zerolock_theory.training.export import export_run

    try:
        out = export_run(args.run_dir, args.out)
    except (FileNotFoundError, ValueError) as exc:
        raise CLIError(str(exc)) from exc
    print(f"adapter: {out}  (PeftModel.from_pretrained(base, {str(out)!r}))")
    return 0
