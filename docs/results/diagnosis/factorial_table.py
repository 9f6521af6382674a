"""The embedded factorial's table (docs/DIAGNOSIS.md, Results 3) from a directory of tune directories.

    python3 docs/results/diagnosis/factorial_table.py OUT_DIR [OUT_DIR/factorial.log]

For each control's tune directory (``OUT_DIR/<name>``, run by ``run_embedded_factorial.sh``): the
η_0 chosen on the validation split (``analyses.versus.tuning.select``, as ``zerolock tune`` does),
the test CE at the budget at that η_0 for every seed run there, and the paired differences (the
same seeds) to backprop (``backprop_wide``) and to plain ZeroLock forward (``plain``), each a mean
with a 95% t-interval over the seeds. A control whose grid or confirmation seed is unfinished is listed as such.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from analyses.stats.seeds import seed_interval  # noqa: E402
from analyses.versus.tuning import load_tuned, select  # noqa: E402

ORDER = ["backprop_wide", "plain", "alpha_out", "frozen", "twin_half", "p0_uniform", "alpha_one", "twin_one"]
LABEL = {
    "backprop_wide": "backprop",
    "plain": "ZeroLock forward, α = ½",
    "alpha_out": "α = ½ but 1 on the output chunk (M1)",
    "frozen": "chunks 1…K−1 frozen, output α = 1 (M2, the detached floor)",
    "twin_half": "un-detached twin, α = ½ (M3)",
    "p0_uniform": "p_0 uniform (M4)",
    "alpha_one": "α = 1 on every chunk (M1/M2)",
    "twin_one": "un-detached twin, α = 1 (M3)",
}


def _iv(values: list[float]) -> str:
    iv = seed_interval(values, min_seeds=2)
    if iv is None:
        return f"{values[0]:.3f} (1 seed)" if values else "-"
    return f"{iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]"


def chosen_tests(path: Path) -> tuple[object, dict[int, float]] | None:
    runs = load_tuned(path) if path.is_dir() else []
    if not runs:
        return None
    method = runs[0].method
    try:
        sel = select(runs, method)
    except ValueError:
        return None
    tests = {r.seed: r.test for r in runs if r.lr == sel.lr}
    if not (path / "tune.json").is_file() or len(tests) < 3:  # the grid or the confirmation seed unfinished
        return None
    return sel, tests


def wall(log: Path) -> dict[str, int]:
    if not log.is_file():
        return {}
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"== (\w+) done rc=\d+ in (\d+) s", log.read_text())}


def main() -> None:
    out = Path(sys.argv[1])
    walls = wall(Path(sys.argv[2]) if len(sys.argv) > 2 else out / "factorial.log")
    table = {name: chosen_tests(out / name) for name in ORDER}
    ref_bp = table["backprop_wide"][1] if table["backprop_wide"] else {}
    ref_zl = table["plain"][1] if table["plain"] else {}
    print("| control | η_0 chosen (validation CE per η_0, seeds 0–1) | test CE at the budget | − backprop | "
          "− ZeroLock α = ½ | seeds | wall (s) |")
    print("|---|---|---|---|---|---|---|")
    for name in ORDER:
        got = table[name]
        if got is None:
            print(f"| {LABEL[name]} | not run or unfinished | | | | | |")
            continue
        sel, tests = got
        scores = " / ".join(f"{lr:g}: {'diverged' if s == float('inf') else f'{s:.3f}'}" for lr, s in sel.scores.items())
        edge = ", grid edge" if sel.on_boundary else ""
        seeds = sorted(tests)
        bp = [tests[s] - ref_bp[s] for s in seeds if s in ref_bp] if name != "backprop_wide" else []
        zl = [tests[s] - ref_zl[s] for s in seeds if s in ref_zl] if name != "plain" else []
        print(f"| {LABEL[name]} | **{sel.lr:g}**{edge} ({scores}) | {_iv([tests[s] for s in seeds])} | "
              f"{_iv(bp) if bp else '—'} | {_iv(zl) if zl else '—'} | {', '.join(map(str, seeds))} | "
              f"{walls.get(name, '')} |")


if __name__ == "__main__":
    main()
