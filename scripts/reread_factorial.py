"""Read a factorial again from its recorded numbers, through ``analyses.versus.factorial.factorial``.

For a factorial whose run directories are gone, its recorded numbers rebuilt as tuned runs and read
by the same function as ``zerolock diagnose``; prints the Markdown section. Two forms of record:

* ``controls``: the validation CE of every η_0 (mean over the grid seeds) and the test CE per seed
  at each control's chosen η_0, as ``docs/results/diagnosis/factorial_embedded.md`` prints them (the
  embedded factorial of docs/DIAGNOSIS.md, section 3);
* ``runs``: every run of every control, ``[η_0, seed, validation CE, test CE, test CE at ω⁰]``, as
  ``--record DIR`` writes it from a factorial directory (SmolLM2's, section 4b), so that backprop's
  stable η_0 can be read too.

    python3 scripts/reread_factorial.py docs/results/diagnosis/factorial_embedded.json
    python3 scripts/reread_factorial.py --record runs/diag-smollm2 > docs/results/diagnosis/factorial_smollm2.json
    python3 scripts/reread_factorial.py docs/results/diagnosis/factorial_smollm2.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analyses.versus.data import TunedData  # noqa: E402
from analyses.versus.factorial import _config, factorial, load_factorial  # noqa: E402
from analyses.versus.tuning import TunedRun  # noqa: E402
from reports.diagnosis import markdown  # noqa: E402


def _started(method: str, row: list, steps: int) -> TunedRun:
    lr, seed, validation, test, start = row
    nan = math.nan
    data = TunedData(None, None, nan if start is None else float(start), (), None, None, None, nan)
    return TunedRun(method, float(lr), int(seed), float(validation), float(test), steps, data)


def record(path: Path) -> dict:
    """Every run of every control under a factorial directory, in the ``runs`` form."""
    by_control = load_factorial(path)
    first = next(r for runs in by_control.values() for r in runs)
    config = _config(first)
    return {"source": f"scripts/reread_factorial.py --record {path}", "model": config["model"]["path"],
            "chunks": int(config["model"]["chunks"]), "steps": int(first.steps),
            "runs": {name: [[r.lr, r.seed, r.validation, r.test, r.data.test_initial if r.data else None]
                            for r in sorted(runs, key=lambda r: (r.lr, r.seed))]
                     for name, runs in by_control.items()}}


def runs_of(recorded: dict) -> dict[str, list[TunedRun]]:
    """Each control's runs: in the ``runs`` form as recorded; in the ``controls`` form the grid seeds
    at every η_0 (validation = the recorded mean) and every recorded seed's test CE at the chosen η_0."""
    if "runs" in recorded:
        return {name: [_started("backprop" if name == "backprop" else "zerolock-forward", row, recorded["steps"])
                       for row in rows] for name, rows in recorded["runs"].items()}
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
    ap.add_argument("--record", action="store_true", help="RECORDED is a factorial directory: print its runs as JSON")
    args = ap.parse_args(argv)
    if args.record:
        if not args.recorded.is_dir():
            print(f"error: {args.recorded}: not a directory", file=sys.stderr)
            return 2
        found = record(args.recorded)
        runs = found.pop("runs")
        head = json.dumps(found, indent=1)[:-2]
        cells = ",\n".join(f'  "{name}": [\n' + ",\n".join(f"   {json.dumps(row)}" for row in rows) + "\n  ]"
                            for name, rows in runs.items())
        print(f'{head},\n "runs": {{\n{cells}\n }}\n}}')
        return 0
    if not args.recorded.is_file():
        print(f"error: {args.recorded}: no such file", file=sys.stderr)
        return 2
    recorded = json.loads(args.recorded.read_text())
    found = factorial(runs_of(recorded), model=recorded["model"], chunks=recorded["chunks"])
    print(markdown(found), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
