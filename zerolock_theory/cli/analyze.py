"""``zerolock analyze``: analyse run directories, or fit Theorem 1's rate on any table.

Two forms, told apart by the first positional argument:

* ``zerolock analyze RUN_DIR... --out DIR`` — every analysis (``analyses.suite``), saved as one
  JSON per analysis plus ``analysis.json``; the verdicts are printed.
* ``zerolock analyze rate --table FILE --column NAME`` — the Theorem 1 fit of one per-step
  column (``analyses.convergence.rate_from_table``). A run directory literally named
  ``rate`` is analysed with ``./rate``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zerolock_theory.cli import CLIError

RATE = "rate"
USAGE = (
    "zerolock analyze RUN_DIR [RUN_DIR ...] --out DIR [--overwrite] [--systems FILE] "
    "[--n-boot N] [--seed S] [--level L]\n"
    "       zerolock analyze rate --table FILE --column NAME [--step-column step] "
    "[--t0 T] [--t-max T] [--n-boot N] [--seed S] [--json]"
)
EPILOG = """\
forms:
  RUN_DIR...  analyse run directories (config.json + metrics.jsonl each); a directory
              holding only systems.json is read as the systems benchmark output.
  rate        fit Abar_T = (1/T) sum_{t<T} G_t ~ c T^-beta on the column NAME of FILE
              (.csv, .jsonl, .json or .parquet); prints beta with its 95% interval.
"""


def add_bootstrap_options(parser: argparse.ArgumentParser) -> None:
    """``--n-boot``, ``--seed``, ``--level`` shared by analyze and report."""
    parser.add_argument(
        "--n-boot", type=int, default=1000, metavar="N", help="bootstrap replicates (default 1000)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="S", help="bootstrap seed (default 0)"
    )
    parser.add_argument(
        "--level", type=float, default=0.95, metavar="L", help="interval level (default 0.95)"
    )


def check_bootstrap_options(args: argparse.Namespace) -> None:
    if args.n_boot < 1:
        raise CLIError(f"--n-boot must be >= 1, got {args.n_boot}")
    if not 0.0 < args.level < 1.0:
        raise CLIError(f"--level must lie in (0, 1), got {args.level}")


def check_out(path: Path, overwrite: bool) -> Path:
    """Refuse a file, or a non-empty directory unless ``overwrite`` (files are then replaced).

    Creates nothing: callers create ``path`` only once there is something to write.
    """
    if path.exists() and not path.is_dir():
        raise CLIError(f"--out {path} exists and is not a directory")
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        raise CLIError(f"--out {path} is not empty; pass --overwrite to write into it")
    return path


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``analyze`` sub-command."""
    parser = subparsers.add_parser(
        "analyze",
        help="analyse run directories, or fit the convergence rate of a table column",
        description=__doc__,
        usage=USAGE,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("inputs", nargs="+", metavar="RUN_DIR", help="run directories, or 'rate'")
    parser.add_argument("--out", type=Path, metavar="DIR", help="output directory (run form)")
    parser.add_argument("--overwrite", action="store_true", help="write into a non-empty --out")
    parser.add_argument(
        "--systems", type=Path, metavar="FILE", help="systems.json of the systems benchmark"
    )
    add_bootstrap_options(parser)
    rate = parser.add_argument_group("rate form")
    rate.add_argument(
        "--table", type=Path, metavar="FILE", help="table file (.csv, .jsonl, .json, .parquet)"
    )
    rate.add_argument("--column", metavar="NAME", help="per-step column G_t to average and fit")
    rate.add_argument(
        "--step-column", default="step", metavar="NAME", help="step column (default: step)"
    )
    rate.add_argument(
        "--t0",
        type=int,
        metavar="T",
        help="first T of the fit window (default max(10, 10%% of T_max))",
    )
    rate.add_argument(
        "--t-max", type=int, metavar="T", help="last T of the fit window (default: last step + 1)"
    )
    rate.add_argument("--json", action="store_true", help="print the fit as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Dispatch on the form; ``RunDataError`` becomes a one-line ``CLIError``."""
    check_bootstrap_options(args)
    check_inputs(args)
    from analyses.io import RunDataError  # lazy: ``zerolock --help`` must not import pandas

    try:
        if args.inputs[0] == RATE:
            return _rate(args)
        return _runs(args)
    except RunDataError as exc:
        raise CLIError(str(exc)) from exc


def check_inputs(args: argparse.Namespace) -> None:
    """Refuse a run directory given twice and a fit window that starts before step 1."""
    seen: dict[Path, str] = {}
    for text in args.inputs:
        key = Path(text).resolve()
        if key in seen:
            raise CLIError(f"run directory {text} is given twice (as {seen[key]!r} and {text!r})")
        seen[key] = text
    for flag in ("t0", "t_max"):
        value = getattr(args, flag, None)
        if value is not None and value < 1:
            raise CLIError(f"--{flag.replace('_', '-')} must be >= 1, got {value}")
    if getattr(args, "t0", None) is not None and getattr(args, "t_max", None) is not None and args.t0 >= args.t_max:
        raise CLIError(f"--t0 {args.t0} must be below --t-max {args.t_max}")


def _rate(args: argparse.Namespace) -> int:
    from analyses.convergence import rate_from_table
    from analyses.io import read_table

    if len(args.inputs) > 1:
        raise CLIError(
            "the rate form takes no run directories (use ./rate for a directory named rate)"
        )
    if args.table is None or args.column is None:
        raise CLIError("the rate form needs --table FILE and --column NAME")
    if args.out is not None:
        raise CLIError("--out belongs to the run form; the rate form prints its result")
    frame = read_table(args.table)
    fit = rate_from_table(
        frame,
        args.column,
        args.step_column,
        where=str(args.table),
        t0=args.t0,
        t_max=args.t_max,
        n_boot=args.n_boot,
        seed=args.seed,
        level=args.level,
    )
    print(fit.to_json() if args.json else fit.summary())
    return 0


def _runs(args: argparse.Namespace) -> int:
    if args.table is not None or args.column is not None or args.json:
        raise CLIError(
            "--table, --column and --json belong to the rate form: zerolock analyze rate ..."
        )
    if args.out is None:
        raise CLIError("the run form needs --out DIR")
    out = check_out(args.out, args.overwrite)
    from analyses.suite import analyze_runs

    suite = analyze_runs(
        args.inputs, systems=args.systems, n_boot=args.n_boot, seed=args.seed, level=args.level
    )
    index = suite.save(out)
    for verdict in suite.claims:
        print(f"{verdict.verdict:>13}  {verdict.claim}: {verdict.figure}")
    print(f"{len(suite.results)} analyses written, {len(suite.skipped)} skipped; index: {index}")
    return 0
