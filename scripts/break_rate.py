"""Hostile referee: constructions with known answers against Theorem 1 (a)'s rate rule.

    OMP_NUM_THREADS=1 PYTHONPATH=. python3 scripts/break_rate.py              # 50 groups of 5 seeds
    OMP_NUM_THREADS=1 PYTHONPATH=. python3 scripts/break_rate.py --groups 200 --only "floor"

Every construction gives, per seed, a series (T, Ĝ_T) for T = 1..horizon: a mean level E[Ĝ_T]
plus noise of a stated kind (Gaussian, AR(1), Student t with 3 degrees of freedom scaled to unit
variance, multiplicative) whose standard deviation is ``noise`` × the level's mean over the run.
Each group of seeds goes through ``analyses.theorem1.rate.describe_rate``, the rate row's own
code, and the outcome is counted.

The truth is that of the construction's mean level over seeds: "toward zero" (it falls to 0 at
the bound's rate or faster), "slower" (it falls to 0 slower than the bound), "floor" (it reaches a
positive floor inside the run), "flat" (flat throughout), "zero" (mean zero). The outcomes that
state a truth and the ones that contradict it are the calibration's (``TRUE`` and ``WRONG``
below, the cells of ``analyses.theorem1.families``) with two scoring rules of the attacks (registered
in docs/breaks/rate.md): "not distinguished from the bound's" on a slower truth is an abstention on
the rate (neither states nor contradicts it), and on a flat truth with a rise after a decay a fall word
whose caveat starts at or before the rise's start states it (``key`` with the rise's start). A construction with a floor has a floor
start (``floor_start``: the first T from which its mean level stays within 1% of its limit); a fall
word whose caveat starts at or before it states the floor (``key``, ``CAVEAT``). A construction
**breaks** the rule when contradicting words come out in more than 5% of the groups (the rule's
level), or when the words that state the truth come out in fewer than 95% of the groups (undecided
outcomes count against the rule there; the table says which of the two happened).

Then the printed power (``analyses.theorem1.rate_power.rate_power`` at the noise and lag-1
autocorrelation the row measures on a group) against the share of groups that actually state the
truth under the same AR(1) noise. Writes nothing. Deterministic (``--seed``).
"""

from __future__ import annotations

import argparse
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from analyses.theorem1.rate import (
    FALLS_AT,
    FALLS_SLOWER,
    FALLS_UNDISTINGUISHED,
    FLATTENS,
    NO_DECAY,
    NOT_TESTABLE,
    RATE_OUTCOMES,
    describe_rate,
)
from analyses.theorem1.rate_power import rate_power

SEEDS = 5
GROUPS = 50
NOISE = 1.0
BREAK_SHARE = 0.05
TOWARD_ZERO, SLOWER, FLOOR, FLAT, ZERO = "toward zero", "slower", "floor", "flat", "zero"
TRUE = {TOWARD_ZERO: (FALLS_AT, FALLS_UNDISTINGUISHED), SLOWER: (FALLS_SLOWER,), FLOOR: (FLATTENS, NO_DECAY),
        FLAT: (NO_DECAY, FLATTENS), ZERO: (NOT_TESTABLE,)}
WRONG = {TOWARD_ZERO: (FALLS_SLOWER, FLATTENS, NO_DECAY), SLOWER: (FALLS_AT, NO_DECAY),
         FLOOR: (FALLS_AT, FALLS_UNDISTINGUISHED), FLAT: (FALLS_AT, FALLS_UNDISTINGUISHED, FALLS_SLOWER),
         ZERO: (FALLS_AT, FALLS_UNDISTINGUISHED, FALLS_SLOWER)}
