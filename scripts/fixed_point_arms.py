"""Print the table "construction, truth per arm, outcome per arm, share" of Lemma 2's fixed point
(docs/LEMMA2.md, row 4).

    python scripts/fixed_point_arms.py [--groups 20]

Every construction of ``analyses.lemma2.families`` (the catalogue, then the power cases) runs through
``analyses.lemma2.fixed_point.fixed_point_decision``, the code of the row, on ``--groups`` seeded
groups of 5 seeds. Per arm: the truth, the most frequent outcome and the share of groups that read
the truth; then the share whose row word is the truth, and the share where some arm reads a direction
the truth does not have.
"""

from __future__ import annotations

import argparse
from collections import Counter

from analyses.lemma2.families import CONSTRUCTIONS, POWER, SEEDS, Construction, decide


def _row(c: Construction, groups: int) -> str:
    arms: list[Counter[str]] = [Counter(), Counter()]
    row = wrong = 0
    for group in range(groups):
        found = decide(c, group)
        words = (found.forward_arm.outcome, found.reverse_arm.outcome)
        for counter, word in zip(arms, words, strict=True):
            counter[word] += 1
        row += found.outcome == c.row
        wrong += any(w in ("toward its own optimum", "toward the other's") and w != t
                     for w, t in zip(words, c.truth, strict=True))
    cells = []
    for counter, truth in zip(arms, c.truth, strict=True):
        common, _ = counter.most_common(1)[0]
        cells += [truth, common, f"{counter[truth] / groups:.0%}"]
    return (f"| {c.name} | {c.shape} | " + " | ".join(cells) +
            f" | {c.row} | {row / groups:.0%} | {wrong / groups:.0%} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=20, help="seeded groups per construction")
    args = parser.parse_args()
    print(f"{args.groups} groups of {SEEDS} seeds each.")
    for title, cases in (("The catalogue", CONSTRUCTIONS), ("Power cases (truth stated; the rule may miss them)", POWER)):
        print(f"\n{title}:\n")
        print("| construction | p_(k-1) | CE truth | CE outcome | CE share | reverse truth | reverse outcome | "
              "reverse share | row truth | row share | wrong direction |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for c in cases:
            print(_row(c, args.groups), flush=True)


if __name__ == "__main__":
    main()
