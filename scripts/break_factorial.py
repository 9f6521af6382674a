"""Benchmark (not a test): a hostile referee's attack on the factorial's reading rule.

The rule is ``analyses.versus.factorial.factorial`` (with ``PREDICTIONS``, ``CONTRASTS`` and
``_reading``): each control at its own chosen eta_0, a per-seed contrast over the paired seeds
(a difference of test CE, or a share of the gap (plain - control) / (plain - backprop)), a
t-interval over seeds, and "supported" / "refuted" / "undecided" by where the interval lies
against the registered threshold. Each construction below builds per-seed test CEs directly
(``TunedRun``, as tests/analyses/versus/test_factorial.py does), with a KNOWN truth, runs them
through the same ``factorial`` and counts the reading of one prediction (or of the four decisive
ones) over seeded repetitions. Report: docs/breaks/factorial.md.

Truth of a share is the share of the MEAN gap, (mu_plain - mu_control) / (mu_plain - mu_backprop),
of the construction's means (for a diverged backprop seed: against backprop's stable level); of a
difference, the difference of the means. A truth exactly on the threshold is "threshold": the
correct reading is "undecided", and either decided word contradicts it.

Agreement: the truth's words in >= 95% of repetitions and contradicting words in <= 5%. At an exact
threshold the rule's own nominal rate of decided words is 5% (2.5% each side), so those rows run
1000 repetitions and allow 5% + 2 binomial sd (6.4%) of decided words.

A "fix" column gives the reading of the fix proposed for the row's break, on the same draws.

    OMP_NUM_THREADS=1 python3 scripts/break_factorial.py              # the tables, ~3 min on one core
    python3 scripts/break_factorial.py --reps 50 --only diverged      # a subset
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import zlib  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from analyses.stats.seeds import seed_interval  # noqa: E402
from analyses.versus.factorial import Factorial, analyze_factorial, factorial  # noqa: E402
from analyses.versus.tuning import TunedRun  # noqa: E402

BP, PL = "backprop", "plain"
EMB_BP, EMB_GAP = 5.088, 0.450  # the embedded factorial's backprop and gap (docs/DIAGNOSIS.md, Result 3)
SMOL_BP, SMOL_PL = 3.298, 4.150  # SmolLM2 (Result 4b): backprop's stable seeds, plain ZeroLock ~4.1-4.2
SMOL_DIVERGED = 10.21  # backprop's confirmation seed at its chosen eta_0 on SmolLM2
LR = 0.1
RUN_SD = 0.03  # a run's own noise, shared by its validation and test splits (the flat-grid construction)
THRESHOLD_REPS = 600

Values = dict[str, dict[int, float]]  # control -> seed -> test CE (at the one eta_0 of its grid)


# ---------------------------------------------------------------- inputs


def method_of(name: str) -> str:
    return "backprop" if name == BP else "zerolock-forward"


def to_runs(values: Values) -> dict[str, list[TunedRun]]:
    """Each control run at one eta_0 (validation = test: a one-point grid chooses it anyway)."""
    return {name: [TunedRun(method_of(name), LR, s, v, v, 20) for s, v in by_seed.items()]
            for name, by_seed in values.items()}


def noise(rng: np.random.Generator, n: int, dist: str) -> np.ndarray:
    if dist == "normal":
        return rng.standard_normal(n)
    if dist == "t3":
        return rng.standard_t(3, n) / math.sqrt(3.0)  # unit variance
    raise ValueError(dist)


def cells(rng: np.random.Generator, n: int, means: dict[str, float], *, seed_sd: float = 0.05, cell_sd: float = 0.01,
          dist: str = "normal", pair: tuple[str, str] | None = None, rho: float = 0.0,
          shift: tuple[tuple[str, ...], float] | None = None) -> Values:
    """mean + shared seed effect (every control, sd ``seed_sd``) + a cell's own noise (sd ``cell_sd``,
    normal or t(3)); ``pair``: the second's cell noise correlated ``rho`` with the first's; ``shift``:
    the named controls (only) move by one extra per-seed amount (sd given)."""
    shared = rng.normal(0.0, seed_sd, n) if seed_sd else np.zeros(n)
    eps = {name: noise(rng, n, dist) * cell_sd for name in means}
    if pair is not None:
        a, b = pair
        eps[b] = rho * eps[a] + math.sqrt(1.0 - rho * rho) * eps[b]
    extra = {}
    if shift is not None:
        names, sd = shift
        d = rng.normal(0.0, sd, n)
        extra = {name: d for name in names}
    return {name: {s: float(m + shared[s] + eps[name][s] + extra.get(name, np.zeros(n))[s]) for s in range(n)}
            for name, m in means.items()}


def share_means(share: float, control: str = "alpha_out", gap: float = EMB_GAP, bp: float = EMB_BP) -> dict[str, float]:
    return {BP: bp, PL: bp + gap, control: bp + gap - share * gap}


def gain_means(gain: float, plain: float = EMB_BP + EMB_GAP) -> dict[str, float]:
    return {PL: plain, "p0_uniform": plain - gain}


# ---------------------------------------------------------------- readings and fixes


def reading_of(result: Factorial, contrast: str) -> str:
    return next(p.reading for p in result.predictions if p.contrast == contrast)


def by_seed_of(result: Factorial) -> Values:
    return {r.control: r.test_by_seed for r in result.rows}


def share_linear(t: Values, control: str, threshold: float = 0.5, level: float = 0.95,
                 drop: Callable[[Values, int], bool] | None = None) -> str:
    """Fix (a): the share read without dividing per seed. Over the paired seeds, the linear contrast
    L_s = (P - C) - threshold * (P - B): the share of the mean gap exceeds the threshold exactly when
    mean L > 0 (given a positive mean gap). Supported when L's interval is above 0, refuted when
    below, and undecided unless the gap's own interval is above 0. ``drop``: fix (b), seeds left
    out (a run outside the regime)."""
    if not all(n in t for n in (PL, BP, control)):
        return "not run"
    seeds = sorted(set(t[PL]) & set(t[BP]) & set(t[control]))
    if drop is not None:
        seeds = [s for s in seeds if not drop(t, s)]
    lin = [(t[PL][s] - t[control][s]) - threshold * (t[PL][s] - t[BP][s]) for s in seeds]
    gap = [t[PL][s] - t[BP][s] for s in seeds]
    iv, ivg = seed_interval(lin, level, min_seeds=2), seed_interval(gap, level, min_seeds=2)
    if iv is None or ivg is None or ivg.low <= 0.0:
        return "undecided"
    return "supported" if iv.low > 0.0 else "refuted" if iv.high < 0.0 else "undecided"


def tolerant(result: Factorial, contrast: str, tol: float = 1e-9) -> str:
    """Fix (c): an interval bound within ``tol`` of the threshold touches it (rounding decides nothing)."""
    p = next(p for p in result.predictions if p.contrast == contrast)
    if p.estimate is None:
        return p.reading if p.reading == "not run" else "undecided"
    low, high = p.estimate.low - tol, p.estimate.high + tol
    if p.side == "above":
        return "supported" if low > p.threshold else "refuted" if high < p.threshold else "undecided"
    return "supported" if high < p.threshold else "refuted" if low > p.threshold else "undecided"


def edge_aware(result: Factorial, contrast: str) -> str:
    """Fix (d): a control chosen on its grid's edge could do better off the grid, so a reading that
    its improvement could overturn is "undecided (edge)". (Here: any reading whose contrast involves
    a control on its edge.)"""
    from analyses.versus.factorial import CONTRASTS
    needs = CONTRASTS[contrast][0]
    if any(r.on_boundary for r in result.rows if r.control in needs):
        return "undecided"
    return reading_of(result, contrast)


# ---------------------------------------------------------------- constructions


@dataclass(frozen=True)
class Construction:
    name: str
    contrast: str  # the prediction read (a key of CONTRASTS), or "decisive" for the four mechanisms
    truth: str  # supported / refuted / threshold / not run / same (an invariance)
    true_value: str  # what the truth is, in words
    draw: Callable[[np.random.Generator, int], object]  # -> by_control (dict of TunedRun lists)
    score: Callable[[object, int], tuple[str, str]] | None = None  # (reading, fix reading); None: the default
    fix: Callable[[Factorial, object], str] | None = None  # the fix's reading on the same draw
    seeds: tuple[int, ...] = (3, 5, 10)
    reps: int | None = None


def default_score(c: Construction, level: float = 0.95):
    def score(by_control, _n):
        result = factorial(by_control, level)
        got = reading_of(result, c.contrast)
        fixed = c.fix(result, by_control) if c.fix is not None else ""
        return got, fixed
    return score


def share_fix(control: str, drop=None):
    return lambda result, _bc: share_linear(by_seed_of(result), control, drop=drop)


def values_of(by_control) -> Values:
    return {n: {r.seed: r.test for r in runs} for n, runs in by_control.items()}


def construct_all() -> list[Construction]:
    C: list[Construction] = []
    R = {"seed_sd": 0.05, "cell_sd": 0.01}  # the embedded factorial's scale (Result 3: paired differences sd ~0.01)

    def share(name, share_value, truth, control="alpha_out", *, fix=True, **kw):
        contrast = f"share_{control}"
        C.append(Construction(
            name, contrast, truth, f"share {share_value:g}",
            lambda rng, n: to_runs(cells(rng, n, share_means(share_value, control), **{**R, **kw})),
            fix=share_fix(control) if fix else None))

    def gain(name, gain_value, truth, **kw):
        C.append(Construction(name, "gain_p0_uniform", truth, f"gain {gain_value:g} nats",
                              lambda rng, n: to_runs(cells(rng, n, gain_means(gain_value), **{**R, **kw}))))

    # -- sanity at the embedded factorial's scale
    share("share 0.8, realistic noise", 0.8, "supported")
    share("share 0.07 (embedded M1), realistic noise", 0.067, "refuted")
    share("share exactly 1 (control = backprop)", 1.0, "supported")
    share("share exactly 0 (control = plain)", 0.0, "refuted")
    share("share exactly 0.5, realistic noise", 0.5, "threshold")
    share("share exactly 0.5, twin_half, realistic noise", 0.5, "threshold", control="twin_half")
    share("share exactly 0.5, seed effect only (no cell noise)", 0.5, "threshold", cell_sd=0.0)
    C[-1] = dataclasses.replace(C[-1], fix=lambda res, _bc: tolerant(res, "share_alpha_out"))
    gain("p0 gain 0.15", 0.15, "supported")
    gain("p0 gain exactly 0 (p0 = plain)", 0.0, "refuted")
    gain("p0 gain exactly 0.05, realistic noise", 0.05, "threshold")
    gain("p0 gain exactly 0.05, seed effect only (no cell noise)", 0.05, "threshold", cell_sd=0.0)
    C[-1] = dataclasses.replace(C[-1], fix=lambda res, _bc: tolerant(res, "gain_p0_uniform"))
    for d, truth in ((-0.32, "supported"), (0.0, "threshold"), (0.1, "refuted")):
        C.append(Construction(
            f"frozen - alpha_out = {d:g}", "frozen_minus_alpha_out", truth, f"difference {d:g}",
            lambda rng, n, d=d: to_runs(cells(rng, n, {"frozen": 5.5 + d, "alpha_out": 5.5}, **R))))

    # -- a diverged backprop seed (SmolLM2, Result 4b): one seed, at random, ends at 10.21
    def diverged(share_value, control="alpha_out"):
        gap = SMOL_PL - SMOL_BP

        def draw(rng, n):
            bp = SMOL_BP + rng.normal(0.0, 0.001, n)
            pl = rng.uniform(4.1, 4.2, n)  # plain ZeroLock ~4.1-4.2, the control paired with it
            ctl = pl - share_value * gap + rng.normal(0.0, 0.01, n)
            bp[rng.integers(n)] = SMOL_DIVERGED
            return to_runs({BP: dict(enumerate(map(float, bp))), PL: dict(enumerate(map(float, pl))),
                            control: dict(enumerate(map(float, ctl)))})
        return draw

    start = 4.037  # SmolLM2's test CE at omega^0: a run ending far above it left the regime (fix b)
    left = lambda t, s: any(t[n][s] > start + 1.0 for n in t if s in t[n])  # noqa: E731
    for sv, truth in ((0.8, "supported"), (0.1, "refuted"), (0.5, "threshold")):
        C.append(Construction(
            f"diverged backprop seed (10.21 vs 3.30), share {sv:g}", "share_alpha_out", truth,
            f"share {sv:g} of the stable gap 0.852", diverged(sv),
            fix=lambda res, _bc: share_linear(by_seed_of(res), "alpha_out", drop=left),
))
    C.append(Construction(
        "diverged backprop seed, frozen - alpha_out = -0.32 (no backprop in it)", "frozen_minus_alpha_out", "supported",
        "difference -0.32",
        lambda rng, n: (lambda v: to_runs({**v, BP: {s: (SMOL_DIVERGED if s == 0 else SMOL_BP) for s in range(n)}}))(
            cells(rng, n, {"frozen": 3.71, "alpha_out": 4.03}, **R))))

    # -- a gap near 0 on one seed, and a gap of the wrong sign on one seed
    def one_seed_gap(share_value, gap0):
        def draw(rng, n):
            v = cells(rng, n, share_means(share_value), **R)
            s0 = int(rng.integers(n))
            v[BP][s0] = v[PL][s0] - gap0
            return to_runs(v)
        return draw

    for gap0 in (0.001, -0.05):
        for sv in (0.8, 0.2):
            # truth of the share of the mean gap (n seeds, one with gap0): gain / ((n-1) * 0.45 + gap0) * n
            truth = "supported" if sv >= 0.5 else "refuted"
            C.append(Construction(
                f"one seed's gap {gap0:g} (others 0.45), share {sv:g}", "share_alpha_out", truth,
                f"share of the mean gap {sv * 0.45 * 3 / (2 * 0.45 + gap0):.2f} (3 seeds) .. "
                f"{sv * 0.45 * 10 / (9 * 0.45 + gap0):.2f} (10)",
                one_seed_gap(sv, gap0), fix=share_fix("alpha_out")))
    for sv, truth in ((0.8, "supported"), (0.2, "refuted"), (0.5, "threshold")):
        C.append(Construction(
            f"small gap 0.1, cell noise 0.03, share {sv:g}", "share_alpha_out", truth, f"share {sv:g}",
            lambda rng, n, sv=sv: to_runs(cells(rng, n, share_means(sv, gap=0.1), seed_sd=0.05, cell_sd=0.03)),
            fix=share_fix("alpha_out")))

    # -- both arms moving the same way: plain and the control shift together per seed, backprop does not
    for sv, truth in ((0.8, "supported"), (0.2, "refuted")):
        share(f"plain and alpha_out shift together (sd 0.15), share {sv:g}", sv, truth, shift=((PL, "alpha_out"), 0.15))
    gain("plain and p0 shift together (sd 0.15), gain 0.15", 0.15, "supported", shift=((PL, "p0_uniform"), 0.15))
    gain("plain and p0 shift together (sd 0.15), gain 0", 0.0, "refuted", shift=((PL, "p0_uniform"), 0.15))

    # -- large seed-to-seed variance: paired (one seed effect for all) against unpaired
    for sv, truth in ((0.8, "supported"), (0.2, "refuted")):
        share(f"paired seed effect sd 0.5, share {sv:g}", sv, truth, seed_sd=0.5, cell_sd=0.01)
    gain("paired seed effect sd 0.5, gain 0.15", 0.15, "supported", seed_sd=0.5, cell_sd=0.01)
    for sv, truth in ((0.8, "supported"), (0.2, "refuted"), (0.5, "threshold")):
        share(f"unpaired cell noise sd 0.5, share {sv:g}", sv, truth, seed_sd=0.0, cell_sd=0.5)
    gain("unpaired cell noise sd 0.5, gain 0.15", 0.15, "supported", seed_sd=0.0, cell_sd=0.5)
    gain("unpaired cell noise sd 0.5, gain 0", 0.0, "refuted", seed_sd=0.0, cell_sd=0.5)
    gain("unpaired cell noise sd 0.2, gain 0.05", 0.05, "threshold", seed_sd=0.0, cell_sd=0.2)

    # -- heavy tails and dependence across controls
    for sd in (0.02, 0.1):
        for sv, truth in ((0.8, "supported"), (0.2, "refuted"), (0.5, "threshold")):
            share(f"t(3) cell noise sd {sd:g}, share {sv:g}", sv, truth, dist="t3", cell_sd=sd)
    gain("t(3) cell noise sd 0.1, gain 0.05", 0.05, "threshold", dist="t3", cell_sd=0.1)
    for rho in (0.9, -0.9):
        for sv, truth in ((0.8, "supported"), (0.5, "threshold")):
            share(f"plain/alpha_out cell noise corr {rho:g} (sd 0.05), share {sv:g}", sv, truth,
                  cell_sd=0.05, pair=(PL, "alpha_out"), rho=rho)
        share(f"plain/backprop cell noise corr {rho:g} (sd 0.05), share 0.5", 0.5, "threshold",
              cell_sd=0.05, pair=(PL, BP), rho=rho)

    # -- the choice of eta_0: a control chosen on its grid's edge; selection bias over a flat grid
    def grid(name, lrs, ce_of_lr, rng, n, *, grid_seeds=(0, 1), run_sd=0.0, seed_eff=None):
        """Runs of ``name`` over ``lrs`` at the grid seeds, and the remaining seeds at the lr its
        grid seeds' validation chooses (as ``zerolock tune``: confirmation seeds at the choice only);
        a run's noise is shared by its validation and test splits."""
        seed_eff = seed_eff if seed_eff is not None else np.zeros(n)
        runs = []
        for lr in lrs:
            for s in grid_seeds:
                e = rng.normal(0.0, run_sd) if run_sd else 0.0
                runs.append(TunedRun(method_of(name), lr, s, ce_of_lr(lr) + seed_eff[s] + e,
                                     ce_of_lr(lr) + seed_eff[s] + e + rng.normal(0.0, 0.002), 20))
        scores = {lr: np.mean([r.validation for r in runs if r.lr == lr]) for lr in lrs}
        chosen = min(scores, key=lambda lr: (scores[lr], lr))
        for s in range(n):
            if s not in grid_seeds:
                e = rng.normal(0.0, run_sd) if run_sd else 0.0
                v = ce_of_lr(chosen) + seed_eff[s] + e
                runs.append(TunedRun(method_of(name), chosen, s, v, v + rng.normal(0.0, 0.002), 20))
        return runs

    def edge_alpha_out(rng, n):
        eff = rng.normal(0.0, 0.05, n)
        bp, pl = EMB_BP, EMB_BP + EMB_GAP
        # alpha_out keeps improving with eta_0 past the grid (0.003125..0.0125): share 0.3 at the
        # edge 0.0125, 0.8 at its own best (0.05, off the grid)
        ce = lambda lr: pl - EMB_GAP * (0.8 - 0.125 * math.log2(0.05 / lr) ** 2)  # noqa: E731
        v = cells(rng, n, {BP: bp, PL: pl}, seed_sd=0.0, cell_sd=0.01)
        v = {k: {s: x + eff[s] for s, x in d.items()} for k, d in v.items()}
        return {**to_runs(v), "alpha_out": grid("alpha_out", (0.003125, 0.00625, 0.0125), ce, rng, n, seed_eff=eff)}

    C.append(Construction(
        "alpha_out chosen on its grid's upper edge (share 0.3 there, 0.8 at its best off the grid)", "share_alpha_out",
        "supported", "share 0.8 at its own best eta_0", edge_alpha_out,
        fix=lambda res, _bc: edge_aware(res, "share_alpha_out")))

    def edge_plain(rng, n):
        eff = rng.normal(0.0, 0.05, n)
        best = EMB_BP + EMB_GAP
        # plain's best is below its grid (0.0015625..0.00625), 0.1 nats below the edge's CE; p0 = plain at their bests
        ce_pl = lambda lr: best + 0.1 * (math.log2(lr / 0.00078125)) / 1.0  # noqa: E731  (0.1 at the lower edge)
        ce_p0 = lambda lr: best + 0.1 * (math.log2(lr / 0.003125)) ** 2  # noqa: E731  (interior best at 0.003125)
        grid_lrs = (0.0015625, 0.003125, 0.00625)
        return {PL: grid(PL, grid_lrs, ce_pl, rng, n, seed_eff=eff, run_sd=0.005),
                "p0_uniform": grid("p0_uniform", grid_lrs, ce_p0, rng, n, seed_eff=eff, run_sd=0.005)}

    C.append(Construction(
        "plain chosen on its grid's lower edge (0.1 nats above its best), p0 = plain at their bests", "gain_p0_uniform",
        "refuted", "gain 0 at the own best eta_0 of each", edge_plain,
        fix=lambda res, _bc: edge_aware(res, "gain_p0_uniform")))

    def winners_curse(rng, n):
        eff = rng.normal(0.0, 0.05, n)
        best = EMB_BP + EMB_GAP
        flat = (0.0015625, 0.003125, 0.00625, 0.0125, 0.025, 0.05, 0.1)  # p0 uniform: 7 eta_0, all at one true CE
        sharp = (0.0015625, 0.003125, 0.00625)  # plain: one clear optimum
        return {PL: grid(PL, sharp, lambda lr: best + (0.0 if lr == 0.003125 else 0.3), rng, n, seed_eff=eff, run_sd=RUN_SD),
                "p0_uniform": grid("p0_uniform", flat, lambda lr: best - 0.05, rng, n, seed_eff=eff, run_sd=RUN_SD)}

    C.append(Construction(
        "p0 gain exactly 0.05; p0's 7-point grid flat (run noise 0.03 shared by its splits)", "gain_p0_uniform",
        "threshold", "gain 0.05 at every eta_0", winners_curse, reps=2000))

    # -- missing controls, one seed, no paired seeds, an infinite (DIVERGED) seed
    C.append(Construction("backprop missing", "share_alpha_out", "not run", "not testable",
                          lambda rng, n: to_runs({k: v for k, v in cells(rng, n, share_means(0.8), **R).items() if k != BP}),
                          seeds=(3,)))
    C.append(Construction("alpha_out missing (M1 and M2 both need it)", "frozen_minus_alpha_out", "not run", "not testable",
                          lambda rng, n: to_runs(cells(rng, n, {"frozen": 5.2, BP: EMB_BP, PL: 5.54}, **R)), seeds=(3,)))

    def no_common_seed(rng, n):
        v = to_runs(cells(rng, n, share_means(0.8), **R))
        v["alpha_out"] = [dataclasses.replace(r, lr=LR * (1 + i % 2)) for i, r in enumerate(v["alpha_out"])]
        return v  # each seed at one eta_0 only: no seed common to its grid, select() refuses

    C.append(Construction("alpha_out's grid has no seed common to every eta_0", "share_alpha_out", "not run",
                          "not testable", no_common_seed, seeds=(3,)))

    def few(k, offset=0):
        def draw(rng, n):
            v = cells(rng, n, share_means(0.8), **R)
            keep = list(range(offset, offset + k))
            ctl = cells(rng, offset + k, share_means(0.8), **R)["alpha_out"] if offset else v["alpha_out"]
            v["alpha_out"] = {s: ctl[s] for s in keep}
            return to_runs(v)
        return draw

    C.append(Construction("alpha_out with 1 seed (share 0.8)", "share_alpha_out", "supported", "share 0.8", few(1)))
    C.append(Construction("alpha_out with 2 seeds (share 0.8)", "share_alpha_out", "supported", "share 0.8", few(2)))
    C.append(Construction("alpha_out's seeds 10.. disjoint from the others' (share 0.8)", "share_alpha_out", "supported",
                          "share 0.8", few(3, offset=10), seeds=(3,)))

    def inf_seed(rng, n):
        v = cells(rng, n, share_means(0.8), **R)
        v[BP][int(rng.integers(n))] = math.inf  # a DIVERGED run: load_tuned gives +inf
        return to_runs(v)

    C.append(Construction("one backprop seed DIVERGED (+inf), share 0.8", "share_alpha_out", "supported", "share 0.8",
                          inf_seed))

    # -- the four decisive predictions at once, each exactly on its threshold
    def all_threshold(rng, n):
        means = {BP: EMB_BP, PL: EMB_BP + EMB_GAP, "alpha_out": EMB_BP + 0.5 * EMB_GAP,
                 "frozen": EMB_BP + 0.5 * EMB_GAP, "twin_half": EMB_BP + 0.5 * EMB_GAP,
                 "p0_uniform": EMB_BP + EMB_GAP - 0.05}
        return to_runs(cells(rng, n, means, **R))

    def family_score(by_control, _n):
        def any_decided(level):
            res = factorial(by_control, level)
            return "decided" if any(res.mechanisms[m] in ("supported", "refuted") for m in ("M1", "M2", "M3", "M4")) \
                else "undecided"
        return any_decided(0.95), any_decided(1.0 - 0.05 / 4)  # fix (f): Bonferroni over the 4 decisive

    C.append(Construction("M1-M4 each exactly on its threshold: any mechanism decided", "decisive", "threshold",
                          "every decisive contrast on its threshold", all_threshold, score=family_score))

    # -- relabelled inputs
    def relabel_score(by_control, _n, rng=np.random.default_rng(12345)):  # noqa: B008 (one seeded stream for every call)
        base = factorial(by_control)
        perm = {s: int(x) for s, x in zip(sorted({r.seed for rs in by_control.values() for r in rs}),
                                           rng.permutation(1000)[:100], strict=False)}
        names = list(by_control)
        rng.shuffle(names)
        other = factorial({n: [dataclasses.replace(r, seed=perm[r.seed]) for r in
                               (by_control[n][i] for i in rng.permutation(len(by_control[n])))] for n in names})
        # the readings, and the intervals up to the order of summation (a relabelling reorders the seeds)
        same = all(a.reading == b.reading and (a.estimate is None) == (b.estimate is None)
                   and (a.estimate is None or all(math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12) for x, y in
                                                  ((a.estimate.low, b.estimate.low), (a.estimate.high, b.estimate.high))))
                   for a, b in zip(base.predictions, other.predictions, strict=True))
        return ("same" if same else "differs"), ""

    def mixed(rng, n):
        means = {BP: EMB_BP, PL: EMB_BP + EMB_GAP, "alpha_out": 5.30, "frozen": 5.19, "alpha_one": 5.32,
                 "twin_half": 5.28, "twin_one": 5.17, "p0_uniform": 5.52}
        return to_runs(cells(rng, n, means, seed_sd=0.05, cell_sd=0.03))

    C.append(Construction("seeds relabelled, runs and controls reordered", "all", "same", "the original's readings",
                          mixed, score=relabel_score))
    C.append(Construction("directories' names permuted (analyze_factorial on config.json files)", "all", "same",
                          "the correctly named layout's readings", mixed, score=directory_score, seeds=(3,), reps=20))
    C.append(Construction("direct call with the keys plain <-> alpha_out swapped (runs carry their configs)", "all",
                          "same", "the readings of the runs' own settings", mixed, score=swapped_keys_score, seeds=(3,),
                          reps=20))
    return C


