"""Hostile referee, second attack: out-of-sample constructions against Theorem 1 (a)'s rate rule.

    OMP_NUM_THREADS=1 PYTHONPATH=. python3 scripts/break_rate_second.py             # 50 groups of 5 seeds
    OMP_NUM_THREADS=1 PYTHONPATH=. python3 scripts/break_rate_second.py --groups 200 --only "floor"

The first attack (``scripts/break_rate.py``) was known when the rule was tuned, so its
constructions are in-sample. The constructions here are new: floors at other noise levels, two-stage
decays, slow falls on both sides of the bound's rate, a periodic level, heteroscedastic, lognormal
and spiky noise, per-seed floors and scales, a tiny floor, a late rise, other horizons and seed
counts, AR(1) 0.7 and a Ĝ that is often negative.

Each group of seeds goes through ``analyses.theorem1.rate.describe_rate`` (the rate row's own
code). Scoring is the first attack's, imported from it: the same words state and
contradict each truth (``TRUE``, ``WRONG``), the same floor start (first T from which the mean
level over seeds stays within 1% of its limit), a fall word whose caveat starts at or before the
floor start states a floor (``key``), and a construction agrees when the truth's words come out in at
least 95% of the groups and contradicting words in at most 5% (``verdict``). Writes nothing.
Deterministic (``--seed``).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analyses.theorem1.rate import describe_rate

_PATH = Path(__file__).resolve().parent / "break_rate.py"
if "break_rate" in sys.modules:
    first = sys.modules["break_rate"]
else:
    _SPEC = importlib.util.spec_from_file_location("break_rate", _PATH)
    first = importlib.util.module_from_spec(_SPEC)
    sys.modules["break_rate"] = first
    _SPEC.loader.exec_module(first)

SEEDS = 5
GROUPS = 50
TOWARD_ZERO, SLOWER, FLOOR, FLAT = first.TOWARD_ZERO, first.SLOWER, first.FLOOR, first.FLAT
inv_sqrt, bound, floor_at, power = first.inv_sqrt, first.bound, first.floor_at, first.power

Level = Callable[[np.ndarray, int], np.ndarray]
SeedLevel = Callable[[np.ndarray, int, np.random.Generator], np.ndarray]


@dataclass(frozen=True)
class Construction:
    """One attack. ``level`` is the mean level E[Ĝ_T] over seeds (it fixes the floor start);
    ``seed_level`` draws a seed's own level where seeds differ (per-seed floor or scale)."""

    name: str
    truth: str
    level: Level
    noise: float = 1.0
    kind: str = "gauss"  # gauss | ar | lognormal | spikes
    phi: float = 0.0
    horizon: int = 1000
    seeds: int = SEEDS
    seed_level: SeedLevel | None = None
    sd: Level | None = None  # the noise's sd as a function of T (heteroscedastic); else noise x run mean
    start_level: Level | None = None  # the level whose floor start is scored (the trend under a periodic part)
    limit: bool = True  # False: the level has no limit (a late rise), so no floor start
    rise: float | None = None  # a rise after a decay starts at rise·horizon: a caveat from there claims nothing


# ---- levels --------------------------------------------------------------------------------------

def then_exp(frac: float, tau: float, floor_share: float = 0.0) -> Level:
    """1/√T until frac·h, then an exponential with time constant tau·h onto floor_share × the level there."""
    def f(t, h):
        a = (frac * h) ** -0.5
        fl = floor_share * a
        return np.where(t < frac * h, 1.0 / np.sqrt(t), fl + (a - fl) * np.exp(-(t - frac * h) / (tau * h)))
    return f


def sqrt_log(t, h=0):
    return np.log(t + 1.0) / np.sqrt(t)


def periodic(share: float, periods: float) -> Level:
    return lambda t, h: (1.0 + share * np.sin(2.0 * np.pi * t * periods / h)) / np.sqrt(t)


def tiny_floor(t, h):
    """A power law from 1 at T = 1 down to 1e-3 at T = h/3, flat at 1e-3 from there."""
    beta = np.log(1e3) / np.log(h / 3.0)
    return np.maximum(t ** -beta, 1e-3)


def late_rise(frac: float, rise: float) -> Level:
    """1/√T until frac·h, then rising linearly by ``rise`` (a share) up to the horizon."""
    def f(t, h):
        a = (frac * h) ** -0.5
        return np.where(t < frac * h, 1.0 / np.sqrt(t), a * (1.0 + rise * (t - frac * h) / ((1.0 - frac) * h)))
    return f


_U = (np.arange(201) + 0.5) / 201  # quantiles of a uniform draw: the mean over seeds of a per-seed floor


