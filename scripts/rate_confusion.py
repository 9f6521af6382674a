"""Print Theorem 1 (a)'s confusion tables: construction, truth, outcome shares (docs/THEOREM1.md).

    python scripts/rate_confusion.py                      # 200 groups per cell, noise 0.5 1 1.2 3
    python scripts/rate_confusion.py --reps 100 --noise 1 --power 1.2 2.4

Every construction of ``analyses.theorem1.families`` (``RATE_FAMILIES``, each with its truth
``RATE_TRUTH``) runs through ``analyses.theorem1.rate.describe_rate``, the code of the rate rows:
5 seeds, T = 1000, Gaussian noise of standard deviation k × the level's mean over the run (AR(1)
where the family says so). Cells are shares of the groups; **bold** cells state the truth
(``RATE_TRUE``), _italic_ ones contradict it (``RATE_WRONG``). Then the summary the issue asks
for (the exponential floors' share of the bound's words, 1/√T's share of a fall toward zero), and
the power (``analyses.theorem1.rate_power.rate_power``) at the noise levels of ``--power``, with
i.i.d. noise and with AR(1) noise of coefficient 0.9. Deterministic (``--seed``).
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

from analyses.theorem1.families import (
    FLOOR,
    RATE_FAMILIES,
    RATE_TRUE,
    RATE_TRUTH,
    RATE_WRONG,
    rate_series,
    states_floor,
)
from analyses.theorem1.rate import BOUND_WORDS, RATE_OUTCOMES, describe_rate
from analyses.theorem1.rate_power import rate_power

SHORT = {"falls toward zero at the bound's rate or faster": "toward zero, bound's rate or faster",
         "falls, rate not distinguished from the bound's": "falls, not distinguished",
         "falls, slower than the bound": "falls, slower", "flattens: a floor is not excluded": "flattens",
         "no decay": "no decay", "not testable": "not testable"}
COVERED = "falls + caveat"
"""A fall word on a floor family whose caveat starts at or before the family's floor start: it states the floor."""
SHORT[COVERED] = "falls, with a floor caveat at or before the floor"
COLUMNS = RATE_OUTCOMES + (COVERED,)
RAW = "raw: "
"""Prefix of the counts of the outcome words themselves, caveat or not (the issue's bar is on these)."""
FLOORS = ("1 + 16 exp(-T/100) (a floor)", "1 + 32 exp(-T/100) (a floor)", "1 + 4 exp(-T/150) (a floor)")


def outcomes(family: str, noise: float, reps: int, rng: np.random.Generator, seeds: int = 5,
             horizon: int = 1000) -> Counter:
    """How often each outcome is read over ``reps`` groups of ``seeds`` seeds (``COVERED`` for a fall word
    on a floor family whose caveat starts at or before the floor: ``analyses.theorem1.families.states_floor``)."""
    found = Counter()
    for _ in range(reps):
        d = describe_rate([rate_series(family, horizon, rng, noise) for _ in range(seeds)])
        covered = RATE_TRUTH[family] == FLOOR and d.floor_after is not None and states_floor(family, d)
        found[COVERED if covered else d.outcome] += 1
        found[RAW + d.outcome] += 1
    return found


def _cell(family: str, outcome: str, share: float) -> str:
    text = f"{share:.2f}"
    if outcome in RATE_TRUE[family] or (outcome == COVERED and RATE_TRUTH[family] == FLOOR):
        return f"**{text}**"
    return f"_{text}_" if outcome in RATE_WRONG[family] and share > 0 else text


def confusion(noise: float, reps: int, seed: int) -> tuple[str, dict[str, Counter]]:
    """The markdown table at one noise level, and the counts behind it."""
    rng = np.random.default_rng(seed)
    counts = {family: outcomes(family, noise, reps, rng) for family in RATE_FAMILIES}
    lines = [f"\nnoise {noise:g} x the mean level; 5 seeds; T = 1000; {reps} groups (**true**, _wrong_)\n",
             "| construction | truth | " + " | ".join(SHORT[o] for o in COLUMNS) + " |",
             "|---|---|" + "---|" * len(COLUMNS)]
    for family, found in counts.items():
        cells = [_cell(family, o, found[o] / reps) for o in COLUMNS]
        lines.append(f"| {family} | {RATE_TRUTH[family]} | " + " | ".join(cells) + " |")
    return "\n".join(lines), counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noise", type=float, nargs="+", default=[0.5, 1.0, 1.2, 3.0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--power", type=float, nargs="*", default=[1.0, 1.2, 2.4])
    args = parser.parse_args()
    summary = ["\n| noise | bound's words (caveat or not): " + " | ".join(FLOORS) + " | 1/sqrt(T) falls toward zero |",
               "|---|" + "---|" * (len(FLOORS) + 1)]
    for noise in args.noise:
        table, counts = confusion(noise, args.reps, args.seed)
        print(table)
        floors = [sum(counts[f][RAW + o] for o in BOUND_WORDS) / args.reps for f in FLOORS]
        toward = sum(counts["1/sqrt(T)"][RAW + o] for o in BOUND_WORDS) / args.reps
        summary.append(f"| {noise:g} | " + " | ".join(f"{x:.2f}" for x in floors) + f" | {toward:.2f} |")
    print("\n".join(summary))
    if args.power:
        print("\n| noise | AR(1) | 1/sqrt(T) decided correctly | the bound decided correctly |\n|---|---|---|---|")
        for noise in args.power:
            for phi in (0.0, 0.9):
                found = rate_power(noise, 5, 1000, reps=args.reps, seed=args.seed, phi=phi)
                print(f"| {noise:g} | {phi:g} | {found.correct['1/sqrt(T)']:.2f} | "
                      f"{found.correct['log(T+1)/sqrt(T) (the bound)']:.2f} |")


if __name__ == "__main__":
    main()
