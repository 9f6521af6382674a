"""Calibration (not a test): Assumption 5's share rule at the suite's seeds and horizon.

Simulates groups of ``--seeds`` runs × ``--steps`` scaled steps with known answers and runs
them through the analysis itself (``analyses.scaling.seed_from_arrays`` →
``group_from_seeds``: classification of φ′ from φ(c) at the seven factors, counts, intervals,
outcome). A scaled step has φ(c) = c·φ′ + c²·b + c³·d (+ float-sized noise, 1e-9 of |φ(1)|);
φ′ > 0 with probability p_i in seed i, where p_i has mean p and standard deviation ``het``
across seeds (Beta), and the signs within a seed are a Markov chain with lag-1 correlation
``ac`` (steps are not independent). The random baseline is drawn the same way with p = ½.

Prints three tables:

1. the rule's outcome rates per scenario (the error rates: "fails systematically" when the
   update is no different from random is the false-systematic rate; "holds" when φ′ = 0);
2. coverage of the pooled-share interval (``analyses.shares.cluster_share_interval``) of p;
3. coverage of the paired difference interval of p − ½.

    python3 benchmarks/calibrate_a5.py --reps 1000
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np

from analyses.scaling import MIN_STEPS, group_from_seeds, seed_from_arrays
from analyses.shares import cluster_share_interval, paired_difference_interval

FACTORS = np.array([2.0**-i for i in range(7)])
OUTCOME_ORDER = ("holds", "fails, generically", "fails systematically", "not testable")


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


def _curves(rng: np.random.Generator, positive: np.ndarray | None, n: int) -> np.ndarray:
    """φ(c) [n steps, factors]; ``positive`` None means φ′ = 0."""
    b, d = 1e-3 * rng.normal(size=(n, 1)), 1e-3 * rng.normal(size=(n, 1))
    slope = np.zeros((n, 1))
    if positive is not None:
        slope = np.where(positive, 1.0, -1.0)[:, None] * 1e-3 * np.exp(rng.normal(size=(n, 1)))
    c = FACTORS[None, :]
    phi = slope * c + b * c**2 + d * c**3
    return phi + 1e-9 * np.abs(phi[:, :1]) * rng.normal(size=phi.shape)


def _group(rng, p: float | None, seeds: int, steps: int, het: float, ac: float):
    out = []
    shares = _seed_shares(rng, p or 0.0, het, seeds)
    for i in range(seeds):
        pos = None if p is None else _signs(rng, shares[i], steps, ac)
        phi = _curves(rng, pos, steps)
        phi_r = _curves(rng, _signs(rng, 0.5, steps, ac), steps)
        rho = np.maximum(phi, 0) / (FACTORS**2 * 1e-3)
        out.append(seed_from_arrays(f"s{i}", FACTORS, phi, rho, phi_r, min_steps=min(MIN_STEPS, steps)))
    return group_from_seeds(out, min_steps=min(MIN_STEPS, steps))


def outcome_table(rng, reps: int, seeds: int, steps: int) -> None:
    print(f"\n1. outcome rates, {seeds} seeds x {steps} scaled steps, {reps} groups each (random baseline p = 0.5)")
    print(f"{'scenario':44s} " + " ".join(f"{o:>20s}" for o in OUTCOME_ORDER))
    scenarios = [("phi' = 0 (bounded)", None, 0.0, 0.0), ("p = 0.5 (like random)", 0.5, 0.0, 0.0),
                 ("p = 0.5, het 0.15, ac 0.3", 0.5, 0.15, 0.3), ("p = 0.3 (below random)", 0.3, 0.0, 0.0),
                 ("p = 0.62", 0.62, 0.0, 0.0), ("p = 0.7", 0.7, 0.0, 0.0), ("p = 0.8", 0.8, 0.0, 0.0),
                 ("p = 0.8, het 0.15, ac 0.3", 0.8, 0.15, 0.3), ("p = 1.0 (systematic)", 1.0, 0.0, 0.0)]
    for name, p, het, ac in scenarios:
        counts = dict.fromkeys(OUTCOME_ORDER, 0)
        for _ in range(reps):
            counts[_group(rng, p, seeds, steps, het, ac).outcome] += 1
        print(f"{name:44s} " + " ".join(f"{counts[o] / reps:20.3f}" for o in OUTCOME_ORDER))


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
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    outcome_table(rng, args.reps, args.seeds, args.steps)
    coverage_tables(rng, args.reps, args.seeds, args.steps)


if __name__ == "__main__":
    main()
