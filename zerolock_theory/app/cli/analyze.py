"""``zerolock analyze``: analyse run directories, or fit Theorem 1's rate on any table.

Two forms, told apart by the first positional argument:

* ``zerolock analyze RUN_DIR... --out DIR`` — every analysis (``analyses.suite``), saved as one
  JSON per analysis plus ``analysis.json``; the verdicts are printed.
* ``zerolock analyze rate --table FILE --column NAME [--seed-column NAME] [--window W]`` —
  Theorem 1 (a), the fall of the column's level described, toward zero or onto a floor
  (``analyses.theorem1.rate.rate_from_table``): one series, or one per seed.
* ``zerolock analyze drift --table FILE --column DRIFT --lr-column LR [--seed-column NAME]
  [--descent-column NAME]`` — Theorem 1 (b), the proof's drift budget
  (``analyses.theorem1.drift_budget.drift_from_table``).

A run directory literally named ``rate`` or ``drift`` is analysed with ``./rate`` or ``./drift``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from zerolock_theory.app.cli import CLIError

RATE, DRIFT = "rate", "drift"
USAGE = (
    "zerolock analyze RUN_DIR [RUN_DIR ...] --out DIR [--overwrite] [--systems FILE] "
    "[--n-boot N] [--seed S] [--level L]\n"
    "       zerolock analyze rate --table FILE --column NAME [--step-column step] "
    "[--seed-column NAME] [--window W] [--min-horizon T] [--level L] [--json]\n"
    "       zerolock analyze drift --table FILE --column DRIFT --lr-column LR [--step-column step] "
    "[--seed-column NAME] [--descent-column NAME] [--min-horizon T] [--level L] [--json]\n"
    "       zerolock analyze RUN_DIR --from-store [--out DIR] [--overwrite]"
)
EPILOG = """\
forms:
  RUN_DIR...  analyse run directories (config.json + metrics.jsonl each); a directory
              holding only systems.json is read as the systems benchmark output.
  rate        Theorem 1 (a) on the per-step column NAME of FILE (.csv, .jsonl, .json or
              .parquet), two tests with seed-level t-intervals: the fit window (the
              last --window of the horizon, 0.95 by default) cut into four blocks of
              equal width in log T (per seed the fall over blocks 1-2 and 3-4, beta
              over blocks 3-4, b = beta_B - beta against the bound's own level, the
              bend of the decay), and the last half of the run in linear time (the
              fall over each tail from T/2, 5T/8, 3T/4, 7T/8 against the bound's own).
              Outcome: "falls toward zero at the bound's rate or faster", "falls, rate
              not distinguished from the bound's", "falls, slower than the bound",
              "flattens: a floor is not excluded" (printed with the T it starts from),
              "no decay" (the window's fall below 10% of its level) or "not testable"
              (fewer than 3 seeds: point estimates only). Descriptions of a bound
              with an unknown constant: never a refutation.
  drift       Theorem 1 (b), descriptive: per seed the slope s of log(D+_T / sum eta_t^2)
              on log T after a burn-in (D+_T = sum max(drift_t, 0)), then a seed
              t-interval. Outcome: "outgrows", "within" or "not testable": a trend over
              time, not the drift's order in the step (a warming-up second-order drift
              outgrows too; the suite decides the order at fixed iterates by step
              scaling). With --descent-column, the drift's share of the progress.
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
    (``zerolock_theory.readout_store.damaged_shards``: a cut footer anywhere in the store), then about the
    warnings the analysis raised (same one-line form; a shard already named is not repeated).

    The analyses read a store up to its last whole shard, so a damaged shard is never used;
    the warning says that the input is damaged. On an error nothing more is printed.
    """
    from zerolock_theory.readout_store import damaged_shards

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
    parser.add_argument("inputs", nargs="+", metavar="RUN_DIR", help="run directories, or 'rate' or 'drift'")
    parser.add_argument("--out", type=Path, metavar="DIR", help="output directory (run form)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace our earlier output in a non-empty --out (never a directory of yours)")
    parser.add_argument(
        "--systems", type=Path, metavar="FILE", help="systems.json of the systems benchmark"
    )
    add_bootstrap_options(parser)
    rate = parser.add_argument_group("rate and drift forms")
    rate.add_argument(
        "--table", type=Path, metavar="FILE", help="table file (.csv, .jsonl, .json, .parquet)"
    )
    rate.add_argument("--column", metavar="NAME", help="per-step column: G_t (rate) or drift_t (drift)")
    rate.add_argument("--window", type=float, default=None, metavar="W",
                      help="rate: fit window, the last W of the horizon (default 0.95)")
    rate.add_argument("--lr-column", metavar="NAME", help="drift: the step size eta_t column")
    rate.add_argument("--descent-column", metavar="NAME", help="drift: the descent_t column (optional)")
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
        help="shortest horizon accepted (default: MIN_HORIZON of analyses.theorem1.rate = 500, "
        "analyses.theorem1.drift_budget = 200)",
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
        if args.inputs[0] == DRIFT:
            return _drift(args)
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


def _table_form(args: argparse.Namespace, form: str):
    """Checks shared by the rate and drift forms; returns the table."""
    from analyses.io import read_table

    if len(args.inputs) > 1:
        raise CLIError(
            f"the {form} form takes no run directories (use ./{form} for a directory named {form})"
        )
    if args.table is None or args.column is None:
        raise CLIError(f"the {form} form needs --table FILE and --column NAME")
    if args.out is not None:
        raise CLIError(f"--out belongs to the run form; the {form} form prints its result")
    return read_table(args.table)


def _window(value: float | None) -> float:
    from analyses.theorem1.rate import WINDOW

    if value is None:
        return WINDOW
    if not 0.0 < value < 1.0:
        raise CLIError(f"--window must lie in (0, 1) (default {WINDOW}), got {value}")
    return value


def _rate(args: argparse.Namespace) -> int:
    from analyses.theorem1.rate import MIN_HORIZON, rate_from_table

    if args.lr_column is not None or args.descent_column is not None:
        raise CLIError("--lr-column and --descent-column belong to the drift form")
    window = _window(args.window)
    frame = _table_form(args, RATE)
    common = {"where": str(args.table), "level": args.level}
    rate = rate_from_table(frame, args.column, args.step_column, args.seed_column, window=window,
                           min_horizon=args.min_horizon or MIN_HORIZON, **common)
    if args.json:
        print(json.dumps({"rate": rate.to_cli()}, indent=2, allow_nan=False))
    else:
        print(_rate_line(rate))
    return 0


def _iv(data: dict) -> str:
    if data["estimate"] is None:
        return "undefined"
    if data["low"] is None:
        return f"{data['estimate']:.3g} (no interval)"
    return f"{data['estimate']:.3g} [{data['low']:.3g}, {data['high']:.3g}]"


def _rate_line(rate) -> str:
    cli = rate.to_cli()
    noise = "undefined" if cli["noise"] is None else f"{cli['noise']:.2g} x its mean level"
    phi = "undefined" if cli["phi"] is None else f"{cli['phi']:.2g}"
    return (f"{rate.label}: {rate.sentence} (reason {rate.reason}); fall over blocks 1-2 = "
            f"{_iv(cli['decline_early'])}, over blocks 3-4 = {_iv(cli['decline_late'])}; beta = {_iv(cli['beta'])}, "
            f"b = {_iv(cli['b'])}; bend = {_iv(cli['bend'])}; late fall minus the bound's over (T/2, T] = "
            f"{_iv(cli['late_excess'])}; window fall = {_iv(cli['window_fall'])}; noise {noise}, lag-1 "
            f"autocorrelation {phi}; window {rate.window:.3g}, horizon T = {rate.horizon}, {rate.seeds} seed(s)")


def _drift(args: argparse.Namespace) -> int:
    from analyses.theorem1.drift_budget import MIN_HORIZON, drift_from_table

    if args.window is not None:
        raise CLIError("--window belongs to the rate form")
    if args.lr_column is None:
        raise CLIError("the drift form needs --lr-column NAME (the step size eta_t)")
    frame = _table_form(args, DRIFT)
    budget = drift_from_table(frame, args.column, args.lr_column, args.step_column, args.seed_column,
                              args.descent_column, where=str(args.table), level=args.level,
                              min_horizon=args.min_horizon or MIN_HORIZON)
    cli = budget.to_cli()
    if args.json:
        print(json.dumps({"drift": cli}, indent=2, allow_nan=False))
    else:
        print(f"{budget.label}: {budget.sentence} (reason {budget.reason}); s = {_iv(cli['first_order'])} "
              f"(threshold {budget.threshold:g}; first order ~ {cli['s_first_order_reference']}), "
              f"share = {_iv(cli['share'])}, signed sum = {_iv(cli['signed'])}, "
              f"horizon T = {budget.horizon}, {budget.seeds} seed(s)")
    return 0


def _runs(args: argparse.Namespace) -> int:
    if any(x is not None for x in (args.table, args.column, args.seed_column, args.window, args.lr_column,
                                   args.descent_column)) or args.json:
        raise CLIError(
            "--table, --column, --seed-column, --window, --lr-column, --descent-column and --json "
            "belong to the rate form or the drift form: zerolock analyze rate|drift ..."
        )
    if args.out is None:
        raise CLIError("the run form needs --out DIR")
    out = check_out(args.out, args.overwrite)
    from analyses.suite import analyze_runs
    from reports.wording import verdict_lines

    with damaged_input_warnings("analyze", args.inputs):
        suite = analyze_runs(
            args.inputs, systems=args.systems, n_boot=args.n_boot, seed=args.seed, level=args.level
        )
    index = suite.save(out)
    print("\n".join(verdict_lines(suite.claims)))
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