CAVEAT = " + floor caveat"
"""Suffix of a fall word whose caveat starts at or before the construction's floor start (it states a floor)."""
COVERED = tuple(o + CAVEAT for o in (FALLS_AT, FALLS_UNDISTINGUISHED, FALLS_SLOWER))
TRUE[FLOOR] = TRUE[FLOOR] + COVERED
TRUE[FLAT] = TRUE[FLAT] + COVERED  # a rise after a decay: a fall word whose caveat starts at or before the rise
SHORT = {FALLS_AT: "at bound", FALLS_UNDISTINGUISHED: "undist.", FALLS_SLOWER: "slower", FLATTENS: "flattens",
         NO_DECAY: "no decay", NOT_TESTABLE: "n/t"}
SHORT.update({o + CAVEAT: SHORT[o] + " + caveat" for o in (FALLS_AT, FALLS_UNDISTINGUISHED, FALLS_SLOWER)})
KEYS = RATE_OUTCOMES[:3] + COVERED + RATE_OUTCOMES[3:]
FLOOR_TOLERANCE = 0.01
"""A construction's floor start: the first T from which its mean level stays within this share of its limit."""

Level = Callable[[np.ndarray, int], np.ndarray]  # (T, horizon) -> E[Ĝ_T]


def bound(t: np.ndarray, horizon: int = 0) -> np.ndarray:
    total = np.sqrt(t) * np.log(t + 1.0)
    return np.diff(np.concatenate([[0.0], total])) / np.diff(np.concatenate([[0.0], t]))


def inv_sqrt(t: np.ndarray, horizon: int = 0) -> np.ndarray:
    return 1.0 / np.sqrt(t)


def floor_at(frac: float) -> Level:
    """1/√T made flat from frac·horizon on: a floor reached at that point of the run."""
    return lambda t, h: 1.0 / np.sqrt(np.minimum(t, frac * h))


def power(beta: float) -> Level:
    return lambda t, h: t ** -beta


def warm_up(frac: float) -> Level:
    """Rising linearly to frac·horizon, then 1/√T from there (continuous)."""
    return lambda t, h: np.where(t < frac * h, t / (frac * h), np.sqrt(frac * h / t))


def step_drop(frac: float) -> Level:
    return lambda t, h: np.where(t < frac * h, 2.0, 1.0)


def transient(scale: float, height: float = 4.0) -> Level:
    return lambda t, h: 1.0 + height * np.exp(-t / (scale * h / 1000.0))


def plateau_then_fall(frac: float) -> Level:
    """Flat at the level of 1/√(frac·h) until frac·h, then 1/√T: a plateau mid-run, falling to zero after."""
    return lambda t, h: 1.0 / np.sqrt(np.maximum(t, frac * h))


def constant(t: np.ndarray, horizon: int = 0) -> np.ndarray:
    return np.ones_like(t)


def zero(t: np.ndarray, horizon: int = 0) -> np.ndarray:
    return np.zeros_like(t)


@dataclass(frozen=True)
class Construction:
    name: str
    truth: str
    level: Level
    noise: float = NOISE
    kind: str = "gauss"  # gauss | ar | t3 | mult
    phi: float = 0.0
    horizon: int = 1000
    mixed: tuple[Level, ...] = field(default=())  # per-seed levels (seeds that disagree); overrides level
    scale: float | None = None  # the noise's standard deviation itself (else noise × the run's mean level)


def ar1(e: np.ndarray, phi: float) -> np.ndarray:
    """Unit-variance AR(1) noise with lag-1 autocorrelation ``phi`` from standard normal innovations ``e``."""
    z = np.empty(e.size)
    z[0] = e[0]
    inn = np.sqrt(1.0 - phi * phi)
    for i in range(1, e.size):
        z[i] = phi * z[i - 1] + inn * e[i]
    return z


def _noise(c: Construction, n: int, rng: np.random.Generator) -> np.ndarray:
    if c.kind == "t3":
        return rng.standard_t(3, n) / np.sqrt(3.0)
    e = rng.standard_normal(n)
    return ar1(e, c.phi) if c.kind == "ar" else e