# ---------------------------------------------------------------- directory layouts (relabelling)

RECIPES = Path(__file__).resolve().parents[1] / "zerolock_theory" / "recipes" / "diagnosis"
RECIPE_OF = {BP: "embedded_backprop_wide", **{n: f"embedded_{n}" for n in
                                             ("plain", "alpha_out", "frozen", "alpha_one", "twin_half", "twin_one",
                                              "p0_uniform")}}
_CONFIG_CACHE: dict[str, dict] = {}


def recipe_config(recipe: str) -> dict:
    if recipe not in _CONFIG_CACHE:
        from zerolock_theory.config import TrainConfig, read_recipe
        raw = read_recipe(RECIPES / f"{recipe}.toml")
        method = raw["tune"]["methods"][0]
        sections = {k: v for k, v in raw.items() if k in ("model", "data", "method", "optim", "run")}
        sections["method"] = {**sections.get("method", {}), "name": "backprop" if method == "backprop" else "zerolock"}
        _CONFIG_CACHE[recipe] = TrainConfig.from_dict(sections).to_dict()
    return json.loads(json.dumps(_CONFIG_CACHE[recipe]))


def write_layout(root: Path, values: Values, dir_name: dict[str, str]) -> None:
    for control, by_seed in values.items():
        tune = root / dir_name[control]
        tune.mkdir(parents=True)
        (tune / "tune.json").write_text("{}")
        for seed, value in by_seed.items():
            config = recipe_config(RECIPE_OF[control])
            config["optim"]["lr"], config["run"]["seed"], config["run"]["steps"] = LR, seed, 20
            run = tune / f"run_lr-{LR}_seed-{seed}"
            run.mkdir()
            (run / "config.json").write_text(json.dumps(config))
            (run / "metrics.jsonl").write_text(json.dumps({"step": 19, "eval/ce": value, "test/ce": value}) + "\n")


