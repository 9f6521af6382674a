"""One progress bar for a whole suite: runs done / total, elapsed, and a cost-weighted estimate.

The suite's runs execute in this process, in worker processes or in a pool (the pilot), so the
bar does not rely on callbacks: a background thread reads the run directories every
``POLL_S`` seconds. A run's progress is the number of records in its ``metrics.jsonl`` (one per
step), or all of its steps once its final checkpoint is ``COMPLETE``.

A run's cost has two parts. The *base*: (``SETUP_STEPS`` + steps) × the run's per-step weight
(the method's weight from ``workflows.verify._cost``, times ``UNPROBED`` for runs without
probes such as the pilots) + the start-up of a new process. The *extras*: the probes that are
due only at some steps (``StepExtra``): the step-scaling probe (``SCALED_POINT`` plain steps
for each of its factor × direction points), the proof probe (``PROOF``) and the global
gradient (``GLOBAL``), each counted at the steps where it is due (step mod every = 0). A
scaled step therefore costs several plain steps, and a run whose steps are all scaled several
times a run of the same length without the probe.

Those unit prices are a model; the clock calibrates them. At every poll the bar keeps
(elapsed, base done, extras done) of this session and fits elapsed ≈ a · base + b · extras
(least squares, both ≥ 0); while the two columns cannot be told apart (no extras done yet,
or extras in a fixed proportion to the base since the session started) the model's ratio
b / a = 1 stands. The calibrated cost is base + (b / a) · extras. With C the calibrated total,
C_0 the calibrated cost done when this process started (a resumed suite) and C_t the
calibrated cost done now after an elapsed time e, the time left is e · (C − C_t) / (C_t − C_0):
the pace of this session, extrapolated. ``first_estimate`` keeps the estimated total time
(e + time left) at the first poll where a tenth of this session's cost is done, so the caller
can report how far it was off.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from zerolock_theory.training.state import MARKER

__all__ = ["GLOBAL", "PILOT", "POLL_S", "PROOF", "SCALED_POINT", "SETUP_STEPS", "START_STEPS", "UNPROBED", "PlannedRun",
           "StepExtra", "SuiteProgress", "step_extras", "starting", "steps_done"]

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
SCALED_POINT = 0.25
"""Model price of one (factor, direction) point of the step-scaling probe, in plain steps of weight 1:
a forward of the probe batch and its terms (a scaled step at 7 factors × 3 directions: 5.25 more)."""
PROOF = 1.0
"""Model price of the proof probe at a step where it is due (K − 1 chunk forwards and readouts)."""
GLOBAL = 1.0
"""Model price of the global gradient Ĝ_t at a step where it is due (one backward through the model)."""
MIN_SPREAD = 0.05
"""The fit of the extras' price needs the share of extras in the session's work to have moved by
this much between polls; below it the model's price stands."""
MIN_POLLS = 3
"""... and this many polls to have added extras."""
RATIO_RANGE = (0.125, 8.0)
"""The fitted price of the extras relative to the model's, clipped to this range."""


@dataclass(frozen=True)
class StepExtra:
    """A cost due at the steps t with t mod ``every`` = 0: ``units`` plain steps of weight 1 each time."""

    every: int
    units: float

    def due(self, steps: int) -> int:
        """How many of the steps 0 .. steps − 1 it is due at."""
        return 0 if steps <= 0 or self.every < 1 else (steps - 1) // self.every + 1


def step_extras(raw: dict) -> tuple[StepExtra, ...]:
    """The extras (module docstring) of a run from its config as a dict (``[probes]`` and ``[run]``)."""
    from zerolock_theory.probe_config import scaling_axes

    probes, run = raw.get("probes") or {}, raw.get("run") or {}
    tables = {name: options for name, options in probes.items() if isinstance(options, dict)}
    extras = []
    factors, directions = scaling_axes(tables)
    if factors:
        extras.append(StepExtra(int(tables["scaling"].get("every", 10)), SCALED_POINT * len(factors) * len(directions)))
    proof = tables.get("proof")
    if proof is not None and proof.get("enabled", True):
        extras.append(StepExtra(int(proof.get("every", 1)), PROOF))
    own = (raw.get("method") or {}).get("name") == "backprop" and run.get("unbiased_grad_sq", True)
    if int(run.get("global_grad_every") or 0) > 0 and not own:  # backprop's own Ĝ_t is the global one
        extras.append(StepExtra(int(run["global_grad_every"]), GLOBAL))
    return tuple(extras)


