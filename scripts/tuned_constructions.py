"""Print the table "construction, truth, outcome" of the tuned comparison (docs/TUNED.md).

    python scripts/tuned_constructions.py

Every construction of ``analyses.versus.families`` runs through ``analyses.versus.tuned_versus``, the
code of the row.
"""

from __future__ import annotations

from analyses.versus.families import CONSTRUCTIONS
from analyses.versus.tuned_versus import tuned_versus


def main() -> None:
    print("| construction | truth | chosen eta_0 (forward, reverse, backprop) | outcome (forward; reverse) |")
    print("|---|---|---|---|")
    for name, (truth, build) in CONSTRUCTIONS.items():
        result = tuned_versus(build())
        chosen = ", ".join(f"{m.lr:g}" for m in result.methods.values())
        outcomes = "; ".join(f"{c.outcome} ({c.difference})" for c in result.comparisons.values())
        print(f"| {name} | {truth} | {chosen} | {outcomes} |")


if __name__ == "__main__":
    main()