def seed_floor(frac: float, lo: float, hi: float) -> tuple[Level, SeedLevel]:
    """max(1/√T, f) with f = u·(frac·h)^-1/2, u uniform on [lo, hi] per seed (seeds reach floors of
    different heights at different T); the mean level is the average over u."""
    def mean(t, h):
        u = lo + (hi - lo) * _U
        return np.mean(np.maximum(1.0 / np.sqrt(t)[None, :], (u * (frac * h) ** -0.5)[:, None]), axis=0)

    def one(t, h, rng):
        return np.maximum(1.0 / np.sqrt(t), rng.uniform(lo, hi) * (frac * h) ** -0.5)
    return mean, one


def seed_scale(level: Level, sigma: float) -> SeedLevel:
    """The level times a per-seed lognormal constant exp(sigma·z) (scale heterogeneity)."""
    return lambda t, h, rng: level(t, h) * np.exp(sigma * rng.standard_normal())


def hetero(level: Level, first_sd: float, power_: float) -> Level:
    """A noise sd of first_sd × the level at T = 1, falling like T^-power_ (faster than the level)."""
    return lambda t, h: first_sd * level(np.array([1.0]), h)[0] * t ** -power_


# ---- noise ---------------------------------------------------------------------------------------

def _noise(c: Construction, n: int, rng: np.random.Generator) -> np.ndarray:
    e = rng.standard_normal(n)
    if c.kind == "lognormal":  # exp(z) standardised to mean 0, sd 1: a heavy right tail
        return (np.exp(e) - np.exp(0.5)) / np.sqrt((np.e - 1.0) * np.e)
    return first.ar1(e, c.phi) if c.kind == "ar" else e


def seed_series(c: Construction, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(1.0, c.horizon + 1.0)
    level = np.asarray(c.seed_level(t, c.horizon, rng) if c.seed_level else c.level(t, c.horizon), float)
    sd = c.sd(t, c.horizon) if c.sd is not None else c.noise * float(level.mean())
    g = level + sd * _noise(c, t.size, rng)
    if c.kind == "spikes":  # 1% of the steps multiplied by 20
        g = np.where(rng.random(t.size) < 0.01, 20.0 * g, g)
    return t, g


def group(c: Construction, rng: np.random.Generator):
    return describe_rate([seed_series(c, rng) for _ in range(c.seeds)])


def constructions() -> list[Construction]:
    C = Construction
    out = []
    for noise in (0.5, 2.0):
        for frac in (0.5, 0.7):
            out.append(C(f"1/sqrt(T) flat from {frac}T, noise {noise}", FLOOR, floor_at(frac), noise=noise))
    out += [
        C("two-stage: 1/sqrt(T), then exp onto zero from T/2", TOWARD_ZERO, then_exp(0.5, 0.1)),
        C("two-stage: 1/sqrt(T), then exp onto a floor (half) from T/2", FLOOR, then_exp(0.5, 0.05, 0.5)),
        C("T^-0.3 (slower than the bound's class)", SLOWER, power(0.3)),
        C("T^-0.3, noise 0.3", SLOWER, power(0.3), noise=0.3),
        C("log(T+1)/sqrt(T) (the bound's class)", TOWARD_ZERO, sqrt_log),
        C("log(T+1)/sqrt(T), noise 0.3", TOWARD_ZERO, sqrt_log, noise=0.3),
        C("1/sqrt(T) x (1 + 0.3 sin), period T/5", TOWARD_ZERO, periodic(0.3, 5.0)),
        C("flat from T/2 x (1 + 0.3 sin), period T/5", FLOOR,
          lambda t, h: floor_at(0.5)(t, h) * (1.0 + 0.3 * np.sin(2.0 * np.pi * t * 5.0 / h)),
          start_level=floor_at(0.5)),
        C("1/sqrt(T), noise sd 3/T (falls faster than the level)", TOWARD_ZERO, inv_sqrt,
          sd=hetero(inv_sqrt, 3.0, 1.0)),
        C("flat from T/2, noise sd 3/T", FLOOR, floor_at(0.5), sd=hetero(inv_sqrt, 3.0, 1.0)),
        C("1/sqrt(T), lognormal noise 1", TOWARD_ZERO, inv_sqrt, kind="lognormal"),
        C("flat from T/2, lognormal noise 1", FLOOR, floor_at(0.5), kind="lognormal"),
        C("plateau, lognormal noise 1", FLAT, first.constant, kind="lognormal"),
        C("1/sqrt(T), spikes (1% of steps x20)", TOWARD_ZERO, inv_sqrt, kind="spikes"),
        C("flat from T/2, spikes (1% of steps x20)", FLOOR, floor_at(0.5), kind="spikes"),
    ]
    mean, one = seed_floor(0.5, 0.75, 1.25)
    out.append(C("per-seed floor: max(1/sqrt(T), U(0.75,1.25)/sqrt(T/2))", FLOOR, mean, seed_level=one))
    mean, one = seed_floor(0.3, 0.5, 1.5)
    out.append(C("per-seed floor: max(1/sqrt(T), U(0.5,1.5)/sqrt(0.3T))", FLOOR, mean, seed_level=one))
    out += [
        C("tiny floor 1e-3 reached at T/3", FLOOR, tiny_floor,
          ),
        C("1/sqrt(T), then a rise of 50% from 0.8T", FLAT, late_rise(0.8, 0.5), limit=False, rise=0.8),
        C("1/sqrt(T), then a rise of 50% from 0.8T, noise 0.3", FLAT, late_rise(0.8, 0.5), noise=0.3, limit=False,
          rise=0.8),
        C("1/sqrt(T) x per-seed lognormal(0, 1) scale", TOWARD_ZERO, inv_sqrt, seed_level=seed_scale(inv_sqrt, 1.0)),
        C("flat from T/2 x per-seed lognormal(0, 1) scale", FLOOR, floor_at(0.5),
          seed_level=seed_scale(floor_at(0.5), 1.0)),
    ]
    for horizon in (300, 5000):
        out += [
            C(f"T={horizon}: 1/sqrt(T)", TOWARD_ZERO, inv_sqrt, horizon=horizon),
            C(f"T={horizon}: flat from T/2", FLOOR, floor_at(0.5), horizon=horizon),
        ]
    out += [
        C("T=5000: the bound", TOWARD_ZERO, bound, horizon=5000),
        C("T=5000: flat from 0.85T", FLOOR, floor_at(0.85), horizon=5000),
        C("T=5000: T^-0.3", SLOWER, power(0.3), horizon=5000),
    ]
    for seeds in (3, 10):
        out += [
            C(f"{seeds} seeds: 1/sqrt(T)", TOWARD_ZERO, inv_sqrt, seeds=seeds),
            C(f"{seeds} seeds: flat from T/2", FLOOR, floor_at(0.5), seeds=seeds),
        ]
    out += [
        C("1/sqrt(T), AR(1) 0.7", TOWARD_ZERO, inv_sqrt, kind="ar", phi=0.7),
        C("flat from T/2, AR(1) 0.7", FLOOR, floor_at(0.5), kind="ar", phi=0.7),
        C("plateau, AR(1) 0.7", FLAT, first.constant, kind="ar", phi=0.7),
        C("1/sqrt(T), noise 5 (Ĝ often < 0)", TOWARD_ZERO, inv_sqrt, noise=5.0),
        C("flat from T/2, noise 5 (Ĝ often < 0)", FLOOR, floor_at(0.5), noise=5.0),
    ]
    return out


def by_name(name: str) -> Construction:
    return next(c for c in constructions() if c.name == name)


def floor_start(c: Construction) -> float | None:
    """The first attack's floor start, on this construction's mean level (on its trend, without the
    periodic part, where ``start_level`` is set); None for a level without a limit."""
    if not c.limit:
        return None
    level = c.start_level or c.level
    return first.floor_start(first.Construction(c.name, c.truth, level, horizon=c.horizon))


def rng_for(c: Construction, seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(c.name.encode())])