@dataclass(frozen=True)
class PlannedRun:
    """One run of the suite: where it writes, how many steps, its per-step weight, the start-up
    of a process it waits for (``START_STEPS`` for the first runs of a phase on new processes)
    and the probes due at some of its steps (``extras``)."""

    run_dir: Path
    steps: int
    weight: float = 1.0
    start: float = 0.0
    extras: tuple[StepExtra, ...] = ()

    def parts(self, steps: int) -> tuple[float, float]:
        """(base, extras) done once ``steps`` steps are logged: the start-up and setup count from the
        first logged step (they come first)."""
        steps = min(steps, self.steps)
        if steps <= 0:
            return 0.0, 0.0
        return (SETUP_STEPS + steps) * self.weight + self.start, sum(x.units * x.due(steps) for x in self.extras)

    @property
    def cost(self) -> float:
        """Expected cost at the model's prices: (``SETUP_STEPS`` + steps) × weight + start + extras."""
        return sum(self.parts(self.steps))


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


class CostFit:
    """The fit of the extras' price against the clock: elapsed ≈ a · base + b · extras over the
    polls where work landed (running sums, least squares with a, b ≥ 0). ``ratio`` is b / a:
    1 (the model's prices) until the share of extras in the work has moved by ``MIN_SPREAD``
    and ``MIN_POLLS`` polls have added extras; clipped to ``RATIO_RANGE``."""

    def __init__(self) -> None:
        self.sums = [0.0] * 5  # Σ b², Σ x², Σ b·x, Σ e·b, Σ e·x
        self.count, self.shares, self.moves, self._extras = 0, (1.0, 0.0), 0, 0.0

    def add(self, elapsed: float, base: float, extras: float) -> None:
        """One poll: ``elapsed`` seconds for ``base`` and ``extras`` units of this session."""
        if base + extras <= 0:
            return
        for i, v in enumerate((base * base, extras * extras, base * extras, elapsed * base, elapsed * extras)):
            self.sums[i] += v
        share = extras / (base + extras)
        self.moves, self._extras = self.moves + (extras > self._extras), extras
        self.count, self.shares = self.count + 1, (min(self.shares[0], share), max(self.shares[1], share))

    def ratio(self) -> float:
        if self.moves < MIN_POLLS or self.shares[1] - self.shares[0] < MIN_SPREAD:
            return 1.0
        sbb, sxx, sbx, seb, sex = self.sums
        det = sbb * sxx - sbx * sbx
        if det <= 1e-12 * sbb * sxx:
            return 1.0
        a, b = (seb * sxx - sex * sbx) / det, (sex * sbb - seb * sbx) / det
        if a <= 0:  # the base alone takes no time: the extras carry it
            return RATIO_RANGE[1]
        return min(max(b / a, RATIO_RANGE[0]), RATIO_RANGE[1])


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60:02d}:{rest % 60:02d}"


