"""The progress estimate prices each step by the probes due at it, and calibrates that price on the clock.

Known answers on a replayed clock (no timing): a suite shaped like ``--quick`` (cheap pilots, then
ZeroLock runs whose every step is scaled and backprop runs without the probe) where a scaled step
takes 8 plain steps' time. Priced steps put the estimate after 10 % of the work within 2x of the
true total; pricing every step as a plain one does not.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from zerolock_theory.app.workflows.progress import (
    GLOBAL,
    PROOF,
    SCALED_POINT,
    SETUP_STEPS,
    UNPROBED,
    CostFit,
    PlannedRun,
    StepExtra,
    SuiteProgress,
)


class Timeline:
    """Runs one after another on one process; a run's step t takes ``plain`` × weight seconds plus
    ``price`` seconds per extra unit due at t, its setup ``SETUP_STEPS`` × weight × ``plain``."""

    def __init__(self, runs: list[PlannedRun], plain: float, price: float) -> None:
        self.ends: dict[Path, list[float]] = {}
        now = 0.0
        for run in runs:
            now += SETUP_STEPS * run.weight * plain + run.start * plain
            ends = []
            for t in range(run.steps):
                now += run.weight * plain + price * sum(x.units for x in run.extras if t % x.every == 0)
                ends.append(now)
            self.ends[run.run_dir] = ends
        self.total = now
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def steps(self, run: PlannedRun) -> int:
        return sum(end <= self.now for end in self.ends[run.run_dir])


def quick_like(tmp: Path) -> list[PlannedRun]:
    """Six 10-step pilots without probes, then 6 ZeroLock runs scaled at every step and 3 backprop runs."""
    scaled = StepExtra(1, SCALED_POINT * 7 * 3)  # 7 factors x 3 directions: a scaled step is 1 + 5.25 plain steps
    pilots = [PlannedRun(tmp / "pilot" / f"p{i}", 10, 0.5) for i in range(6)]
    zerolock = [PlannedRun(tmp / "runs" / f"zl{i}", 32, 1.0, extras=(scaled,)) for i in range(6)]
    backprop = [PlannedRun(tmp / "runs" / f"bp{i}", 32, 1.0) for i in range(3)]
    return [*pilots, *zerolock, *backprop]


def first_estimate(runs: list[PlannedRun], timeline: Timeline) -> float:
    """The bar's estimated total at 10 % of the work, polled once a (replayed) second."""
    bar = SuiteProgress(runs, enabled=False, clock=timeline.clock, counter=timeline.steps, poll=False)
    try:
        while bar.first_estimate is None and timeline.now < timeline.total:
            timeline.now += 1.0
            bar.update()
        assert bar.first_estimate is not None
        return bar.first_estimate
    finally:
        bar.close()


def test_scaled_steps_priced_at_8_plain_steps_put_the_estimate_within_2x(tmp_path: Path) -> None:
    runs = quick_like(tmp_path)
    truth = Timeline(runs, plain=1.0, price=(8.0 - 1.0) / (SCALED_POINT * 21))  # a scaled step: 8 plain steps
    assert sum(truth.ends[r.run_dir][-1] - truth.ends[r.run_dir][-2] for r in runs[6:7]) == pytest.approx(8.0)
    priced = first_estimate(runs, truth)
    truth.now = 0.0
    flat = first_estimate([replace(r, extras=()) for r in runs], truth)
    assert 0.5 <= priced / truth.total <= 2.0, (priced, truth.total)
    assert not 0.5 <= flat / truth.total <= 2.0, (flat, truth.total)  # the uniform price: far too short
    assert flat / truth.total < 0.3


@pytest.mark.parametrize("factor", [0.3, 3.0])
def test_the_clock_calibrates_a_wrong_model_price(tmp_path: Path, factor: float) -> None:
    """Extras that take ``factor`` times their model price: the fit finds the factor, and the estimate
    after 10 % stays within 2x."""
    runs = quick_like(tmp_path)
    truth = Timeline(runs, plain=1.0, price=factor)
    bar = SuiteProgress(runs, enabled=False, clock=truth.clock, counter=truth.steps, poll=False)
    try:
        while bar.first_estimate is None:
            truth.now += 1.0
            bar.update()
        assert bar.fit.ratio() == pytest.approx(factor, rel=0.15)
        assert 0.5 <= bar.first_estimate / truth.total <= 2.0, (bar.first_estimate, truth.total)
    finally:
        bar.close()


