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

Several sources merge control by control (a control in two sources is an error): a factorial whose
later controls ran in a new directory is recorded, read and published as one.

    python3 scripts/reread_factorial.py --record docs/results/diagnosis/factorial_smollm2.json runs/more > all.json
    python3 scripts/reread_factorial.py all.json --publish README.md   # README's block for this model
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
from reports.diagnosis import markdown, publish  # noqa: E402


def _started(method: str, row: list, steps: int) -> TunedRun:
    lr, seed, validation, test, start = row
    nan = math.nan
    data = TunedData(None, None, nan if start is None else float(start), (), None, None, None, nan)
    return TunedRun(method, float(lr), int(seed), float(validation), float(test), steps, data)


def record(path: Path) -> dict:
    """Every run of every control under a factorial directory, in the ``runs`` form."""
    by_control = load_factorial(path)
    first = next((r for runs in by_control.values() for r in runs), None)
    if first is None:
        raise ValueError(f"{path}: holds no finished zerolock tune directory (a factorial directory holds one per control)")
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


def gather(sources: list[Path]) -> dict:
    """One record of several sources (factorial directories, or recorded files in the ``runs`` form),
    their controls merged; a ``ValueError`` when two hold the same control or differ in model, K or
    budget. A single recorded file is returned as it is (either form)."""
    if len(sources) == 1 and sources[0].is_file():
        return json.loads(sources[0].read_text())
    merged: dict = {}
    for source in sources:
        found = record(source) if source.is_dir() else json.loads(source.read_text())
        if "runs" not in found:
            raise ValueError(f"{source}: a record in the controls form reads alone")
        for key in ("model", "chunks", "steps"):
            if merged.setdefault(key, found[key]) != found[key]:
                raise ValueError(f"{source}: {key} {found[key]!r}, the sources before it {merged[key]!r}")
        runs = merged.setdefault("runs", {})
        for name, rows in found["runs"].items():
            if name in runs:
                raise ValueError(f"{source}: control {name!r} is also in an earlier source")
            runs[name] = rows
    return merged


def _print_record(found: dict, command: str) -> None:
    runs = found.pop("runs")
    head = json.dumps({"source": command, **{k: v for k, v in found.items() if k != "source"}}, indent=1)[:-2]
    cells = ",\n".join(f'  "{name}": [\n' + ",\n".join(f"   {json.dumps(row)}" for row in rows) + "\n  ]"
                        for name, rows in runs.items())
    print(f'{head},\n "runs": {{\n{cells}\n }}\n}}')


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sources", type=Path, nargs="+", metavar="SOURCE",
                    help="a JSON file of recorded numbers (see the module docstring), or factorial directories and "
                    "records in the runs form, merged control by control")
    ap.add_argument("--record", action="store_true", help="print the sources' runs as one JSON record")
    ap.add_argument("--publish", type=Path, metavar="PAGE.md",
                    help="also write the compact table into PAGE.md's block for this model, as zerolock diagnose "
                    "--publish does")
    args = ap.parse_args(argv)
    for source in args.sources:
        if not source.exists():
            print(f"error: {source}: no such file or directory", file=sys.stderr)
            return 2
    if args.publish is not None and args.publish.is_dir():
        print(f"error: --publish {args.publish}: a directory; give a file", file=sys.stderr)
        return 2
    try:
        recorded = gather(args.sources)
    except (ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    named = " ".join(str(s) for s in args.sources)
    if args.record:
        _print_record(recorded, f"scripts/reread_factorial.py --record {named}")
        return 0
    found = factorial(runs_of(recorded), model=recorded["model"], chunks=recorded["chunks"])
    if args.publish is not None:
        try:
            publish(found, args.publish, f"python3 scripts/reread_factorial.py {named} --publish {args.publish.name}")
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    print(markdown(found), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