def directory_score(by_control, _n, rng=np.random.default_rng(777)):  # noqa: B008 (one seeded stream for every call)
    values = values_of(by_control)
    names = list(values)
    shuffled = [names[i] for i in rng.permutation(len(names))]
    tmp = Path(tempfile.mkdtemp(prefix="break_factorial_"))
    try:
        write_layout(tmp / "named", values, {n: RECIPE_OF[n] for n in names})
        # every directory carries another control's recipe name
        write_layout(tmp / "permuted", values, {n: RECIPE_OF[m] for n, m in zip(names, shuffled, strict=True)})
        a, b = analyze_factorial(tmp / "named"), analyze_factorial(tmp / "permuted")
        direct = factorial(by_control)
        same = (a.predictions == b.predictions and a.rows == b.rows
                and [p.reading for p in a.predictions] == [p.reading for p in direct.predictions])
        return ("same" if same else "differs"), ""
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def swapped_keys_score(by_control, _n):
    """``factorial`` itself, called with two keys swapped on runs that carry their config.json:
    does it read the settings (as ``load_factorial`` does) or trust the keys?"""
    values = values_of(by_control)
    tmp = Path(tempfile.mkdtemp(prefix="break_factorial_"))
    try:
        write_layout(tmp, values, {n: RECIPE_OF[n] for n in values})
        from analyses.versus.tuning import load_tuned
        loaded = {n: [r for r in load_tuned(tmp / RECIPE_OF[n])] for n in values}
        swapped = {**loaded, PL: loaded["alpha_out"], "alpha_out": loaded[PL]}
        a = factorial(loaded)
        try:
            b = factorial(swapped)
        except ValueError:  # refused: the runs' own settings make other controls (since 2026-12-07)
            return "refused", ""
        return ("same" if [p.reading for p in a.predictions] == [p.reading for p in b.predictions] else "differs"), ""
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- scoring

