"""Read a factorial again from its recorded numbers, through ``analyses.versus.factorial.factorial``.

For a factorial whose run directories are gone (the embedded one of docs/DIAGNOSIS.md, section 3):
the recorded validation CE of every η_0 (mean over the grid seeds) and the test CE per seed at each
control's chosen η_0, as ``docs/results/diagnosis/factorial_embedded.md`` prints them, rebuilt as
tuned runs and read by the same function as ``zerolock diagnose``. Prints the Markdown section.

    python3 scripts/reread_factorial.py docs/results/diagnosis/factorial_embedded.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analyses.versus.factorial import factorial  # noqa: E402
from analyses.versus.tuning import TunedRun  # noqa: E402
from reports.diagnosis import markdown  # noqa: E402


def runs_of(recorded: dict) -> dict[str, list[TunedRun]]:
    """Each control's runs: the grid seeds at every η_0 (validation = the recorded mean) and every
    recorded seed's test CE at the chosen η_0."""
    out = {}
    for name, cell in recorded["controls"].items():
        method = "backprop" if name == "backprop" else "zerolock-forward"
        chosen = float(cell["chosen"])
        runs = [TunedRun(method, float(lr), seed, float(v), math.nan, recorded["steps"])
                for lr, v in cell["validation"].items() if float(lr) != chosen for seed in recorded["grid_seeds"]]
        runs += [TunedRun(method, chosen, int(seed), float(cell["validation"][str(cell["chosen"])]), float(test),
                          recorded["steps"]) for seed, test in cell["test"].items()]
        out[name] = runs
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recorded", type=Path, help="a JSON file of recorded numbers (see the module docstring)")
    args = ap.parse_args(argv)
    if not args.recorded.is_file():
        print(f"error: {args.recorded}: no such file", file=sys.stderr)
        return 2
    recorded = json.loads(args.recorded.read_text())
    found = factorial(runs_of(recorded), model=recorded["model"], chunks=recorded["chunks"])
    print(markdown(found), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
