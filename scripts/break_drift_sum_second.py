"""Hostile referee against Theorem 1 (b) along the run (the ``drift_sum`` rule): the second, out-of-sample attack.

    OMP_NUM_THREADS=1 python3 scripts/break_drift_sum_second.py              # 40 groups per construction
    OMP_NUM_THREADS=1 python3 scripts/break_drift_sum_second.py --groups 10

The first attack (``scripts/break_drift_sum.py``) was known when the rule was tuned; none of the
constructions here were. The design is the first attack's: 5 synthetic seeds per group, 31 scaled
steps unless said, drift(c) = c·a_t + c²·b_t (b_t = η_t²·(0.1 + ξ_t)) and φ(c) = drift(c) + c³·d_t
at the factors c = 1, ½, …, 1/64 with float noise, written as the ``scaling`` probe's keys; each
seed goes through ``seed_drift_sum_from_frame`` and each group through ``drift_sum``. New here: the
step-size schedule (η_t = 0.1/√(t+1) unless said), steps whose limit is unresolved (every drift(c)
and φ(c) NaN there) and the constructions below. The scoring is the first attack's: broken when the
rule reads the opposite of the truth in any group, or an outcome outside the accepted ones in more
than 5% of the groups.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's packages, not an installed one

from analyses.assumption5.drift_sum import NOT_WITHIN, WITHIN  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import break_drift_sum as first  # noqa: E402  (the first attack: its probe rows, seeding and scoring)

NT, ND = first.NT, first.ND
Coef = Callable[[np.ndarray, np.ndarray, np.random.Generator, int], np.ndarray]
Schedule = Callable[[np.ndarray], np.ndarray]
Mask = Callable[[np.ndarray, np.random.Generator], np.ndarray]


def sqrt_decay(t: np.ndarray) -> np.ndarray:
    return 0.1 / np.sqrt(t + 1.0)


def constant_then_decay(t: np.ndarray) -> np.ndarray:
    """η_t = 0.05 for the first 10 steps, then 0.05·√(10/(t+1)) (continuous at t = 9)."""
    return 0.05 * np.minimum(1.0, np.sqrt(10.0 / (t + 1.0)))


def inverse_t(t: np.ndarray) -> np.ndarray:
    return 0.1 / (t + 1.0)


def no_mask(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.zeros(t.size, bool)


def random_share(share: float) -> Mask:
    return lambda t, rng: rng.uniform(size=t.size) < share


def last_third(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return t >= np.ceil(2 * t.size / 3)


@dataclass(frozen=True)
class Construction(first.Case):
    """The first attack's ``Case`` with a step-size schedule and steps whose limit is unresolved."""

    eta: Schedule = sqrt_decay
    unresolved: Mask = no_mask  # steps whose limit is unresolved (every drift(c), φ(c) NaN)


def frame(con: Construction, seed: int, i: int) -> pd.DataFrame:
    """One seed's scaled steps as probe rows (actual direction only), as in the first attack."""
    rng = np.random.default_rng(seed)
    t = np.arange(con.steps, dtype=float)
    eta = con.eta(t)
    a = np.asarray(con.a(t, eta, rng, i), float) * np.ones(con.steps)
    drift, phi = first.drift_and_phi(a, eta, rng)
    phi, drift = first.float_noise(phi, rng), first.float_noise(drift, rng)
    gone = con.unresolved(t, rng)
    phi[gone], drift[gone] = np.nan, np.nan
    return first.probe_frame(t, eta, phi, drift)


def outcome(con: Construction, group: int) -> str:
    """The rule's outcome on one seeded group of ``con.seeds`` seeds (the first attack's seeding)."""
    return first.group_outcome(lambda seed, i: frame(con, seed, i), con.name, con.seeds, group)


def shares(con: Construction, groups: int) -> Counter[str]:
    return Counter(outcome(con, g) for g in range(groups))


def power(p: float, k: float = 0.5) -> Coef:
    return lambda t, eta, rng, i: k * eta**p


def _log_factor(t: np.ndarray, eta: np.ndarray, rng: np.random.Generator, i: int) -> np.ndarray:
    return 0.5 * eta**2 * np.log(1.0 / eta)


def _spikes(every: int, size: float) -> Coef:
    """0.5·η_t², times ``size`` at a random one step in ``every``."""
    return lambda t, eta, rng, i: 0.5 * eta**2 * np.where(rng.uniform(size=t.size) < 1.0 / every, size, 1.0)


def _alternating(t: np.ndarray, eta: np.ndarray, rng: np.random.Generator, i: int) -> np.ndarray:
    return 0.5 * eta * np.where(t % 2 == 0, 1.0, -1.0)


def _mean_plus_noise(sd: float) -> Coef:
    return lambda t, eta, rng, i: 0.5 * eta**2 + sd * eta * rng.normal(size=t.size)


def _decaying(t: np.ndarray, eta: np.ndarray, rng: np.random.Generator, i: int) -> np.ndarray:
    return 0.5 * eta * np.exp(-t / 10.0)


def _switch_off(t: np.ndarray, eta: np.ndarray, rng: np.random.Generator, i: int) -> np.ndarray:
    return np.where(t < t.size / 2, 0.5 * eta, 0.0)


def _mixed(p_low: float, p_high: float, n_low: int) -> Coef:
    return lambda t, eta, rng, i: 0.5 * eta ** (p_low if i < n_low else p_high)


def _ramp_end(t: np.ndarray, eta: np.ndarray, rng: np.random.Generator, i: int) -> np.ndarray:
    """0.5·η_t², times a factor rising linearly from 1 to 4 over the last 20% of the steps."""
    start = 0.8 * t.size
    return 0.5 * eta**2 * (1.0 + 3.0 * np.clip((t - start) / (t.size - 1 - start), 0.0, 1.0))


