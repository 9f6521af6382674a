"""``zerolock analyze``: analyse run directories, or fit Theorem 1's rate on any table.

Two forms, told apart by the first positional argument:

* ``zerolock analyze RUN_DIR... --out DIR`` — every analysis (``analyses.suite``), saved as one
  JSON per analysis plus ``analysis.json``; the verdicts are printed.
* ``zerolock analyze rate --table FILE --column NAME [--seed-column NAME]`` — Theorem 1's
  bound test on one per-step column (``analyses.convergence.bound_from_table``): one series,
  or one per seed. A run directory literally named ``rate`` is analysed with ``./rate``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from zerolock_theory.cli import CLIError

RATE = "rate"
USAGE = (
    "zerolock analyze RUN_DIR [RUN_DIR ...] --out DIR [--overwrite] [--systems FILE] "
    "[--n-boot N] [--seed S] [--level L]\n"
    "       zerolock analyze rate --table FILE --column NAME [--step-column step] "
    "[--seed-column NAME] [--min-horizon T] [--level L] [--json]"
)
EPILOG = """\
forms:
  RUN_DIR...  analyse run directories (config.json + metrics.jsonl each); a directory
              holding only systems.json is read as the systems benchmark output.
  rate        Theorem 1's bound test on the per-step column NAME of FILE (.csv, .jsonl,
              .json or .parquet): B_T = Abar_T sqrt(T)/log(T+1), slope b of log B_T on
              log T over the last half, per seed, then a seed-level t-interval. Verdict:
              consistent, not consistent (b interval above 0) or not testable (horizon
              below --min-horizon, fewer than 3 seeds, too few points with Abar_T > 0).
              beta of Abar_T ~ c T^-beta is printed as a descriptive figure.
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


def _our_files(kind: str) -> tuple[str, ...]:
    """Files that mark a directory as one of our ``kind`` outputs (any one of them)."""
    from analyses.suite_result import INDEX

    return {"analysis": (INDEX,), "report": ("report.html", "report.md", f"analysis/{INDEX}"),
            "recomputed": ("recomputed.jsonl",)}[kind]


def check_out(path: Path, overwrite: bool, kind: str = "analysis") -> Path:
    """Refuse a file, or a non-empty directory unless ``overwrite`` and it holds our own ``kind``
    output (``analysis.json`` for an analysis, ``report.html``/``report.md`` for a report,
    ``recomputed.jsonl`` for ``--from-store``): ``--overwrite`` replaces only our own files.

    Creates nothing: callers create ``path`` only once there is something to write.
    """
    if path.exists() and not path.is_dir():
        raise CLIError(f"--out {path} exists and is not a directory")
    if path.is_dir() and any(path.iterdir()):
        if not overwrite:
            raise CLIError(f"--out {path} is not empty; pass --overwrite to write into it")
        files = _our_files(kind)
        if not any((path / name).is_file() for name in files):
            raise CLIError(f"--out {path} is not empty and holds no {kind} of ours ({' or '.join(files)} "
                           "missing); --overwrite only replaces our own outputs, nothing was written")
    return path