def seed_series(c: Construction, i: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Seed ``i`` of one group: (T, Ĝ_T)."""
    t = np.arange(1.0, c.horizon + 1.0)
    level_fn = c.mixed[i % len(c.mixed)] if c.mixed else c.level
    level = np.asarray(level_fn(t, c.horizon), float)
    z = _noise(c, t.size, rng)
    if c.kind == "mult":
        return t, level * (1.0 + c.noise * z)
    sd = c.scale if c.scale is not None else c.noise * float(level.mean())
    return t, level + sd * z


def group(c: Construction, rng: np.random.Generator, seeds: int = SEEDS):
    """The rate row's description of one group of ``seeds`` seeds of ``c``."""
    return describe_rate([seed_series(c, i, rng) for i in range(seeds)])


def constructions() -> list[Construction]:
    out = [
        Construction("1/sqrt(T)", TOWARD_ZERO, inv_sqrt),
        Construction("the bound log(T+1)/sqrt(T)", TOWARD_ZERO, bound),
        Construction("1/sqrt(T), noise 0.3", TOWARD_ZERO, inv_sqrt, noise=0.3),
        Construction("the bound, noise 0.3", TOWARD_ZERO, bound, noise=0.3),
    ]
    for frac in (0.25, 0.5, 0.6, 0.75, 0.85, 0.9):
        out.append(Construction(f"1/sqrt(T) flat from {frac}T", FLOOR, floor_at(frac)))
    for frac in (0.25, 0.5, 0.75, 0.9):
        out.append(Construction(f"1/sqrt(T) flat from {frac}T, noise 0.3", FLOOR, floor_at(frac), noise=0.3))
    out += [
        Construction("T^-0.1", SLOWER, power(0.1)),
        Construction("T^-0.2", SLOWER, power(0.2)),
        Construction("T^-0.1, noise 0.3", SLOWER, power(0.1), noise=0.3),
        Construction("T^-0.2, noise 0.3", SLOWER, power(0.2), noise=0.3),
        Construction("1 + 4 exp(-T/100) (transient onto a plateau)", FLOOR, transient(100.0)),
        Construction("1 + 4 exp(-T/300) (slow transient onto a plateau)", FLOOR, transient(300.0)),
        Construction("plateau until T/2, then 1/sqrt(T)", TOWARD_ZERO, plateau_then_fall(0.5)),
        Construction("plateau until 0.3T, then 1/sqrt(T)", TOWARD_ZERO, plateau_then_fall(0.3)),
        Construction("plateau (flat)", FLAT, constant),
        Construction("warm-up peaking at T/3, then 1/sqrt(T)", TOWARD_ZERO, warm_up(1 / 3)),
        Construction("warm-up peaking at T/2, then 1/sqrt(T)", TOWARD_ZERO, warm_up(0.5)),
        Construction("warm-up peaking at 0.1T, then 1/sqrt(T)", TOWARD_ZERO, warm_up(0.1)),
        Construction("step drop 2 -> 1 at T/2", FLOOR, step_drop(0.5)),
        Construction("step drop 2 -> 1 at 0.8T", FLOOR, step_drop(0.8)),
        Construction("1/sqrt(T), AR(1) 0.5", TOWARD_ZERO, inv_sqrt, kind="ar", phi=0.5),
        Construction("1/sqrt(T), AR(1) 0.9", TOWARD_ZERO, inv_sqrt, kind="ar", phi=0.9),
        Construction("the bound, AR(1) 0.9", TOWARD_ZERO, bound, kind="ar", phi=0.9),
        Construction("flat from T/2, AR(1) 0.5", FLOOR, floor_at(0.5), kind="ar", phi=0.5),
        Construction("flat from T/2, AR(1) 0.9", FLOOR, floor_at(0.5), kind="ar", phi=0.9),
        Construction("plateau, AR(1) 0.9", FLAT, constant, kind="ar", phi=0.9),
        Construction("1/sqrt(T), t(3) noise", TOWARD_ZERO, inv_sqrt, kind="t3"),
        Construction("flat from T/2, t(3) noise", FLOOR, floor_at(0.5), kind="t3"),
        Construction("plateau, t(3) noise", FLAT, constant, kind="t3"),
        Construction("1/sqrt(T), multiplicative noise 1", TOWARD_ZERO, inv_sqrt, kind="mult"),
        Construction("flat from T/2, multiplicative noise 1", FLOOR, floor_at(0.5), kind="mult"),
        Construction("floor 1, zero-mean noise sd 3 (Ĝ often < 0)", FLAT, constant, scale=3.0),
        Construction("flat from T/4, noise 3", FLOOR, floor_at(0.25), noise=3.0),
        Construction("mean zero (noise only, sd 1)", ZERO, zero, scale=1.0),
        Construction("seeds disagree: 3 x 1/sqrt(T), 2 x flat from T/4", FLOOR, inv_sqrt,
                     mixed=(inv_sqrt, floor_at(0.25), inv_sqrt, floor_at(0.25), inv_sqrt)),
        Construction("seeds disagree: 4 x 1/sqrt(T), 1 x flat from T/4", FLOOR, inv_sqrt,
                     mixed=(inv_sqrt, inv_sqrt, floor_at(0.25), inv_sqrt, inv_sqrt)),
        Construction("seeds disagree: 4 x plateau, 1 x 1/sqrt(T)", FLOOR, constant,
                     mixed=(constant, constant, inv_sqrt, constant, constant)),
    ]
    for horizon in (500, 2000):
        out += [
            Construction(f"T={horizon}: 1/sqrt(T)", TOWARD_ZERO, inv_sqrt, horizon=horizon),
            Construction(f"T={horizon}: the bound", TOWARD_ZERO, bound, horizon=horizon),
            Construction(f"T={horizon}: flat from T/2", FLOOR, floor_at(0.5), horizon=horizon),
            Construction(f"T={horizon}: flat from 0.85T", FLOOR, floor_at(0.85), horizon=horizon),
            Construction(f"T={horizon}: T^-0.2", SLOWER, power(0.2), horizon=horizon),
            Construction(f"T={horizon}: 1 + 4 exp(-T/(0.1T))", FLOOR, transient(100.0), horizon=horizon),
        ]
    return out


def by_name(name: str) -> Construction:
    return next(c for c in constructions() if c.name == name)


def mean_level(c: Construction, t: np.ndarray) -> np.ndarray:
    """The construction's mean level over seeds at ``t`` (the per-seed levels averaged for seeds that disagree)."""
    levels = c.mixed if c.mixed else (c.level,)
    return np.mean([np.asarray(f(t, c.horizon), float) for f in levels], axis=0)


def floor_start(c: Construction) -> float | None:
    """The first T from which the mean level stays within ``FLOOR_TOLERANCE`` of its limit (its value at
    T = 10^12), on the steps 1..horizon and a log grid beyond; None unless the truth has a floor (floor,
    flat). Beyond the horizon when the level is still falling toward its limit at the run's end."""
    if c.truth not in (FLOOR, FLAT):
        return None
    t = np.concatenate([np.arange(1.0, c.horizon + 1.0), np.geomspace(c.horizon + 1.0, 1e11, 2000)])
    limit = float(mean_level(c, np.array([1e12]))[0])
    off = np.abs(mean_level(c, t) - limit) > FLOOR_TOLERANCE * abs(limit)
    return float(t[np.flatnonzero(off)[-1] + 1]) if off.any() else 1.0


def key(c: Construction, desc, start: float | None = None) -> str:
    """The outcome a group is scored by: a fall word whose caveat starts at or before ``start`` is marked
    ``CAVEAT``. For a floor, ``start`` is the floor start (``floor_start``); for a flat truth it is the start
    of a rise after a decay (a level without a limit; the caller passes it), where the caveat's "a floor
    from T = s on is not excluded" claims nothing after the rise. A plateau's floor start (1) lies before any
    caveat, so there the caveat changes nothing."""
    start = floor_start(c) if start is None and c.truth == FLOOR else start
    if (c.truth in (FLOOR, FLAT) and desc.outcome in RATE_OUTCOMES[:3] and desc.floor_after is not None
            and start is not None and desc.floor_after <= start):
        return desc.outcome + CAVEAT
    return desc.outcome


def rng_for(c: Construction, seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(c.name.encode())])