def scored_start(c: Construction) -> float | None:
    """The T a fall word's caveat is scored against: the floor start, or for a rise after a decay the rise's
    start (a caveat from there on claims nothing after it)."""
    return c.rise * c.horizon if c.rise is not None else floor_start(c)


def shares(c: Construction, groups: int, seed: int = 0) -> Counter:
    """Outcome counts over ``groups`` groups (the first attack's ``key``: fall word + caveat, against
    ``scored_start``)."""
    rng = rng_for(c, seed)
    start = scored_start(c)
    return Counter(first.key(c, group(c, rng), start) for _ in range(groups))


def verdict(c: Construction, counts: Counter, groups: int) -> tuple[float, float, str]:
    return first.verdict(c, counts, groups)


def table(groups: int, seed: int, only: str | None) -> list[tuple[Construction, Counter]]:
    print(f"{groups} groups of seeds (5 unless named), T = 1000 unless named; "
          "noise sd = 1 x the seed's mean level over the run unless named\n")
    print("| construction | truth | floor start | outcome shares | states truth | contradicts | agrees? |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for c in constructions():
        if only and only.lower() not in c.name.lower():
            continue
        counts = shares(c, groups, seed)
        right, wrong, word = verdict(c, counts, groups)
        cells = ", ".join(f"{first.SHORT[o]} {counts[o] / groups:.2f}" for o in first.KEYS if counts[o])
        start = floor_start(c)
        shown = "" if start is None else (f"{start:.0f}" if start <= c.horizon else "beyond the run")
        shown = f"rise from {c.rise * c.horizon:.0f}" if c.rise is not None else shown
        print(f"| {c.name} | {c.truth} | {shown} | {cells} | {right:.2f} | {wrong:.2f} | {word} |", flush=True)
        rows.append((c, counts))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=GROUPS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    table(args.groups, args.seed, args.only)


if __name__ == "__main__":
    main()
