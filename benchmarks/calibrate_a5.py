"""Calibration (not a test): Assumption 5's three statements and the drift's order, through the rows' code.

1. **Families with known answers** (``analyses.assumption5.families``): every family read by
   ``analyses.assumption5.scaling.group_scaling`` (the rows' own analysis, the drift's order included) at
   ``--seeds`` seeds × ``--steps`` scaled steps, ``--reps`` groups each. Prints, per family, the
   rates of each word of the row (ρ_t along the run), of the chance statement, of the uniform
   statement and of Theorem 1 (b)'s order, with the known answer beside.
2. **Coverage** of the pooled-share interval (``analyses.stats.shares.cluster_share_interval``) of
   p, with heterogeneous and autocorrelated seeds: φ′ > 0 with probability p_i in seed i (Beta
   around p, standard deviation ``het``), signs within a seed a Markov chain with lag-1
   correlation ``ac``.
3. **Coverage** of the paired difference interval (actual − random), descriptive now.

    python3 benchmarks/calibrate_a5.py --reps 200
"""

from __future__ import annotations

import argparse
import itertools
from collections import Counter

import numpy as np

from analyses.assumption5.families import FAMILIES, frame
from analyses.assumption5.scaling import group_scaling
from analyses.stats.shares import cluster_share_interval, paired_difference_interval


def _seed_shares(rng: np.random.Generator, p: float, het: float, seeds: int) -> np.ndarray:
    if het <= 0 or p in (0.0, 1.0):
        return np.full(seeds, p)
    sd = min(het, 0.5 * np.sqrt(p * (1 - p)))
    total = p * (1 - p) / sd**2 - 1
    return rng.beta(p * total, (1 - p) * total, size=seeds)


def _signs(rng: np.random.Generator, p: float, steps: int, ac: float) -> np.ndarray:
    """Bernoulli(p) indicators, lag-1 correlation ``ac`` (keep the last with probability ac)."""
    fresh = rng.random(steps) < p
    keep = rng.random(steps) < ac
    out = np.empty(steps, bool)
    out[0] = fresh[0]
    for t in range(1, steps):
        out[t] = out[t - 1] if keep[t] else fresh[t]
    return out


def _rates(counts: Counter, reps: int) -> str:
    return ", ".join(f"{word} {n / reps:.2f}" for word, n in counts.most_common())


def family_table(reps: int, seeds: int, steps: int) -> None:
    print(f"\n1. families, {seeds} seeds x {steps} scaled steps, {reps} groups each (rates of each word)")
    print("| family | row: rho_t along the run (truth) | more often than chance? (truth) | uniform in the step "
          "| Theorem 1 (b) order (truth) |")
    print("|---|---|---|---|---|")
    for name, family in FAMILIES.items():
        along, chance, uniform, order = Counter(), Counter(), Counter(), Counter()
        for rep in range(reps):
            runs = [(f"s{i}", frame(family, 100_000 + 1000 * rep + i, steps=steps)) for i in range(seeds)]
            group = group_scaling(runs, "implemented")
            along[group.outcome] += 1
            chance[group.chance] += 1
            uniform[group.uniform] += 1
            order[group.order.outcome] += 1
        print(f"| {name} | {_rates(along, reps)} ({family.along or '-'}) | {_rates(chance, reps)} "
              f"({family.chance or '-'}) | {_rates(uniform, reps)} | {_rates(order, reps)} ({family.order}) |",
              flush=True)


def coverage_tables(rng, reps: int, seeds: int, steps: int) -> None:
    print(f"\n2. coverage of the 95% pooled-share interval of p ({seeds} seeds x {steps} events)")
    print(f"{'p':>6s} {'het':>5s} {'ac':>5s} {'coverage':>9s} {'mean width':>11s}")
    for p, het, ac in itertools.product((0.02, 0.1, 0.3, 0.5, 0.8), (0.0, 0.1), (0.0, 0.3)):
        hit, width = 0, 0.0
        for _ in range(reps):
            shares = _seed_shares(rng, p, het, seeds)
            x = [int(_signs(rng, s, steps, ac).sum()) for s in shares]
            iv = cluster_share_interval(x, [steps] * seeds)
            hit += iv.low <= p <= iv.high
            width += iv.high - iv.low
        print(f"{p:6.2f} {het:5.2f} {ac:5.2f} {hit / reps:9.3f} {width / reps:11.3f}")
    print(f"\n3. coverage of the 95% paired difference interval of p - 0.5 ({seeds} seeds x {steps} pairs)")
    print(f"{'p':>6s} {'het':>5s} {'ac':>5s} {'coverage':>9s} {'mean width':>11s}")
    for p, het, ac in itertools.product((0.5, 0.7, 0.9), (0.0, 0.1), (0.0, 0.3)):
        hit, width = 0, 0.0
        for _ in range(reps):
            shares = _seed_shares(rng, p, het, seeds)
            a = [_signs(rng, s, steps, ac).astype(int) for s in shares]
            b = [_signs(rng, 0.5, steps, ac).astype(int) for _ in shares]
            iv = paired_difference_interval(a, b)
            hit += iv.low <= p - 0.5 <= iv.high
            width += iv.high - iv.low
        print(f"{p:6.2f} {het:5.2f} {ac:5.2f} {hit / reps:9.3f} {width / reps:11.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=31)
    parser.add_argument("--only", choices=("families", "coverage"), help="one part only")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.only != "coverage":
        family_table(args.reps, args.seeds, args.steps)
    if args.only != "families":
        coverage_tables(rng, args.reps, args.seeds, args.steps)


if __name__ == "__main__":
    main()