def test_cost_fit_reads_the_price_ratio_only_once_the_mix_moves() -> None:
    fit = CostFit()
    for t in range(1, 6):  # extras a fixed share of the work: nothing to tell them apart by
        fit.add(2.0 * t + 6.0 * t, t, t)
    assert fit.ratio() == 1.0
    for t in range(1, 6):  # then base alone for a while
        fit.add(8.0 * 5 + 2.0 * t, 5 + t, 5)
    assert fit.ratio() == pytest.approx(3.0)


def test_extras_of_the_quick_suites_runs() -> None:
    """ZeroLock runs: the scaling probe at every step (7 factors x 3 directions), the proof probe, the
    global gradient every 5 steps; backprop and the pilots' backprop: none; a ZeroLock pilot: the global gradient."""
    from zerolock_theory.app.workflows.suite_spec import QUICK, base_config
    from zerolock_theory.app.workflows.verify import _plan

    plan = _plan(QUICK, base_config(QUICK, "embedded", "embedded", "cpu", "float32", None), Path("out"),
                 {"zerolock-forward": 0.05, "zerolock-reverse": 0.05, "backprop": 0.05})
    by_name = {r.run_dir.name.split("_")[0]: r for r in plan if r.run_dir.parent.name == "runs"}
    assert by_name["zerolock-reverse"].extras == (StepExtra(1, SCALED_POINT * 21), StepExtra(1, PROOF),
                                                  StepExtra(5, GLOBAL))
    assert by_name["backprop"].extras == ()
    pilots = _plan(QUICK, base_config(QUICK, "embedded", "embedded", "cpu", "float32", None), Path("out"))
    assert {r.run_dir.name.split("_")[0]: r.extras for r in pilots if r.run_dir.parent.parent.name == "pilot"} == {
        "zerolock-forward": (StepExtra(5, GLOBAL),), "zerolock-reverse": (StepExtra(5, GLOBAL),), "backprop": ()}
    run = by_name["zerolock-reverse"]  # 32 steps: 32 scaled, 32 proof, 7 global (steps 0, 5, ..., 30)
    assert run.cost == pytest.approx((SETUP_STEPS + 32) * run.weight + 32 * SCALED_POINT * 21 + 32 * PROOF + 7 * GLOBAL)
    assert StepExtra(5, 1.0).due(0) == 0 and StepExtra(5, 1.0).due(1) == 1 and StepExtra(5, 1.0).due(6) == 2


def test_seeds_by_power_plans_the_power_pilot_and_the_cap_until_the_choice() -> None:
    """Before the choice the bar's plan holds the power pilot (3 seeds per ZeroLock group, unprobed)
    and the primary groups at ``max_seeds``; after it, the pilot still (its work is this session's)
    and the chosen count."""
    from dataclasses import replace as with_

    from zerolock_theory.app.workflows.power import with_seed_count
    from zerolock_theory.app.workflows.suite_spec import QUICK, base_config
    from zerolock_theory.app.workflows.verify import _plan

    spec = with_(QUICK, seeds_by_power=True, max_seeds=7)
    base = base_config(spec, "embedded", "embedded", "cpu", "float32", None)
    lrs = {"zerolock-forward": 0.05, "zerolock-reverse": 0.05, "backprop": 0.05}

    def groups(plan):
        runs = [r.run_dir for r in plan if r.run_dir.parent.name == "runs"]
        return {m: sum(d.name.startswith(m + "_") for d in runs) for m in ("zerolock-forward", "zerolock-reverse")}

    before = _plan(spec, base, Path("out"), lrs)
    power = [r for r in before if r.run_dir.parent.name == "power_pilot"]
    assert sorted(r.run_dir.name for r in power) == sorted(
        f"zerolock-{d}_lr-0.05_seed-{s}" for d in ("forward", "reverse") for s in (1000, 1001, 1002))
    probed = {r.run_dir.name.split("_")[0]: r.weight for r in before if r.run_dir.parent.name == "runs"}
    assert all(r.weight == pytest.approx(UNPROBED * probed[r.run_dir.name.split("_")[0]]) for r in power)
    assert groups(before) == {"zerolock-forward": 7, "zerolock-reverse": 7}
    after = _plan(with_seed_count(spec, 4), base, Path("out"), lrs, seeds_chosen=True)
    assert [r.run_dir for r in after if r.run_dir.parent.name == "power_pilot"] == [r.run_dir for r in power]
    assert groups(after) == {"zerolock-forward": 4, "zerolock-reverse": 4}
    assert not any(r.run_dir.parent.name == "power_pilot" for r in _plan(QUICK, base, Path("out"), lrs))
