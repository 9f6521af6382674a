"""Seeds chosen by power: a pilot group measures the rate rows' noise, their power function says how
many seeds reach 80%, and the primary groups run that many (``zerolock verify --seeds-by-power``).

The rows whose power the verdict table prints are Theorem 1 (a)'s rates: R (ZeroLock reverse) and
R-bar (ZeroLock forward). Each row already measures its group's noise and lag-1 autocorrelation
(``analyses.theorem1.rate.describe_rate``) and states the seeds that would reach 80% power at them
(``analyses.theorem1.rate_power.seeds_for``). This module runs that same code on a **pilot**: the
two ZeroLock groups at the suite's η_0 and horizon, on their own seeds (``PILOT_FIRST_SEED`` + i,
disjoint from the verdict's), without probes. The pilot's runs live under ``out/power_pilot`` and
never enter a verdict: choosing the seed count from the verdict's own seeds and adding more after
looking would be a sequential design, which the rows' intervals do not allow for.

The choice is the largest count any row needs, at least ``MIN_SEEDS`` and at most ``max_seeds``
(a row whose power stays below 80% at every candidate count asks for the cap).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zerolock_theory.app.workflows.suite_spec import VARIANTS, SuiteSpec, replicate
from zerolock_theory.app.workflows.sweep import GridPoint

__all__ = ["CANDIDATES", "MIN_SEEDS", "PILOT_FIRST_SEED", "POWER_ROWS", "PowerChoice", "choose_seeds",
           "pilot_points", "pilot_seeds", "power_rows", "seeds_by_power", "with_seed_count"]

PILOT_FIRST_SEED = 1000
"""The pilot's seeds are ``PILOT_FIRST_SEED``, ``PILOT_FIRST_SEED`` + 1, ...: none is a verdict's seed."""
MIN_SEEDS = 3
"""The fewest seeds a seed-level interval takes (``analyses.stats.seeds.MIN_SEEDS``)."""
CANDIDATES = (3, 5, 10, 20, 40)
"""Seed counts scanned for 80% power (the rows' own statement scans 5, 10, 20, 40; 3 added: a
quiet group needs no more than a verdict's minimum)."""
POWER_ROWS = (("theorem1_rate_reverse", "R", "zerolock-reverse", "reverse"),
              ("theorem1_rate_forward", "R-bar", "zerolock-forward", "forward"))
"""The rows with a power statement: claim key, surrogate, suite group, ZeroLock direction."""
TARGET = 0.8


@dataclass(frozen=True)
class PowerChoice:
    """What the pilot measured and what it chose: one row per power row (``claim``, ``surrogate``,
    ``noise``, ``phi``, ``horizon``, ``pilot_seeds``, ``needed``: the fewest of ``CANDIDATES`` with
    power >= 80%, None when none reaches it), the cap and the chosen seed count."""

    rows: list[dict[str, Any]]
    max_seeds: int
    chosen: int
    pilot: list[int]

    def sentence(self) -> str:
        """``10 seeds, chosen by a pilot for 80% power; measured noise ...`` (the scope line's words)."""
        parts = []
        for row in self.rows:
            noise = "not measured" if row["noise"] is None else f"{row['noise']:.2g} x its mean level"
            need = (f"{row['needed']} seeds" if row["needed"] is not None
                    else f"{max(CANDIDATES)} seeds would not reach 80%")
            parts.append(f"{row['surrogate']}: noise {noise}, needs {need}")
        capped = " (capped)" if any(r["needed"] is None or r["needed"] > self.max_seeds for r in self.rows) else ""
        return (f"{self.chosen} seeds{capped}, chosen by a pilot for 80% power (pilot seeds "
                f"{self.pilot[0]}-{self.pilot[-1]}, not in any verdict; cap {self.max_seeds}); measured "
                + "; ".join(parts))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def pilot_seeds(spec: SuiteSpec) -> list[int]:
    """The pilot's seeds: ``spec.power_pilot_seeds`` of them from ``PILOT_FIRST_SEED``."""
    return [PILOT_FIRST_SEED + i for i in range(spec.power_pilot_seeds)]


def pilot_points(spec: SuiteSpec, lrs: dict[str, float]) -> list[GridPoint]:
    """The pilot group of each power row: its ZeroLock direction at the suite's η_0 and horizon, on
    the pilot's seeds (no probes: the rows read the training step's own Ĝ_t)."""
    return [GridPoint(f"{label}_lr-{lrs[label]:g}_seed-{seed}",
                      (*VARIANTS[label](spec), *replicate(seed), ("optim.lr", lrs[label])))
            for _, _, label, _ in POWER_ROWS for seed in pilot_seeds(spec)]


def power_rows(run_dirs: Sequence[Path], level: float = 0.95) -> list[dict[str, Any]]:
    """Each power row's noise, autocorrelation and the seeds it needs for 80% power, measured on
    ``run_dirs`` by the row's own code (``group_rate`` and ``seeds_for``)."""
    from analyses.io import load_run
    from analyses.registry import SuiteInputs
    from analyses.results import NotMeasured
    from analyses.runinfo import run_info
    from analyses.theorem1.claim_rate import group_rate
    from analyses.theorem1.rate_power import seeds_for

    runs = [load_run(p) for p in run_dirs]
    table = [(run_info(r, Path(p).name), r.metrics) for r, p in zip(runs, run_dirs, strict=True)]
    inputs = SuiteInputs(table, [x for x in table if x[0].method == "zerolock"], [], level)
    rows = []
    for claim, surrogate, _, direction in POWER_ROWS:
        try:
            rate = group_rate(inputs, "zerolock", direction, power=False).rate
        except (NotMeasured, ValueError):
            rate = None
        noise = None if rate is None else rate.noise
        needed = None
        if noise is not None:
            needed = seeds_for(noise, rate.horizon, target=TARGET, candidates=CANDIDATES, phi=rate.phi)
        rows.append({"claim": claim, "surrogate": surrogate, "noise": noise,
                     "phi": None if rate is None else rate.phi, "horizon": None if rate is None else rate.horizon,
                     "pilot_seeds": None if rate is None else rate.seeds, "needed": needed})
    return rows


def choose_seeds(rows: Sequence[dict[str, Any]], max_seeds: int) -> int:
    """The largest count any row needs (a row that no candidate brings to 80%, or whose noise the
    pilot could not measure: the cap), at least ``MIN_SEEDS``, at most ``max_seeds``."""
    if max_seeds < MIN_SEEDS:
        raise ValueError(f"max_seeds={max_seeds}: must be >= {MIN_SEEDS} (a verdict needs {MIN_SEEDS} seeds)")
    wanted = [max_seeds if r["needed"] is None else int(r["needed"]) for r in rows]
    return max(MIN_SEEDS, min(max_seeds, max(wanted, default=MIN_SEEDS)))


def seeds_by_power(spec: SuiteSpec, base: dict[str, Any], lrs: dict[str, float], out: Path, *,
                   run: Callable[[dict[str, Any], list[GridPoint], Path], list[Path]],
                   log: Callable[[str], None] = print) -> tuple[SuiteSpec, PowerChoice]:
    """Run the pilot under ``out`` (``run(base, points, out)``: the suite's runner), measure the rows'
    noise, and return the suite with ``seeds`` set to the chosen count, and the choice.

    The suite's own seeds come first; more are numbered on from the largest (``with_seed_count``)."""
    bare = {**base, "probes": {}, "run": {**base["run"], "global_grad_every": 0}}
    dirs = run(bare, pilot_points(spec, lrs), out)
    rows = power_rows(dirs)
    chosen = choose_seeds(rows, spec.max_seeds)
    choice = PowerChoice(rows, spec.max_seeds, chosen, pilot_seeds(spec))
    log(f"seeds by power: {choice.sentence()}")
    return with_seed_count(spec, chosen), choice


def with_seed_count(spec: SuiteSpec, count: int) -> SuiteSpec:
    """The suite with ``count`` seeds: its own first, more numbered on from the largest."""
    seeds = list(spec.seeds[:count])
    while len(seeds) < count:
        seeds.append(max(seeds, default=-1) + 1)
    return dataclasses.replace(spec, seeds=tuple(seeds))
