"""``zerolock diagnose DIR``: why ZeroLock falls behind backprop, from a factorial of tune directories.

DIR holds one ``zerolock tune`` directory per control (the recipes in
``zerolock_theory/recipes/diagnosis/``; each control is recognised by its runs' method settings,
not by its directory's name). Prints the factorial table (each control at its own best η_0, test
CE, paired differences to backprop and to plain ZeroLock, Holm), the registered predictions with
their readings, and each mechanism's reading (docs/DIAGNOSIS.md). ``zerolock verify --reanalyze
--with DIR`` puts the same section into a suite's report. The alignment along a run, when DIR holds
it (``scripts/alignment.py --after-steps ... --json``): ``alignment.json`` for plain ZeroLock (every
chunk's cosine), ``alignment_<control>.json`` for another control (chunk 1's cosine per control).

    zerolock diagnose runs/diag-embedded
    zerolock diagnose runs/diag-embedded --json > factorial.json
    zerolock diagnose runs/diag-embedded --publish README.md   # README's block for this model
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zerolock_theory.app.cli import CLIError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``diagnose`` sub-command."""
    parser = subparsers.add_parser(
        "diagnose", help="why ZeroLock falls behind backprop: the factorial of method controls",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("factorial", type=Path, metavar="DIR", help="a directory of zerolock tune directories")
    parser.add_argument("--level", type=float, default=0.95, help="interval level (default 0.95)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--publish", type=Path, metavar="PAGE.md",
                        help="also write the compact table into PAGE.md: a new page, or the file's block for this "
                        "model (<!-- zerolock diagnose --publish MODEL: begin --> ... end -->, e.g. README.md)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analyses.versus.factorial import analyze_factorial, is_factorial_dir

    if not 0.5 <= args.level < 1:
        raise CLIError(f"--level must lie in [0.5, 1), got {args.level}")
    if not args.factorial.is_dir():
        raise CLIError(f"{args.factorial}: no such directory")
    if not is_factorial_dir(args.factorial):
        raise CLIError(f"{args.factorial}: holds no zerolock tune directory (each with tune.json)")
    if args.publish is not None and args.publish.is_dir():
        raise CLIError(f"--publish {args.publish}: a directory; give a file")
    try:
        result = analyze_factorial(args.factorial, args.level)
    except ValueError as exc:
        raise CLIError(str(exc)) from exc
    if not result.rows:
        raise CLIError(f"{args.factorial}: no control of the factorial has a finished grid")
    if args.publish is not None:
        from reports.diagnosis import publish

        command = f"zerolock diagnose {args.factorial.name} --publish {args.publish.name}"
        try:
            publish(result, args.publish, command)
        except ValueError as exc:
            raise CLIError(str(exc)) from exc
    if args.json:
        print(result.to_json())
    else:
        from reports.diagnosis import markdown

        print(markdown(result), end="")
    return 0
