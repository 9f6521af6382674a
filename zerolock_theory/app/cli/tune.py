"""``zerolock tune``: each method at its own best η_0 (one shared grid, chosen on a validation split).

Example::

    OMP_NUM_THREADS=1 zerolock tune --config tune_smollm2_cpu --out runs/tuned-smollm2

The recipe's ``[tune]`` table names the methods, the η_0 grid, the grid seeds and the seeds
added at each method's choice (docs/TUNED.md); ``--set`` overrides its training keys. Run it
again after an interruption: finished runs are skipped and a half-written one resumes.
On a machine with two cores, two shards over one directory use both (one thread each)::

    OMP_NUM_THREADS=1 zerolock tune --out runs/tuned-smollm2 --shard 0/2 &
    OMP_NUM_THREADS=1 zerolock tune --out runs/tuned-smollm2 --shard 1/2 &

``zerolock tune --out DIR --summary`` prints the table of a tune directory and writes its
figures (test CE against steps and seconds; every chunk's CE over the run) to DIR/figures.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zerolock_theory.app.cli import CLIError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("tune", help="each method at its own best eta_0, resumably", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="tune_smollm2_cpu", help="tune recipe (file or packaged name)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a training config key of the base (not a [tune] key)")
    parser.add_argument("--out", type=Path, required=True, help="tune directory (one run per sub-directory)")
    parser.add_argument("--shard", default="0/1", metavar="I/N",
                        help="run every N-th run of each phase from the I-th (N processes share one --out)")
    parser.add_argument("--dry-run", action="store_true", help="list the grid's runs in order without training")
    parser.add_argument("--summary", action="store_true",
                        help="print the tuned table of --out, write its figures to --out/figures, and exit")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from zerolock_theory.app.workflows.tune import grid_points, parse_shard, run_tune, split_recipe
    from zerolock_theory.config import read_recipe
    from zerolock_theory.config_overrides import apply_overrides

    try:
        if args.summary:
            from analyses.versus.tuned import summary_text
            from reports.tuned_figures import write_tuned_figures

            if not args.out.is_dir():
                raise CLIError(f"--out {args.out}: no such tune directory")
            print(summary_text(args.out))
            try:
                for path in write_tuned_figures(args.out):
                    print(f"figure: {path}")
            except ValueError as exc:
                print(f"(no figures yet: {exc})")
            return 0
        shard = parse_shard(args.shard)
        raw = read_recipe(args.config)
        base, spec = split_recipe(raw)
        raw = {**apply_overrides(base, args.overrides), "tune": raw.get("tune", {})}
        if args.dry_run:
            for point in grid_points(spec)[shard[0]::shard[1]]:
                print(point.name)
            return 0
        run_tune(raw, args.out, shard=shard)
    except (ValueError, RuntimeError) as exc:
        raise CLIError(str(exc)) from exc
    return 0