def shares(c: Construction, groups: int, seed: int = 0) -> Counter:
    """Outcome counts over ``groups`` groups of ``SEEDS`` seeds (deterministic in ``seed``)."""
    rng = rng_for(c, seed)
    start = floor_start(c)
    return Counter(key(c, group(c, rng), start) for _ in range(groups))


def verdict(c: Construction, counts: Counter, groups: int) -> tuple[float, float, str]:
    """(share stating the truth, share contradicting it, verdict words)."""
    right = sum(counts[o] for o in TRUE[c.truth]) / groups
    wrong = sum(counts[o] for o in WRONG[c.truth]) / groups
    if wrong > BREAK_SHARE:
        return right, wrong, "**breaks: wrong words**"
    if right < 1.0 - BREAK_SHARE:
        return right, wrong, "breaks: undecided"
    return right, wrong, "yes"


def table(groups: int, seed: int, only: str | None) -> list[tuple[Construction, Counter]]:
    print(f"{groups} groups of {SEEDS} seeds each; noise sd = {NOISE} x the run's mean level unless named\n")
    print("| construction | truth | floor start | outcome shares | states truth | contradicts | agrees? |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for c in constructions():
        if only and only.lower() not in c.name.lower():
            continue
        counts = shares(c, groups, seed)
        right, wrong, word = verdict(c, counts, groups)
        cells = ", ".join(f"{SHORT[o]} {counts[o] / groups:.2f}" for o in KEYS if counts[o])
        start = floor_start(c)
        shown = "" if start is None else (f"{start:.0f}" if start <= c.horizon else "beyond the run")
        print(f"| {c.name} | {c.truth} | {shown} | {cells} | {right:.2f} | {wrong:.2f} | {word} |", flush=True)
        rows.append((c, counts))
    return rows


def power_check(phis: tuple[float, ...], groups: int, reps: int, seed: int) -> None:
    """The power the row prints (``rate_power`` at the group's measured noise and φ) against the
    share of groups of the same construction that state the truth."""
    print("\nPrinted power against the actual share (1/sqrt(T) and the bound, noise 1, AR(1) noise)\n")
    print("| family | true phi | measured phi (median) | measured noise | printed power (mean) | actual share |")
    print("|---|---|---|---|---|---|")
    for phi in phis:
        for fam, level in (("1/sqrt(T)", inv_sqrt), ("the bound", bound)):
            c = Construction(f"{fam}, AR(1) {phi}", TOWARD_ZERO, level, kind="ar", phi=phi)
            rng = rng_for(c, seed)
            descs = [group(c, rng) for _ in range(groups)]
            actual = sum(d.outcome in TRUE[TOWARD_ZERO] for d in descs) / groups
            printed = [rate_power(d.noise, d.seeds, d.horizon, reps=reps, phi=d.phi).correct
                       for d in descs[:5]]
            key = "1/sqrt(T)" if fam == "1/sqrt(T)" else "log(T+1)/sqrt(T) (the bound)"
            p = float(np.mean([x[key] for x in printed]))
            print(f"| {fam} | {phi} | {np.median([d.phi for d in descs]):.2f} | "
                  f"{np.median([d.noise for d in descs]):.2f} | {p:.2f} | {actual:.2f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=GROUPS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default=None)
    ap.add_argument("--power-reps", type=int, default=100)
    ap.add_argument("--no-power", action="store_true")
    args = ap.parse_args()
    table(args.groups, args.seed, args.only)
    if not args.no_power:
        power_check((0.0, 0.5, 0.9), args.groups, args.power_reps, args.seed)


if __name__ == "__main__":
    main()