class SuiteProgress:
    """The suite's bar (tqdm, shown on a terminal) and its cost-weighted estimate of the time left.

    ``plan(runs)`` sets or replaces the planned runs (the pilot's real length is known only
    once it ends); ``write`` prints a line above the bar; ``close`` stops the thread.
    ``counter`` reads a run's logged steps (``steps_done``; a replay passes its own) and
    ``poll`` = False starts no thread (the caller calls ``update``).
    """

    def __init__(self, runs: Sequence[PlannedRun], *, resumed: bool = False, enabled: bool | None = None,
                 desc: str = "suite", clock: Callable[[], float] = time.perf_counter,
                 counter: Callable[[PlannedRun], int] = steps_done, poll: bool = True) -> None:
        from tqdm.auto import tqdm

        self._clock, self._started, self.resumed, self._count = clock, clock(), resumed, counter
        self._lock = threading.Lock()
        self._runs: list[PlannedRun] = []
        self._before = (0.0, 0.0)  # (base, extras) done before this session
        self.fit = CostFit()
        self._fit_lock = threading.Lock()  # the poll thread and plan() both update
        self._last = (0.0, 0.0)
        self.first_estimate: float | None = None  # estimated total seconds after 10% of the work
        self.bar = tqdm(total=len(runs), desc=desc, unit="run", disable=None if enabled is None else not enabled,
                        bar_format="{desc}: {n_fmt}/{total_fmt} runs |{bar}| {elapsed} elapsed{postfix}")
        self.plan(runs)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True) if poll else None
        if self._thread is not None:
            self._thread.start()

    def plan(self, runs: Sequence[PlannedRun]) -> None:
        """Replace the planned runs; work already on disk counts as done before this session."""
        with self._lock:
            known = {r.run_dir for r in self._runs}
            fresh = [r for r in runs if r.run_dir not in known]
            parts = [r.parts(self._count(r)) for r in fresh]
            self._before = (self._before[0] + sum(b for b, _ in parts), self._before[1] + sum(x for _, x in parts))
            self._runs = list(runs)
            self.bar.total = len(self._runs)
        self.update()

    def _parts(self) -> tuple[int, tuple[float, float], tuple[float, float]]:
        """(runs complete, (base, extras) done, (base, extras) in all)."""
        with self._lock:
            runs = list(self._runs)
        done = [(r, self._count(r)) for r in runs]
        complete = sum(steps >= r.steps for r, steps in done)
        parts, totals = [r.parts(s) for r, s in done], [r.parts(r.steps) for r in runs]
        return (complete, (sum(b for b, _ in parts), sum(x for _, x in parts)),
                (sum(b for b, _ in totals), sum(x for _, x in totals)))

    def status(self) -> tuple[int, float, float]:
        """(runs complete, cost done, total cost), the extras at their calibrated price (module docstring)."""
        complete, done, total = self._parts()
        ratio = self.fit.ratio()
        return complete, done[0] + ratio * done[1], total[0] + ratio * total[1]

    def _session(self) -> float:
        """The calibrated cost done before this session."""
        return self._before[0] + self.fit.ratio() * self._before[1]

    def remaining(self) -> float | None:
        """Estimated seconds left (module docstring), None before this session has done any work."""
        _, done, total = self.status()
        session = done - self._session()
        if session <= 0:
            return None
        return self.elapsed() * (total - done) / session

    def elapsed(self) -> float:
        return self._clock() - self._started

    def update(self) -> None:
        """Read the run directories once: calibrate, move the bar, refresh the estimate."""
        _, (base, extras), _ = self._parts()
        with self._fit_lock:  # a poll where a step landed: its time is the step's end (to a poll's width)
            if (base, extras) != self._last:
                self.fit.add(self.elapsed(), base - self._before[0], extras - self._before[1])
                self._last = (base, extras)
        complete, done, total = self.status()
        left, before = self.remaining(), self._session()
        if left is not None and self.first_estimate is None and done - before >= 0.1 * (total - before):
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
            pilot = [PILOT in (r.run_dir.parent.parent.name, r.run_dir.parent.name.removeprefix("power_"))
                     for r in self._runs]  # the η_0 pilot (pilot/METHOD/RUN) and the power pilot (power_pilot/RUN)
            runs = [r for r, is_pilot in zip(self._runs, pilot, strict=True) if is_pilot == (part == PILOT)]
        done = sum(self._count(r) >= r.steps for r in runs)
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
        if self._thread is not None:
            self._thread.join()
        self.update()
        self.bar.close()
