"""One progress bar for a whole suite: runs done / total, elapsed, and a cost-weighted estimate.

The suite's runs execute in this process, in worker processes or in a pool (the pilot), so the
bar does not rely on callbacks: a background thread reads the run directories every
``POLL_S`` seconds. A run's progress is the number of records in its ``metrics.jsonl`` (one per
step), or all of its steps once its final checkpoint is ``COMPLETE``.

The estimate weighs each run by its expected cost ``PlannedRun.cost`` (``SETUP_STEPS`` +
steps, times the run's per-step weight: the method's weight from ``workflows.verify._cost``,
and ``UNPROBED`` for runs without probes such as the pilots); a run that has logged s ≥ 1 steps
has done (``SETUP_STEPS`` + s) × weight of it. With C the total cost, C_0 the
cost already done when this process started (a resumed suite) and C_t the cost done now after
an elapsed time e, the time left is e · (C − C_t) / (C_t − C_0): the pace of this session,
extrapolated. ``first_estimate`` keeps the estimated total time (e + time left) at the first
poll where a tenth of this session's cost is done, so the caller can report how far it was off.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from zerolock_theory.training.state import MARKER

__all__ = ["PILOT", "POLL_S", "SETUP_STEPS", "START_STEPS", "UNPROBED", "PlannedRun", "SuiteProgress", "starting",
           "steps_done"]

POLL_S = 1.0
"""Seconds between two reads of the run directories."""
SETUP_STEPS = 10.0
"""Fixed cost of a run (model load, initial evaluation, final checkpoint) in steps of its own weight."""
UNPROBED = 0.5
"""Per-step weight of a run without probes (the pilots) relative to a probed run of the same method."""
START_STEPS = 25.0
"""Start-up of a worker or pool process (Python, torch, the model) in steps of weight 1: the first
``jobs`` runs of each phase wait for one each."""
PILOT = "pilot"


@dataclass(frozen=True)
class PlannedRun:
    """One run of the suite: where it writes, how many steps, its per-step weight, and the start-up
    of a process it waits for (``START_STEPS`` for the first runs of a phase on new processes)."""

    run_dir: Path
    steps: int
    weight: float = 1.0
    start: float = 0.0

    @property
    def cost(self) -> float:
        """Expected cost: (``SETUP_STEPS`` + steps) × weight + start."""
        return (SETUP_STEPS + self.steps) * self.weight + self.start


def starting(runs: Sequence[PlannedRun], jobs: int) -> list[PlannedRun]:
    """``runs`` of one phase in the order they start, the first ``jobs`` waiting for a new process
    each when ``jobs`` > 1 (worker or pool processes; with ``jobs`` = 1 they run in this one)."""
    return [replace(r, start=START_STEPS) if jobs > 1 and i < jobs else r for i, r in enumerate(runs)]


def steps_done(run: PlannedRun) -> int:
    """Steps the run has logged (all of them once its final checkpoint is complete)."""
    if (run.run_dir / "checkpoints" / f"step_{run.steps:08d}" / MARKER).is_file():
        return run.steps
    try:
        return min(run.steps, (run.run_dir / "metrics.jsonl").read_bytes().count(b"\n"))
    except OSError:
        return 0


def _done_cost(run: PlannedRun, steps: int) -> float:
    """The cost a run has done: its start-up and setup count from its first logged step (they come first)."""
    return run.cost if steps >= run.steps else (SETUP_STEPS + steps) * run.weight + run.start if steps else 0.0


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60:02d}:{rest % 60:02d}"


class SuiteProgress:
    """The suite's bar (tqdm, shown on a terminal) and its cost-weighted estimate of the time left.

    ``plan(runs)`` sets or replaces the planned runs (the pilot's real length is known only
    once it ends); ``write`` prints a line above the bar; ``close`` stops the thread.
    """

    def __init__(self, runs: Sequence[PlannedRun], *, resumed: bool = False, enabled: bool | None = None,
                 desc: str = "suite", clock: Callable[[], float] = time.perf_counter) -> None:
        from tqdm.auto import tqdm

        self._clock, self._started, self.resumed = clock, clock(), resumed
        self._lock = threading.Lock()
        self._runs: list[PlannedRun] = []
        self._base = 0.0
        self.first_estimate: float | None = None  # estimated total seconds after 10% of the work
        self.bar = tqdm(total=len(runs), desc=desc, unit="run", disable=None if enabled is None else not enabled,
                        bar_format="{desc}: {n_fmt}/{total_fmt} runs |{bar}| {elapsed} elapsed{postfix}")
        self.plan(runs)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def plan(self, runs: Sequence[PlannedRun]) -> None:
        """Replace the planned runs; work already on disk counts as done before this session."""
        with self._lock:
            known = {r.run_dir for r in self._runs}
            fresh = [r for r in runs if r.run_dir not in known]
            self._base += sum(_done_cost(r, steps_done(r)) for r in fresh)
            self._runs = list(runs)
            self.bar.total = len(self._runs)
        self.update()

    def status(self) -> tuple[int, float, float]:
        """(runs complete, cost done, total cost)."""
        with self._lock:
            runs = list(self._runs)
        done = [(r, steps_done(r)) for r in runs]
        complete = sum(steps >= r.steps for r, steps in done)
        return complete, sum(_done_cost(r, s) for r, s in done), sum(r.cost for r in runs)

    def remaining(self) -> float | None:
        """Estimated seconds left (module docstring), None before this session has done any work."""
        _, done, total = self.status()
        session = done - self._base
        if session <= 0:
            return None
        return self.elapsed() * (total - done) / session

    def elapsed(self) -> float:
        return self._clock() - self._started

    def update(self) -> None:
        """Read the run directories once: move the bar, refresh the estimate."""
        complete, done, total = self.status()
        left = self.remaining()
        if left is not None and self.first_estimate is None and done - self._base >= 0.1 * (total - self._base):
            self.first_estimate = self.elapsed() + left
        self.bar.n = complete
        self.bar.set_postfix_str("" if left is None else f"about {_clock(left)} left", refresh=False)
        self.bar.refresh()

    def announce(self, part: str, say: Callable[[str], None]) -> None:
        """On a resumed suite, say what is already done: ``resuming: 7 of 9 runs already complete,
        skipped`` (``part`` "runs": the planned runs outside ``pilot/``), or the number of complete
        pilot runs (``part`` "pilot": how many the pilot needs is known only as it goes)."""
        if not self.resumed:
            return
        with self._lock:
            pilot = [r.run_dir.parent.parent.name == PILOT for r in self._runs]
            runs = [r for r, is_pilot in zip(self._runs, pilot, strict=True) if is_pilot == (part == PILOT)]
        done = sum(steps_done(r) >= r.steps for r in runs)
        say(f"resuming: {done} pilot run(s) already complete, skipped" if part == PILOT
            else f"resuming: {done} of {len(runs)} runs already complete, skipped")

    def summary(self) -> str:
        """How far the estimate after 10% of the work was from the time the runs took."""
        first, took = self.first_estimate, self.elapsed()
        if first is None:
            return f"progress: the runs took {took:.0f}s (no estimate: under 10% of the work in this session)"
        return (f"progress: after 10% of the work the estimated time was {first:.0f}s; the runs took {took:.0f}s "
                f"(estimate / actual = {first / max(took, 1e-9):.2f})")

    def write(self, line: str) -> None:
        """Print ``line`` above the bar."""
        self.bar.write(line)

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self.update()
            except Exception:  # noqa: BLE001 (a display must never stop the suite)
                continue

    def close(self) -> None:
        """Stop polling; a last update, then close the bar."""
        self._stop.set()
        self._thread.join()
        self.update()
        self.bar.close()
