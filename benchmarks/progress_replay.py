"""Replay the suite's progress estimate over a finished ``zerolock verify`` directory (not a test).

How far was the estimate of the suite's progress bar (``workflows.progress``) after 10 % of the
work? ``verify`` prints it at the end of every suite; this script recomputes it afterwards from
the run directories' file times, to compare cost models on the same run: each run's steps are
spread evenly between its ``config.json`` (written when its setup ends) and the last write of
its ``metrics.jsonl`` (its last step); time 0 is the verify directory's ``manifest.json``.
Printed per model (with and without the process start-up ``START_STEPS``): when 10 % of the
cost was done, the estimated total time then, the actual time of the runs and their ratio::

    python3 benchmarks/progress_replay.py runs/verify-quick          # a --quick suite
    python3 benchmarks/progress_replay.py runs/verify --config verify_full --jobs 2
"""

from __future__ import annotations

import argparse
import json
import os
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


def replay(out: Path, config: str, jobs: int) -> list[str]:
    """One line per cost model (``START_STEPS`` on, off)."""
    spec, tables = load_suite(config, [])
    saved = json.loads((out / "verify.json").read_text(encoding="utf-8"))
    base = suite_base(spec, "embedded", "embedded", "cpu", "float32", None, tables)
    base["run"]["steps"] = saved["base"]["run"]["steps"]
    t0 = (out / "manifest.json").stat().st_mtime
    pilot_end = (out / "verify.json").stat().st_mtime - t0
    lines = []
    for label, workers in (("with START_STEPS", jobs), ("without START_STEPS", 1)):
        before, after = _plan(spec, base, out, jobs=workers), _plan(spec, base, out, saved["lr"], workers)
        times = _times(out, after, t0)
        actual = max(end for _, end in times.values())
        for t in range(1, int(actual) + 1):
            plan = before if t < pilot_end else after
            done = sum(progress._done_cost(r, _steps_at(r, t, times)) for r in plan)  # noqa: SLF001
            total = sum(r.cost for r in plan)
            if done >= 0.1 * total:
                estimate = t * total / done
                lines.append(f"{out}: {label}: 10% at {t}s, estimate {estimate:.0f}s, actual {actual:.0f}s, "
                             f"ratio {estimate / actual:.2f}")
                break
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="+", type=Path, help="finished verify directories")
    parser.add_argument("--config", default="verify_quick", help="the suite they ran (default verify_quick)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="jobs they ran with (default 2)")
    args = parser.parse_args()
    for out in args.out:
        print("\n".join(replay(out, args.config, args.jobs)))


if __name__ == "__main__":
    main()
