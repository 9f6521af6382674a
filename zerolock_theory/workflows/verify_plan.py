"""The runs of a verify suite as the progress bar and a resumed suite see them.

``suite_plan`` lists every run with its expected cost (``workflows.progress.PlannedRun``):
the pilots (every η_0 of the grid until the pilot has ended, then those it ran) and the
primary groups and sweep. ``resume_line`` is what a re-run of an interrupted suite prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zerolock_theory.workflows.progress import UNPROBED, PlannedRun, steps_done
from zerolock_theory.workflows.verify import PRIMARY, SuiteSpec, _cost, pilot_points, suite_points

__all__ = ["resume_line", "suite_plan"]

PILOT = "pilot"


def suite_plan(spec: SuiteSpec, base: dict[str, Any], out: Path, lrs: dict[str, float] | None = None
               ) -> list[PlannedRun]:
    """Every pilot of the grid (only those on disk once ``lrs`` is known), then the suite's runs
    (named at ``lrs``, or at the grid's first η_0 before the pilot has chosen)."""
    pilots = [] if spec.lr is not None else [(out / PILOT / label / p.name, p, UNPROBED) for label in PRIMARY
                                             for p in (pilot_points(spec, lr, label) for lr in spec.lr_grid)]
    runs = [(d, p, w) for d, p, w in pilots if lrs is None or d.is_dir()]
    runs += [(out / "runs" / p.name, p, 1.0) for p in suite_points(spec, lrs)]
    planned = []
    for run_dir, point, weight in runs:
        steps = int(dict(point.overrides).get("run.steps", base["run"]["steps"]))
        planned.append(PlannedRun(run_dir, steps, weight * _cost(base, point) / steps))
    return planned


def resume_line(plan: list[PlannedRun], part: str) -> str:
    """``resuming: 7 of 9 runs already complete, skipped`` (``part`` "runs"), or the number of
    complete pilot runs (``part`` "pilot": how many the pilot needs is known only as it goes)."""
    pilot = [r for r in plan if r.run_dir.parent.parent.name == PILOT]
    if part == PILOT:
        done = sum(steps_done(r) >= r.steps for r in pilot)
        return f"resuming: {done} pilot run(s) already complete, skipped"
    runs = [r for r in plan if r not in pilot]
    done = sum(steps_done(r) >= r.steps for r in runs)
    return f"resuming: {done} of {len(runs)} runs already complete, skipped"