@contextlib.contextmanager
def damaged_input_warnings(command: str, inputs: Sequence[str | Path]) -> Iterator[None]:
    """Warn on stderr, one line each, about every damaged readout shard of the input runs
    (``probes.store.damaged_shards``: a cut footer anywhere in the store), then about the
    warnings the analysis raised (same one-line form; a shard already named is not repeated).

    The analyses read a store up to its last whole shard, so a damaged shard is never used;
    the warning says that the input is damaged. On an error nothing more is printed.
    """
    from probes.store import damaged_shards

    named: list[Path] = []
    for run in inputs:
        store = Path(run) / "readouts"
        if store.is_dir():
            for file, reason in damaged_shards(store):
                named.append(file)
                print(f"zerolock {command}: warning: {file}: damaged readout shard, {reason}; "
                      "the analyses do not use it", file=sys.stderr)
    with warnings.catch_warnings(record=True) as caught:  # the filters in force still apply
        yield
    shown: set[str] = set()
    for item in caught:
        text = " ".join(str(item.message).split())
        if text in shown or any(str(f.parent) in text and f.name in text for f in named):
            continue
        shown.add(text)
        print(f"zerolock {command}: warning: {text}", file=sys.stderr)


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
    parser.add_argument("--overwrite", action="store_true",
                        help="replace our earlier output in a non-empty --out (never a directory of yours)")
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
        "--seed-column", metavar="NAME", help="column naming the seed: one series per value"
    )
    rate.add_argument(
        "--min-horizon",
        type=int,
        default=None,
        metavar="T",
        help="shortest horizon the bound test accepts (default: analyses.convergence.MIN_HORIZON = 500)",
    )
    rate.add_argument("--json", action="store_true", help="print the fit as JSON")
    parser.add_argument(
        "--from-store", action="store_true",
        help="recompute the minimizer and stability metrics of RUN_DIR from its readout store "
        "and compare them with the logged ones (--out DIR also writes recomputed.jsonl)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Dispatch on the form; ``RunDataError`` becomes a one-line ``CLIError``."""
    check_bootstrap_options(args)
    check_inputs(args)
    from analyses.io import RunDataError  # lazy: ``zerolock --help`` must not import pandas

    try:
        if args.inputs[0] == RATE:
            return _rate(args)
        if args.from_store:
            return _from_store(args)
        return _runs(args)
    except RunDataError as exc:
        raise CLIError(str(exc)) from exc


def check_inputs(args: argparse.Namespace) -> None:
    """Refuse a run directory given twice and a minimum horizon below 1."""
    seen: dict[Path, str] = {}
    for text in args.inputs:
        key = Path(text).resolve()
        if key in seen:
            raise CLIError(f"run directory {text} is given twice (as {seen[key]!r} and {text!r})")
        seen[key] = text
    value = getattr(args, "min_horizon", None)
    if value is not None and value < 1:
        raise CLIError(f"--min-horizon must be >= 1, got {value}")


def _rate(args: argparse.Namespace) -> int:
    from analyses.convergence import MIN_HORIZON, bound_from_table
    from analyses.io import read_table
    from reports.findings import bound_reason, bound_summary

    if len(args.inputs) > 1:
        raise CLIError(
            "the rate form takes no run directories (use ./rate for a directory named rate)"
        )
    if args.table is None or args.column is None:
        raise CLIError("the rate form needs --table FILE and --column NAME")
    if args.out is not None:
        raise CLIError("--out belongs to the run form; the rate form prints its result")
    if args.min_horizon is None:
        args.min_horizon = MIN_HORIZON
    frame = read_table(args.table)
    test = bound_from_table(
        frame,
        args.column,
        args.step_column,
        args.seed_column,
        where=str(args.table),
        level=args.level,
        min_horizon=args.min_horizon,
    )
    if args.json:
        out = test.to_cli()
        out["bound"]["reason"] = bound_reason(test.figures())
        print(json.dumps(out, indent=2, allow_nan=False))
    else:
        print(bound_summary(test.figures()))
    return 0


def _runs(args: argparse.Namespace) -> int:
    if args.table is not None or args.column is not None or args.json or args.seed_column:
        raise CLIError(
            "--table, --column, --seed-column and --json belong to the rate form: "
            "zerolock analyze rate ..."
        )
    if args.out is None:
        raise CLIError("the run form needs --out DIR")
    out = check_out(args.out, args.overwrite)
    from analyses.suite import analyze_runs
    from reports.wording import figure

    with damaged_input_warnings("analyze", args.inputs):
        suite = analyze_runs(
            args.inputs, systems=args.systems, n_boot=args.n_boot, seed=args.seed, level=args.level
        )
    index = suite.save(out)
    for verdict in suite.claims:
        print(f"{verdict.verdict:>13}  {verdict.claim}: {figure(verdict)}")
    print(f"{len(suite.results)} analyses written, {len(suite.skipped)} skipped; index: {index}")
    return 0


def _from_store(args: argparse.Namespace) -> int:
    """``--from-store RUN_DIR``: offline recomputation from the readout store, compared with the log."""
    import json

    from probes.offline import compare, recompute
    from zerolock_theory.jsonio import read_records

    if len(args.inputs) != 1:
        raise CLIError("--from-store takes one run directory")
    run_dir = Path(args.inputs[0])
    try:
        records = recompute(run_dir)
    except (ValueError, OSError) as exc:
        raise CLIError(str(exc)) from exc
    metrics = run_dir / "metrics.jsonl"
    worst = compare(records, read_records(metrics)) if metrics.is_file() else {}
    if args.out is not None:
        out = check_out(args.out, args.overwrite, "recomputed")
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "recomputed.jsonl", "w", encoding="utf-8") as fh:
            for record in records:
                fh.write(json.dumps({k: str(v) if isinstance(v, float) and v != v else v for k, v in record.items()}) + "\n")
    largest = max(worst.values(), default=0.0)
    print(f"recomputed {len(records)} steps from {run_dir / 'readouts'}: {len(worst)} logged keys compared, "
          f"largest relative difference {largest:.3g}")
    for key, diff in sorted(worst.items(), key=lambda kv: -kv[1])[:5]:
        if diff > 0:
            print(f"  {diff:.3g}  {key}")
    return 0
