"""The calibration table of Theorem 1 (b)'s rule: does the drift at the step taken sum within Σ η_t²?

For every construction of ``analyses.assumption5.families`` with a registered truth
(``Family.budget``), ``--groups`` seeded groups of 5 seeds × 31 scaled steps (one every ``--every``
steps, the suite's design at 32) go through ``group_scaling`` and the registered row
``theorem1_proof_reverse``; the table gives the share of each outcome, the witness's and Assumption
5's. Run from the repository root: ``python3 scripts/drift_sum_table.py --groups 50``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's packages, not an installed one

from analyses.assumption5.families import FAMILIES, frame  # noqa: E402
from analyses.assumption5.scaling import StepScaling, group_scaling  # noqa: E402
from analyses.registry import ClaimInputs, claim  # noqa: E402

SEEDS, STEPS = 5, 31
SHORT = {"within Σ η_t² along the run": "within", "not within Σ η_t² along the run": "not within"}


def shares(name: str, groups: int, every: int) -> tuple[Counter, Counter, Counter]:
    """Counts of the row's outcome, the witness's and Assumption 5's over ``groups`` seeded groups."""
    row, witness, a5 = Counter(), Counter(), Counter()
    for rep in range(groups):
        runs = [(f"s{i}", frame(FAMILIES[name], 1000 * rep + i, steps=STEPS, every=every)) for i in range(SEEDS)]
        group = group_scaling(runs, "paper", group="synthetic", trained="reverse")
        verdict = claim("theorem1_proof_reverse").decide(
            ClaimInputs({"scaling_paper": StepScaling("paper", [group], [])}, {}))
        row[SHORT.get(verdict.outcome, verdict.outcome)] += 1
        witness[group.drift_sum.witness_outcome] += 1
        a5[group.outcome] += 1
    return row, witness, a5


def _cell(counts: Counter, groups: int) -> str:
    return ", ".join(f"{k} {v / groups:.0%}" for k, v in counts.most_common())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--every", type=int, default=32)
    args = parser.parse_args()
    print(f"{args.groups} groups of {SEEDS} seeds x {STEPS} scaled steps, one every {args.every} steps\n")
    print("| construction | truth | row: outcome shares | true outcome | witness (drift at c = 1) | Assumption 5 |")
    print("|---|---|---|---|---|---|")
    for name, family in FAMILIES.items():
        if family.budget is None:
            continue
        row, witness, a5 = shares(name, args.groups, args.every)
        rate = row[family.budget] / args.groups
        print(f"| {name} | {family.budget} | {_cell(row, args.groups)} | {rate:.0%} | "
              f"{_cell(witness, args.groups)} | {_cell(a5, args.groups)} |")


if __name__ == "__main__":
    main()
