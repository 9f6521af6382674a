"""The suite's progress bar: run counts, the cost-weighted estimate, resumed work and the resume lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from zerolock_theory.app.workflows.progress import (
    SETUP_STEPS,
    PlannedRun,
    SuiteProgress,
    steps_done,
)
from zerolock_theory.training.state import MARKER


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def log_steps(run: PlannedRun, steps: int) -> None:
    run.run_dir.mkdir(parents=True, exist_ok=True)
    (run.run_dir / "metrics.jsonl").write_text("".join(f'{{"step": {i}}}\n' for i in range(steps)))


def complete(run: PlannedRun) -> None:
    log_steps(run, run.steps)
    final = run.run_dir / "checkpoints" / f"step_{run.steps:08d}"
    final.mkdir(parents=True)
    (final / MARKER).write_text("")


def test_steps_done_reads_the_log_and_the_final_checkpoint(tmp_path: Path) -> None:
    run = PlannedRun(tmp_path / "r", 20, 1.0)
    assert steps_done(run) == 0
    log_steps(run, 7)
    assert steps_done(run) == 7
    log_steps(run, 25)  # more records than steps (never in practice): capped
    assert steps_done(run) == 20


def test_estimate_is_elapsed_times_cost_left_over_cost_done(tmp_path: Path) -> None:
    clock = Clock()
    a, b = PlannedRun(tmp_path / "a", 90, 1.0), PlannedRun(tmp_path / "b", 40, 2.0)  # costs 100 and 100
    progress = SuiteProgress([a, b], enabled=False, clock=clock)
    try:
        assert progress.remaining() is None and progress.status() == (0, 0.0, 200.0)
        clock.now = 30.0
        log_steps(a, 10)  # setup + 10 steps of a: 20 of 200 = 10 % done
        progress.update()
        assert progress.status() == (0, 20.0, 200.0)
        assert progress.remaining() == pytest.approx(30.0 * 180 / 20)
        assert progress.first_estimate == pytest.approx(30.0 + 30.0 * 180 / 20)
        clock.now = 100.0
        complete(a)
        progress.update()
        assert progress.bar.n == 1 and progress.remaining() == pytest.approx(100.0 * 100 / 100)
        assert progress.first_estimate == pytest.approx(300.0)  # kept from the 10 % mark
        assert "estimate / actual = 3.00" in progress.summary()
    finally:
        progress.close()


def test_work_done_before_a_resume_does_not_count_as_this_sessions_pace(tmp_path: Path) -> None:
    clock = Clock()
    done, todo = PlannedRun(tmp_path / "runs" / "done", 90, 1.0), PlannedRun(tmp_path / "runs" / "todo", 90, 1.0)
    complete(done)
    lines: list[str] = []
    progress = SuiteProgress([done, todo], resumed=True, enabled=False, clock=clock)
    try:
        progress.announce("runs", lines.append)
        assert lines == ["resuming: 1 of 2 runs already complete, skipped"]
        assert progress.remaining() is None  # nothing done in this session yet
        clock.now = 50.0
        log_steps(todo, 40)  # 50 of the 100 left
        assert progress.remaining() == pytest.approx(50.0)
    finally:
        progress.close()


def test_replanning_keeps_the_base_and_pilots_are_announced_apart(tmp_path: Path) -> None:
    pilot = PlannedRun(tmp_path / "pilot" / "zerolock-forward" / "p", 10, 0.5)
    run = PlannedRun(tmp_path / "runs" / "r", 10, 1.0)
    complete(pilot)
    lines: list[str] = []
    progress = SuiteProgress([pilot], resumed=True, enabled=False, clock=Clock())
    try:
        progress.announce("pilot", lines.append)
        progress.plan([pilot, run])
        progress.announce("runs", lines.append)
        assert lines == ["resuming: 1 pilot run(s) already complete, skipped",
                         "resuming: 0 of 1 runs already complete, skipped"]
        assert progress.status() == (1, pilot.cost, pilot.cost + run.cost)
        assert pilot.cost == (SETUP_STEPS + 10) * 0.5
    finally:
        progress.close()
    quiet: list[str] = []
    fresh = SuiteProgress([pilot], enabled=False)  # not resumed: announces nothing
    fresh.announce("pilot", quiet.append)
    fresh.close()
    assert quiet == []


def test_verify_plan_orders_each_phase_as_it_starts(tmp_path: Path) -> None:
    """The pilot chains start side by side from the largest eta_0, the suite's runs longest first; with 2 jobs
    the first 2 runs of each phase wait for a new process."""
    from zerolock_theory.app.workflows.progress import START_STEPS, UNPROBED
    from zerolock_theory.app.workflows.suite_spec import QUICK, base_config
    from zerolock_theory.app.workflows.verify import _plan

    base = base_config(QUICK, "embedded", "embedded", "cpu", "float32", None)
    plan = _plan(QUICK, base, tmp_path, jobs=2)
    pilots = [r for r in plan if r.run_dir.parent.parent.name == "pilot"]
    assert [r.run_dir.name for r in pilots[:3]] == [f"{m}_lr-0.1_seed-0" for m in
                                                     ("zerolock-forward", "zerolock-reverse", "backprop")]
    assert len(pilots) == 3 * len(QUICK.lr_grid) and len(plan) == len(pilots) + 9
    assert [r.start for r in pilots] == [START_STEPS, START_STEPS] + [0.0] * (len(pilots) - 2)
    runs = plan[len(pilots):]
    assert [r.run_dir.name.split("_")[0] for r in runs[:3]] == ["zerolock-reverse"] * 3  # costliest first
    assert [r.start for r in runs] == [START_STEPS, START_STEPS] + [0.0] * 7
    assert pilots[0].weight == UNPROBED and runs[0].weight == 1.4 and runs[0].steps == QUICK.steps
    assert all(r.start == 0.0 for r in _plan(QUICK, base, tmp_path, jobs=1))
    (tmp_path / "pilot" / "backprop" / "backprop_lr-0.1_seed-0").mkdir(parents=True)  # the pilot ran one run
    assert [r.run_dir.name for r in _plan(QUICK, base, tmp_path, {"zerolock-forward": 0.05, "zerolock-reverse": 0.05,
                                                                     "backprop": 0.05})][:1] == ["backprop_lr-0.1_seed-0"]