def _first_order_end(t: np.ndarray, eta: np.ndarray, rng: np.random.Generator, i: int) -> np.ndarray:
    """0.5·η_t², then 0.5·η_t on the last 20% of the steps (the coefficient stops shrinking like η_t²)."""
    return np.where(t >= 0.8 * t.size, 0.5 * eta, 0.5 * eta**2)


W, N = frozenset({WITHIN}), frozenset({NOT_WITHIN})
T = frozenset({NT})


def constructions() -> list[Construction]:
    return [
        Construction("a = 0.5 eta^2 log(1/eta)", _log_factor, NOT_WITHIN, N | {ND}),
        Construction("a = 0.5 eta^2, x50 spike at 1 step in 30", _spikes(30, 50.0), WITHIN, W | {ND}),
        Construction("a = 0.5 eta^2, x50 spike at 1 step in 10", _spikes(10, 50.0), WITHIN, W | {ND}),
        Construction("a = +-0.5 eta, alternating sign", _alternating, NOT_WITHIN, N),
        Construction("a = 0.5 eta^2 + noise of sd 0.1 eta", _mean_plus_noise(0.1), NOT_WITHIN, N),
        Construction("a = 0.5 eta^2 + noise of sd 0.5 eta", _mean_plus_noise(0.5), NOT_WITHIN, N),
        Construction("a = 0.5 eta e^(-t/10)", _decaying, WITHIN, W),
        Construction("a = 0.5 eta until T/2, then 0", _switch_off, WITHIN, W | {ND, NT}),
        Construction("seeds disagree: 2 of 5 at p = 1, 3 at p = 2", _mixed(1, 2, 2), NOT_WITHIN, N | {ND}),
        Construction("seeds disagree: 2 of 5 at p = 1.5, 3 at p = 2", _mixed(1.5, 2, 2), NOT_WITHIN, N | {ND}),
        Construction("constant then 1/sqrt(t): a = 0.5 eta^2", power(2), WITHIN, W, eta=constant_then_decay),
        Construction("constant then 1/sqrt(t): a = 0.5 eta", power(1), NOT_WITHIN, N, eta=constant_then_decay),
        Construction("eta ~ 1/t: a = 0.5 eta^2", power(2), WITHIN, W, eta=inverse_t),
        Construction("eta ~ 1/t: a = 0.5 eta^1.5", power(1.5), WITHIN, W | {ND}, eta=inverse_t),
        Construction("eta ~ 1/t: a = 0.5 eta", power(1), NOT_WITHIN, N | {ND}, eta=inverse_t),
        Construction("a = 0.5 eta^2, 15 scaled steps", power(2), WITHIN, T, steps=15),
        Construction("a = 0.5 eta, 15 scaled steps", power(1), NOT_WITHIN, T, steps=15),
        Construction("a = 0.5 eta^2, 100 scaled steps", power(2), WITHIN, W, steps=100),
        Construction("a = 0.5 eta^1.9, 100 scaled steps", power(1.9), NOT_WITHIN, N | {ND}, steps=100),
        Construction("a = 0.5 eta, 100 scaled steps", power(1), NOT_WITHIN, N, steps=100),
        Construction("a = 0.5 eta^2.2", power(2.2), WITHIN, W),
        Construction("a = 0.5 eta^1.95", power(1.95), NOT_WITHIN, N | {ND}),
        Construction("a = 0.5 eta^2, 30% unresolved at random", power(2), WITHIN, W | T, unresolved=random_share(0.3)),
        Construction("a = 0.5 eta, 30% unresolved at random", power(1), NOT_WITHIN, N | T, unresolved=random_share(0.3)),
        Construction("a = 0.5 eta^2, last third unresolved", power(2), WITHIN, W | T, unresolved=last_third),
        Construction("a = 0.5 eta, last third unresolved", power(1), NOT_WITHIN, N | T, unresolved=last_third),
        Construction("a = 0.5 eta^2, 100 steps, 30% unresolved at random", power(2), WITHIN, W, steps=100,
                     unresolved=random_share(0.3)),
        Construction("a = 0.5 eta, 100 steps, 30% unresolved at random", power(1), NOT_WITHIN, N, steps=100,
                     unresolved=random_share(0.3)),
        Construction("a = 0.5 eta^2, 100 steps, last third unresolved", power(2), WITHIN, W, steps=100,
                     unresolved=last_third),
        Construction("a = 0.5 eta, 100 steps, last third unresolved", power(1), NOT_WITHIN, N, steps=100,
                     unresolved=last_third),
        Construction("a = 0.5 eta^2 x (1 to 4) over the last 20%", _ramp_end, WITHIN, W | {ND}),
        Construction("a = 0.5 eta^2, then 0.5 eta over the last 20%", _first_order_end, NOT_WITHIN, N | {ND}),
    ]


def judge(con: Construction, groups: int) -> tuple[Counter[str], float, bool]:
    """The first attack's scoring (``break_drift_sum.judge``) of this attack's outcome counts."""
    return first.judge(con, groups, shares)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, default=40)
    args = ap.parse_args()
    print(f"{args.groups} seeded groups per construction, 5 seeds each, 31 scaled steps and "
          "eta_t = 0.1/sqrt(t+1) unless said\n")
    print("| construction | truth | outcome share over groups | agrees? |")
    print("|---|---|---|---|")
    n_ok = 0
    cons = constructions()
    for con in cons:
        got, bad, agrees = judge(con, args.groups)
        n_ok += agrees
        print(first.row(con, got, bad, agrees, args.groups), flush=True)
    print(f"\n{n_ok} of {len(cons)} constructions agree with their truth; {len(cons) - n_ok} break.")


if __name__ == "__main__":
    main()
