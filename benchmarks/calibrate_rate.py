"""Benchmark (not a test): the confusion tables of Theorem 1's rules (docs/THEOREM1.md).

For each synthetic family of ``analyses.rate_families`` with a known answer, the share of
repetitions that each outcome gets, at the suite's seeds and horizon:

* (a) the rate description (``analyses.rate.describe_rate``), families ``RATE_FAMILIES``,
  at each horizon in ``--horizons`` and each noise level in ``--noise`` (the standard
  deviation of Ĝ_t's additive noise as a multiple of the family's mean level over the run;
  the model measured about 3, see docs/THEOREM1.md);
* (b) the drift budget (``analyses.drift_budget.drift_budget``), families ``DRIFT_FAMILIES``.

Deterministic (``--seed``). About 5 minutes on one idle core with the defaults.

    python3 benchmarks/calibrate_rate.py                      # 200 repetitions, 5 seeds
    python3 benchmarks/calibrate_rate.py --reps 50 --noise 1 --window 0.333
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

from analyses.drift_budget import DRIFT_OUTCOMES, drift_from_table
from analyses.rate import RATE_OUTCOMES, RateDescription, describe_rate, rate_outcome
from analyses.rate_families import (
    DRIFT_EXPECTED,
    DRIFT_FAMILIES,
    RATE_EXPECTED,
    RATE_FAMILIES,
    drift_table,
    rate_series,
)


def _table(title: str, outcomes: tuple[str, ...], rows: dict[str, Counter], expected: dict[str, str], reps: int) -> str:
    lines = [f"\n{title}\n", "| family (true outcome) | " + " | ".join(outcomes) + " |",
             "|---" * (len(outcomes) + 1) + "|"]
    for family, counts in rows.items():
        cells = []
        for outcome in outcomes:
            share = f"{counts[outcome] / reps:.2f}"
            cells.append(f"**{share}**" if outcome == expected[family] else share)
        lines.append(f"| {family} ({expected[family]}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _outcome(result: RateDescription, rule: str) -> str:
    if rule == "level":
        return result.outcome
    return rate_outcome(result.beta_run, result.b_run, result.horizon, result.seeds)[0]


def rate_tables(reps: int, seeds: int, horizons: list[int], noises: list[float], window: float,
                rng: np.random.Generator, rule: str = "level") -> None:
    """Print (a)'s confusion table for each horizon and noise level (``rule = "running"``: the
    same thresholds on the running-mean slopes β_run and b_run instead, for comparison)."""
    for noise in noises:
        for horizon in horizons:
            rows = {}
            for family in RATE_FAMILIES:
                rows[family] = Counter(_outcome(
                    describe_rate([rate_series(family, horizon, rng, noise) for _ in range(seeds)],
                                  window=window), rule) for _ in range(reps))
            print(_table(f"(a) rate ({rule} rule): {seeds} seeds, T = {horizon}, noise {noise:g} x mean level, "
                         f"window {window:.3g}, {reps} repetitions", RATE_OUTCOMES, rows, RATE_EXPECTED, reps),
                  flush=True)


def drift_tables(reps: int, seeds: int, horizons: list[int], rng: np.random.Generator) -> None:
    """Print (b)'s confusion table for each horizon."""
    for horizon in horizons:
        rows = {family: Counter(drift_from_table(drift_table(family, horizon, seeds, rng), "drift", "lr",
                                                 seed_column="seed").outcome for _ in range(reps))
                for family in DRIFT_FAMILIES}
        print(_table(f"(b) drift: {seeds} seeds, T = {horizon}, eta_t = 0.1/sqrt(t+1), {reps} repetitions",
                     DRIFT_OUTCOMES, rows, DRIFT_EXPECTED, reps), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--horizons", type=int, nargs="+", default=[1000, 2000])
    parser.add_argument("--noise", type=float, nargs="+", default=[0.5, 3.0])
    parser.add_argument("--window", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("rate", "drift"), default=None)
    parser.add_argument("--rule", choices=("level", "running"), default="level",
                        help="running: classify by the running-mean slopes instead (comparison only)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.only != "drift":
        rate_tables(args.reps, args.seeds, args.horizons, args.noise, args.window, rng, args.rule)
    if args.only != "rate":
        drift_tables(args.reps, args.seeds, args.horizons, rng)


if __name__ == "__main__":
    main()
