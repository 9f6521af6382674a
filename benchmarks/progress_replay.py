"""Replay the suite's progress estimate over a finished ``zerolock verify`` directory (not a test).

How far was the estimate of the suite's progress bar (``workflows.progress``) after 10 % of the
work? ``verify`` prints it at the end of every suite; this script recomputes it afterwards from
the run directories' file times, to compare cost models on the same run: each run's steps are
spread evenly between its ``config.json`` (written when its setup ends) and the last write of
its ``metrics.jsonl`` (its last step); time 0 is the verify directory's ``manifest.json``.
The replay runs the suite's own ``SuiteProgress`` (its calibration included) on a clock that
ticks once a second. Printed per cost model (every step priced as a plain one, or each step
priced by the probes due at it; with and without the process start-up ``START_STEPS``): when
10 % of the cost was done, the estimated total time then, the actual time of the runs and
their ratio::

    python3 benchmarks/progress_replay.py runs/verify-quick          # a --quick suite
    python3 benchmarks/progress_replay.py runs/verify --config verify_full --jobs 2
    python3 benchmarks/progress_replay.py runs/verify --config verify_full --set run.checkpoint_every=250
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import replace
from pathlib import Path

from zerolock_theory.app.workflows import progress
from zerolock_theory.app.workflows.suite_spec import suite_base
from zerolock_theory.app.workflows.verify import _plan
from zerolock_theory.app.workflows.verify_config import load_suite


def _times(out: Path, plan: list[progress.PlannedRun], t0: float) -> dict[Path, tuple[float, float]]:
    found = {}
    for run in plan:
        if (run.run_dir / "config.json").is_file() and (run.run_dir / "metrics.jsonl").is_file():
            found[run.run_dir] = ((run.run_dir / "config.json").stat().st_mtime - t0,
                                  (run.run_dir / "metrics.jsonl").stat().st_mtime - t0)
    return found


def _steps_at(run: progress.PlannedRun, t: float, times: dict[Path, tuple[float, float]]) -> int:
    if run.run_dir not in times or t < times[run.run_dir][0]:
        return 0
    start, end = times[run.run_dir]
    return min(run.steps, int(run.steps * (t - start) / max(end - start, 1e-9)))


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def estimate(plans: list[tuple[float, list[progress.PlannedRun]]], steps_at, actual: float) -> tuple[float, float] | None:
    """(time, estimated total) at the first second where a tenth of the work is done: the suite's
    own ``SuiteProgress`` (calibration included), polled once a second on a replayed clock, its plan
    replaced as the suite replaced it (``plans``: (from time, plan), the first from 0);
    ``steps_at(run, t)`` is the run's logged steps at time t."""
    clock = _Clock()
    bar = progress.SuiteProgress(plans[0][1], enabled=False, clock=clock, counter=lambda r: steps_at(r, clock.now),
                                 poll=False)
    later = list(plans[1:])
    try:
        for t in range(1, int(actual) + 1):
            clock.now = float(t)
            while later and t >= later[0][0]:
                bar.plan(later.pop(0)[1])
            bar.update()
            if bar.first_estimate is not None:
                return float(t), bar.first_estimate
    finally:
        bar.close()
    return None


def uniform(plan: list[progress.PlannedRun]) -> list[progress.PlannedRun]:
    """The plan with every step priced as a plain one (no extras)."""
    return [replace(r, extras=()) for r in plan]


def replay(out: Path, config: str, jobs: int, sets: list[str] | None = None) -> list[str]:
    """One line per cost model: steps priced uniformly or with the probes due at each, with and
    without ``START_STEPS``. A suite that chose its seeds by power is replayed as the suite planned
    it: the power pilot and the cap from the η_0 pilot's end, the chosen seeds from the choice."""
    spec, tables = load_suite(config, list(sets or []))
    saved = json.loads((out / "verify.json").read_text(encoding="utf-8"))
    base = suite_base(spec, "embedded", "embedded", "cpu", "float32", None, tables)
    base["run"]["steps"] = saved["base"]["run"]["steps"]
    t0 = (out / "manifest.json").stat().st_mtime
    chosen_at = (out / "verify.json").stat().st_mtime - t0
    power = saved.get("seeds_by_power")
    if power:
        spec = replace(spec, seeds_by_power=True, max_seeds=power["max_seeds"])
    lr_end = max((p.stat().st_mtime - t0 for p in (out / "pilot").glob("*/*/metrics.jsonl")), default=0.0)
    lines = []
    for label, workers in (("with START_STEPS", jobs), ("without START_STEPS", 1)):
        before = _plan(spec, base, out, jobs=workers)
        if power:
            middle = _plan(spec, base, out, saved["lr"], workers)
            after = _plan(replace(spec, seeds=tuple(power["seeds"])), base, out, saved["lr"], workers, seeds_chosen=True)
            switches = [(0.0, before), (lr_end, middle), (chosen_at, after)]
        else:
            after = _plan(spec, base, out, saved["lr"], workers)
            switches = [(0.0, before), (chosen_at, after)]
        times = _times(out, after, t0)
        actual = max(end for _, end in times.values())
        for model, plans in (("uniform steps", [(t, uniform(p)) for t, p in switches]), ("priced steps", switches)):
            found = estimate(plans, lambda r, t, times=times: _steps_at(r, t, times), actual)
            if found is not None:
                t, total = found
                lines.append(f"{out}: {label}, {model}: 10% at {t:.0f}s, estimate {total:.0f}s, actual {actual:.0f}s, "
                             f"ratio {total / actual:.2f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="+", type=Path, help="finished verify directories")
    parser.add_argument("--config", default="verify_quick", help="the suite they ran (default verify_quick)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="jobs they ran with (default 2)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="the suite's --set overrides (e.g. suite.seeds_by_power=true is read from verify.json)")
    args = parser.parse_args()
    for out in args.out:
        print("\n".join(replay(out, args.config, args.jobs, args.set)))


if __name__ == "__main__":
    main()
