"""``zerolock report``: figures, an HTML page and a Markdown page from runs or an analysis.

``zerolock report RUN_DIR... --out DIR`` analyses the runs first (saved under DIR/analysis);
``zerolock report ANALYSIS_DIR --out DIR`` reads a saved analysis (``zerolock analyze``
output, recognised by its ``analysis.json``). Writes DIR/report.html (self-contained),
DIR/report.md and DIR/figures/. A non-empty DIR is refused unless ``--overwrite`` and it holds
an earlier report (``--overwrite`` never writes into a directory of yours).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zerolock_theory.app.cli import CLIError
from zerolock_theory.app.cli.analyze import (
    add_bootstrap_options,
    check_bootstrap_options,
    check_inputs,
    check_out,
    damaged_input_warnings,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``report`` sub-command."""
    parser = subparsers.add_parser(
        "report",
        help="write the verdict report (HTML, Markdown, figures)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="RUN_DIR_OR_ANALYSIS",
        help="run directories, or one analysis directory (with analysis.json)",
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output directory")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace our earlier output in a non-empty --out (never a directory of yours)")
    parser.add_argument(
        "--systems", type=Path, metavar="FILE", help="systems.json (run directories only)"
    )
    add_bootstrap_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load or compute the analysis, then write the report."""
    check_bootstrap_options(args)
    check_inputs(args)
    from analyses.io import RunDataError  # lazy: ``zerolock --help`` must not import pandas
    from analyses.suite import INDEX, analyze_runs, load_suite
    from reports.page import write_report
    from reports.wording import verdict_lines

    inputs = [Path(p) for p in args.inputs]
    analyses_dirs = [p for p in inputs if (p / INDEX).is_file()]
    if analyses_dirs and len(inputs) > 1:
        raise CLIError("give either one analysis directory or run directories, not both")
    missing = [p for p in inputs if not p.exists()]
    if missing:
        raise CLIError(f"{missing[0]}: no such directory")
    out = check_out(args.out, args.overwrite, "report")
    try:
        if analyses_dirs:
            if args.systems is not None:
                raise CLIError("--systems applies to run directories; the analysis is already done")
            suite = load_suite(analyses_dirs[0])
        else:
            with damaged_input_warnings("report", inputs):
                suite = analyze_runs(
                    inputs, systems=args.systems, n_boot=args.n_boot, seed=args.seed, level=args.level
                )
            suite.save(out / "analysis")
    except RunDataError as exc:
        raise CLIError(str(exc)) from exc
    out.mkdir(parents=True, exist_ok=True)
    files = write_report(suite, out)
    print("\n".join(verdict_lines(suite.claims, measured=False)))
    print(f"report: {files.html} and {files.markdown}; {len(files.figures)} figure(s)")
    return 0
