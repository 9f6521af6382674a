"""The worker slot of ``run_local_parallel`` when its process is gone (``workflows.launch._Worker``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from zerolock_theory.app.workflows.launch import PointTask, _Worker


def test_a_dead_worker_is_one_runtime_error_even_after_its_scratch_is_gone(tmp_path: Path) -> None:
    """An interrupt kills the worker and removes the scratch folder while a slot still waits on it:
    the slot gets the one-line ``RuntimeError`` it handles, not a ``FileNotFoundError`` from the log."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    worker = _Worker(None, scratch, 0)
    worker.proc.kill()
    worker.proc.wait()
    task = PointTask("r", {}, tmp_path / "r", False)
    with pytest.raises(RuntimeError, match="run r: worker process died"):
        worker.run(task)  # the log is still there: its last line or "no output"
    shutil.rmtree(scratch)
    scratch.mkdir()  # the task file is written again; the log file is gone
    with pytest.raises(RuntimeError, match="worker process died: no output"):
        worker.run(task)
    worker.close()
