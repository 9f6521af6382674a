"""A test hook: SIGKILL ``zerolock verify`` at a named point, so kill-and-resume tests kill where they mean to.

``ZEROLOCK_KILL_AT`` names one point (unset, the normal case, nothing here runs: no hook is built
and each phase check is one environment lookup):

* ``pilot``: in the verify process, once the pilot has chosen η_0 (or ``suite.lr`` fixed it;
  ``verify.json`` written), before the first run;
* ``analysis``: in the verify process, before the suite's analysis (every run and side run done;
  the sensitivity suite: every setting's own analysis done, before the map);
* ``RUN@N``: in the run whose directory matches the glob ``RUN`` from the right (as
  ``PurePath.match``: ``runs/backprop_*_seed-1``, ``pilot/backprop/*``), once N of its steps are
  done (N ≥ 1, below its steps): the loop's ``before_step`` of step N.

At the point the process that called ``arm`` (``zerolock verify`` does, before its suite) gets
SIGKILL. From a worker or a pilot's pool process that is the verify parent, not the worker
itself, which then waits for the kernel to end it (``worker.die_with_parent``): the test sees
whether the workers die with their parent. Unarmed (a plain ``zerolock train``), the process at
the point kills itself. The hook only kills: a run it is attached to trains bit for bit as
without it (hooks run in ``quiet_mode``; this one writes nothing).
Used by ``tests/cli/test_verify_resume.py``.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

__all__ = ["KILL_AT", "KillHook", "arm", "kill_hooks", "reached"]

KILL_AT = "ZEROLOCK_KILL_AT"
_TARGET = "ZEROLOCK_KILL_PID"  # set by ``arm``, inherited by the workers


def arm() -> None:
    """Make this process the one killed at the point (when ``ZEROLOCK_KILL_AT`` is set)."""
    if os.environ.get(KILL_AT):
        os.environ[_TARGET] = str(os.getpid())


def _kill() -> None:
    target = int(os.environ.get(_TARGET, os.getpid()))
    os.kill(target, signal.SIGKILL)
    time.sleep(60)  # another process (the verify parent) was killed: wait for the kernel to end this one
    os._exit(1)  # not ended by its parent's death: exit anyway, so no orphan trains on


def reached(point: str) -> None:
    """Kill (module docstring) when ``point`` is the one ``ZEROLOCK_KILL_AT`` names."""
    if os.environ.get(KILL_AT) == point:
        _kill()


class KillHook:
    """Kills (module docstring) before step ``step`` of the run it is attached to."""

    name = "kill_point"

    def __init__(self, step: int) -> None:
        self.step = step

    def on_start(self, ctx: Any) -> None:
        pass

    def before_step(self, ctx: Any, step: int) -> None:
        if step == self.step:
            _kill()

    def after_step(self, ctx: Any, step: int, metrics: dict[str, Any]) -> dict[str, Any]:
        return {}

    def on_checkpoint(self, ctx: Any, step: int) -> None:
        pass

    def on_end(self, ctx: Any) -> None:
        pass


def kill_hooks(run_dir: str | Path) -> list[KillHook]:
    """``[KillHook(N)]`` when ``ZEROLOCK_KILL_AT`` is ``RUN@N`` and ``run_dir`` matches ``RUN``, else ``[]``."""
    pattern, sep, step = os.environ.get(KILL_AT, "").rpartition("@")
    if not sep or not Path(run_dir).resolve().match(pattern):
        return []
    return [KillHook(int(step))]