STATES = {"supported": {"supported"}, "refuted": {"refuted"}, "threshold": {"undecided"}, "not run": {"not run"},
          "same": {"same", "refused"}}
CONTRADICTS = {"supported": {"refuted"}, "refuted": {"supported"}, "threshold": {"supported", "refuted", "decided"},
               "not run": {"supported", "refuted"}, "same": {"differs"}}


def verdict(truth: str, shares: Counter, reps: int) -> tuple[float, float, str]:
    states = sum(v for k, v in shares.items() if k in STATES[truth] or (truth == "threshold" and k == "undecided")) / reps
    wrong = sum(v for k, v in shares.items() if k in CONTRADICTS[truth]) / reps
    if truth == "threshold":
        allow = 0.05 + 2.0 * math.sqrt(0.05 * 0.95 / reps)
        ok_states, ok_wrong = states >= 1.0 - allow, wrong <= allow
    else:
        ok_states, ok_wrong = states >= 0.95, wrong <= 0.05
    if ok_states and ok_wrong:
        return states, wrong, "agrees"
    return states, wrong, "breaks: wrong words" if not ok_wrong else "breaks: undecided"


def fmt(shares: Counter, reps: int) -> str:
    order = ("supported", "refuted", "undecided", "decided", "not testable", "not run", "same", "differs", "refused")
    return ", ".join(f"{k} {shares[k] / reps:.2f}" for k in order if shares.get(k))


