"""Benchmark (not a test): the confusion tables of Theorem 1's rules (docs/THEOREM1.md).

For each synthetic family of ``analyses.theorem1.families`` with a known answer, the share of
repetitions that each outcome gets, at the suite's seeds and horizon:

* (a) the rate description (``analyses.theorem1.rate.describe_rate``, the rule of the rate rows), families
  ``RATE_FAMILIES``, at each noise level in ``--noise`` (the standard deviation of Ĝ_t's additive
  noise as a multiple of the family's mean level over the run; ``analyses.theorem1.rate.noise_ratio`` measures
  it on a run), then a summary: the largest share of wrong decay words over the plateau families
  and the share of 1/√T and of the bound decided correctly, per noise level and seed count;
* (b) the drift budget (``analyses.theorem1.drift_budget.drift_budget``), families ``DRIFT_FAMILIES``.

Deterministic (``--seed``). About 2 minutes for (a) on one idle core with the defaults.

    python3 benchmarks/calibrate_rate.py --only rate                 # 200 repetitions, 5 seeds
    python3 benchmarks/calibrate_rate.py --only rate --noise 3.2 --seeds 5 10 20 --reps 100
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

from analyses.theorem1.drift_budget import DRIFT_OUTCOMES, drift_from_table
from analyses.theorem1.families import (
    DRIFT_EXPECTED,
    DRIFT_FAMILIES,
    PLATEAU_FAMILIES,
    RATE_FAMILIES,
    RATE_TRUE,
    RATE_WRONG,
    drift_table,
    rate_series,
)
from analyses.theorem1.rate import DECAYS, RATE_OUTCOMES, describe_rate

CORRECT = ("1/sqrt(T)", "log(T+1)/sqrt(T) (the bound)")


def _table(title: str, outcomes: tuple[str, ...], rows: dict[str, Counter], expected: dict[str, tuple[str, ...]],
           reps: int, wrong: dict[str, tuple[str, ...]] | None = None) -> str:
    """Markdown: a row per family, a column per outcome; **true** cells bold, _wrong_ cells italic."""
    lines = [f"\n{title}\n", "| family | " + " | ".join(outcomes) + " |", "|---" * (len(outcomes) + 1) + "|"]
    for family, counts in rows.items():
        cells = []
        for outcome in outcomes:
            share = f"{counts[outcome] / reps:.2f}"
            if outcome in expected[family]:
                share = f"**{share}**"
            elif wrong is not None and outcome in wrong[family] and counts[outcome]:
                share = f"_{share}_"
            cells.append(share)
        lines.append(f"| {family} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def confusion(family: str, noise: float, seeds: int, horizon: int, reps: int, rng: np.random.Generator,
              phi: float = 0.0) -> Counter:
    """Outcome counts of ``describe_rate`` over ``reps`` groups of ``seeds`` noisy series of ``family``."""
    return Counter(describe_rate([rate_series(family, horizon, rng, noise, phi) for _ in range(seeds)]).outcome
                   for _ in range(reps))


def rate_tables(reps: int, seeds_list: list[int], horizon: int, noises: list[float], rng: np.random.Generator,
                phi: float = 0.0) -> None:
    """Print (a)'s confusion table for each noise level and seed count, then the summary."""
    summary = []
    for seeds in seeds_list:
        for noise in noises:
            rows = {family: confusion(family, noise, seeds, horizon, reps, rng, phi) for family in RATE_FAMILIES}
            print(_table(f"(a) rate: {seeds} seeds, T = {horizon}, noise {noise:g} x mean level, AR(1) {phi:g}, "
                         f"{reps} repetitions (**true**, _wrong_)", RATE_OUTCOMES, rows, RATE_TRUE, reps, RATE_WRONG),
                  flush=True)
            worst = max(sum(rows[f][o] for o in RATE_WRONG[f]) / reps for f in PLATEAU_FAMILIES)
            right = [sum(rows[f][o] for o in RATE_TRUE[f]) / reps for f in CORRECT]
            decays = [sum(rows[f][o] for o in DECAYS) / reps for f in CORRECT]
            summary.append(f"| {seeds} | {noise:g} | {worst:.2f} | {right[0]:.2f} | {right[1]:.2f} | "
                           f"{decays[0]:.2f} |")
    print(f"\n(a) summary: T = {horizon}, {reps} repetitions\n")
    print("| seeds | noise | worst wrong decay word, plateau families | 1/sqrt(T) decided correctly | "
          "bound decided correctly | 1/sqrt(T) reads a decay |")
    print("|---|---|---|---|---|---|")
    print("\n".join(summary), flush=True)


def drift_tables(reps: int, seeds: int, horizons: list[int], rng: np.random.Generator) -> None:
    """Print (b)'s confusion table for each horizon."""
    for horizon in horizons:
        rows = {family: Counter(drift_from_table(drift_table(family, horizon, seeds, rng), "drift", "lr",
                                                 seed_column="seed").outcome for _ in range(reps))
                for family in DRIFT_FAMILIES}
        print(_table(f"(b) drift: {seeds} seeds, T = {horizon}, eta_t = 0.1/sqrt(t+1), {reps} repetitions",
                     DRIFT_OUTCOMES, rows, {k: (v,) for k, v in DRIFT_EXPECTED.items()}, reps), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[5])
    parser.add_argument("--horizon", type=int, default=1000)
    parser.add_argument("--horizons", type=int, nargs="+", default=[1000, 2000], help="(b) only")
    parser.add_argument("--noise", type=float, nargs="+", default=[0.5, 1.0, 3.0])
    parser.add_argument("--phi", type=float, default=0.0, help="AR(1) coefficient of the noise")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("rate", "drift"), default=None)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.only != "drift":
        rate_tables(args.reps, args.seeds, args.horizon, args.noise, rng, args.phi)
    if args.only != "rate":
        drift_tables(args.reps, args.seeds[0], args.horizons, rng)


if __name__ == "__main__":
    main()
