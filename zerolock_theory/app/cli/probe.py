"""``zerolock probe``: small experiments on a model, outside a training run.

``zerolock probe fixed-point --model M --chunk k --seeds N --out DIR [--steps-max S] ...``
    Which target does training reach? Chunk k of a K-chunk split is trained alone on a
    fixed batch with the forward loss and, separately, with the reverse loss, until its local
    loss stops falling; the reached readouts are compared with m_k and g_k over the full
    vocabulary, and the contrast [TV(·,m) − TV(·,g)]_forward − [same]_reverse is decided
    with a t-interval over the N seeds, leaving out seeds whose reached readouts are only
    the start at another temperature (``zerolock_theory.app.workflows.fixed_point``,
    ``analyses.lemma2.fixed_point``).
    Writes DIR/fixed_point.json (the result, kind "fixed_point") and prints one line per
    seed and the outcome. DIR must not exist or be empty.

Example::

    zerolock probe fixed-point --model embedded --chunk 1 --seeds 5 --out runs/fixed_point
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zerolock_theory.app.cli import CLIError

__all__ = ["RESULT_FILE", "register"]

RESULT_FILE = "fixed_point.json"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``probe`` command group."""
    parser = subparsers.add_parser("probe", help="small experiments on a model (fixed-point)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="probe_command", metavar="EXPERIMENT", required=True)
    fixed = commands.add_parser("fixed-point", help="which target does a chunk trained alone reach?",
                                description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fixed.add_argument("--model", default="embedded", help="'embedded' or a local model directory")
    fixed.add_argument("--chunk", type=int, default=1, help="the chunk k trained alone (1-based)")
    fixed.add_argument("--chunks", type=int, default=4, help="number of chunks K")
    fixed.add_argument("--seeds", type=int, default=5, help="number of seeds N (>= 3 for a decision)")
    fixed.add_argument("--first-seed", type=int, default=0, help="the first seed")
    fixed.add_argument("--steps-max", type=int, default=400, help="step limit of each training")
    fixed.add_argument("--window", type=int, default=20, help="stopping window W (steps)")
    fixed.add_argument("--tolerance", type=float, default=1e-3,
                       help="stop when the best loss improved by less than this fraction over W steps")
    fixed.add_argument("--lr", type=float, default=1e-2, help="Adam learning rate")
    fixed.add_argument("--alpha", type=float, default=0.5, help="weight alpha of the task term, in (0, 1)")
    fixed.add_argument("--epsilon", type=float, default=0.1, help="label smoothing epsilon, in (0, 1)")
    fixed.add_argument("--n-positions", type=int, default=64, help="labelled positions in the fixed batch")
    fixed.add_argument("--lora-rank", type=int, default=8, help="LoRA rank of the adapters")
    fixed.add_argument("--data", default="embedded", help="'embedded' or a corpus path")
    fixed.add_argument("--text-field", default="text", help="field (JSON) or column (CSV, Parquet) of --data holding the text")
    fixed.add_argument("--seq-len", type=int, default=128, help="tokens per sequence of the held-out blocks")
    fixed.add_argument("--device", default="auto", help="auto (default; cuda when present), cpu, cuda, ...")
    fixed.add_argument("--dtype", default="float32", help="parameter dtype: float32 (default), float64, bfloat16 or float16")
    fixed.add_argument("--autocast", default=None, choices=("bfloat16", "float16"),
                       help="autocast dtype of the forward passes (GPU); default none")
    fixed.add_argument("--out", type=Path, required=True, metavar="DIR", help="output directory (new or empty)")
    fixed.set_defaults(func=run_fixed_point_command)


def _check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise CLIError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        raise CLIError(f"{out} is not empty; choose a new --out (nothing was overwritten)")


def run_fixed_point_command(args: argparse.Namespace) -> int:
    """Validate everything, run the seeds, write the result, print the outcome."""
    _check_out(args.out)
    from zerolock_theory.app.workflows.fixed_point import FixedPointSettings, run_fixed_point

    try:
        settings = FixedPointSettings(
            model=args.model, chunks=args.chunks, chunk=args.chunk, seeds=args.seeds, first_seed=args.first_seed,
            alpha=args.alpha, epsilon=args.epsilon, lr=args.lr, steps_max=args.steps_max, window=args.window,
            tolerance=args.tolerance, n_positions=args.n_positions, lora_rank=args.lora_rank, data=args.data,
            text_field=args.text_field, seq_len=args.seq_len,
            device=args.device, dtype=args.dtype, autocast=args.autocast,
        )
        from zerolock_theory.config import check_sources

        check_sources(settings.config(settings.first_seed))
    except ValueError as exc:
        raise CLIError(str(exc)) from exc

    def report(seed) -> None:
        sides = "  ".join(
            f"{r.direction} TV(m) {r.tv_m:.4f} TV(g) {r.tv_g:.4f} residual {r.residual:.4f} ({r.steps} steps"
            f"{'' if r.converged else ', limit'})" for r in (seed.forward, seed.reverse))
        print(f"seed {seed.seed}: contrast {seed.contrast:+.4f}  {sides}  {seed.seconds:.1f}s", flush=True)

    try:
        result = run_fixed_point(settings, progress=report)
    except ValueError as exc:
        raise CLIError(str(exc)) from exc
    args.out.mkdir(parents=True, exist_ok=True)
    from zerolock_theory.training.resume import write_text_atomic

    write_text_atomic(args.out / RESULT_FILE, result.to_json() + "\n")
    interval = "not testable" if result.contrast is None else str(result.contrast)
    print(f"chunk {result.chunk}: contrast {interval} over {result.counted} seeds "
          f"(label-blind, left out: {result.label_blind or 'none'}); "
          f"{result.converged} of {2 * len(result.seeds)} trainings converged")
    print(f"outcome: {result.outcome}  ({args.out / RESULT_FILE})")
    return 0