def run(constructions: list[Construction], reps: int, seed: int, seed_counts: tuple[int, ...] | None) -> list[dict]:
    rows = []
    for c in constructions:
        score = c.score or default_score(c)
        for n in (seed_counts or c.seeds):
            if c.seeds == (3,) and n != 3:
                continue
            k = c.reps or (max(reps, THRESHOLD_REPS) if c.truth == "threshold" else reps)
            rng = np.random.default_rng([seed, zlib.crc32(c.name.encode()), n])
            got, fixed = Counter(), Counter()
            t0 = time.time()
            for _ in range(k):
                a, b = score(c.draw(rng, n), n)
                got[a] += 1
                if b:
                    fixed[b] += 1
            states, wrong, word = verdict(c.truth, got, k)
            row = {"construction": c.name, "seeds": n, "truth": c.truth, "true_value": c.true_value, "reps": k,
                   "outcome": fmt(got, k), "states": states, "contradicts": wrong, "verdict": word,
                   "seconds": time.time() - t0}
            if fixed:
                fs, fw, fword = verdict(c.truth, fixed, k)
                row.update(fix=fmt(fixed, k), fix_verdict=fword)
            rows.append(row)
            print(f"  [{time.time() - t0:5.1f}s] {c.name} ({n} seeds): {row['outcome']} -> {word}"
                  + (f" | fix: {row['fix']} -> {row['fix_verdict']}" if fixed else ""), file=sys.stderr)
    return rows


def short(verdict: str) -> str:
    return {"agrees": "agrees", "breaks: wrong words": "breaks: wrong words", "breaks: undecided": "breaks: undecided"}[verdict]


def table(rows: list[dict]) -> str:
    """Table 1: every construction at 3 seeds. Table 2: the constructions also run at 5 and 10 seeds."""
    out = ["| construction | truth | outcome shares (3 seeds) | states truth | contradicts | agrees? | with the fix |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["seeds"] != 3:
            continue
        fix = f"{r['fix']}: {short(r['fix_verdict'])}" if "fix" in r else ""
        out.append(f"| {r['construction']} | {r['truth']} ({r['true_value']}) | {r['outcome']} | {r['states']:.2f} | "
                   f"{r['contradicts']:.2f} | {short(r['verdict'])} | {fix} |")
    out += ["", "| construction | truth | 5 seeds | 10 seeds | with the fix, 10 seeds |", "|---|---|---|---|---|"]
    by_name: dict[str, dict[int, dict]] = {}
    for r in rows:
        by_name.setdefault(r["construction"], {})[r["seeds"]] = r
    for name, per in by_name.items():
        if 5 not in per or 10 not in per:
            continue
        cell = lambda r: f"{r['outcome']}: {short(r['verdict'])}"  # noqa: E731
        fix = f"{per[10]['fix']}: {short(per[10]['fix_verdict'])}" if "fix" in per[10] else ""
        out.append(f"| {name} | {per[5]['truth']} | {cell(per[5])} | {cell(per[10])} | {fix} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, nargs="*", default=None, help="seed counts (default: each construction's)")
    ap.add_argument("--only", default="", help="constructions whose name contains this")
    ap.add_argument("--json", default="", help="also write the rows here")
    args = ap.parse_args(argv)
    constructions = [c for c in construct_all() if args.only.lower() in c.name.lower()]
    t0 = time.time()
    rows = run(constructions, args.reps, args.seed, tuple(args.seeds) if args.seeds else None)
    print(table(rows))
    n_break = sum(r["verdict"] != "agrees" for r in rows)
    print(f"\n{len(rows) - n_break} of {len(rows)} rows agree; {n_break} break "
          f"({sum(r['verdict'] == 'breaks: wrong words' for r in rows)} with wrong words). {time.time() - t0:.0f} s.")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
