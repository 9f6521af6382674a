"""The test hook ``ZEROLOCK_KILL_AT`` (``workflows.kill_point``): where it kills, and that a run
it is attached to trains as without it until then."""

from __future__ import annotations

import os
import signal

import pytest

from zerolock_theory.app.workflows.kill_point import KILL_AT, kill_hooks, reached
from zerolock_theory.app.workflows.runs import probed_train
from zerolock_theory.config import TrainConfig
from zerolock_theory.jsonio import read_records
from zerolock_theory.training.loop import train

RUN = {"model": {"chunks": 2}, "data": {"seq_len": 32, "batch_size": 2, "eval_batches": 1},
       "run": {"steps": 4, "eval_every": 2, "checkpoint_every": 2, "progress": False, "threads": 1}}


@pytest.mark.parametrize(("point", "run_dir", "step"), [
    (None, "out/runs/backprop_lr-0.05_seed-1", None),
    ("analysis", "out/runs/backprop_lr-0.05_seed-1", None),  # a phase, not a run
    ("runs/backprop_*_seed-1@2", "out/runs/backprop_lr-0.05_seed-1", 2),
    ("runs/backprop_*_seed-1@2", "out/runs/backprop_lr-0.05_seed-0", None),
    ("pilot/backprop/*@3", "out/pilot/backprop/backprop_lr-0.1_seed-0", 3),
    ("pilot/backprop/*@3", "out/runs/backprop_lr-0.1_seed-0", None),
])
def test_kill_hooks_attach_to_the_named_run_only(monkeypatch, tmp_path, point, run_dir, step) -> None:
    if point is None:
        monkeypatch.delenv(KILL_AT, raising=False)
    else:
        monkeypatch.setenv(KILL_AT, point)
    hooks = kill_hooks(tmp_path / run_dir)
    assert [h.step for h in hooks] == ([] if step is None else [step])
    reached("pilot")  # another point: returns


class _Killed(Exception):
    pass


def test_a_run_is_killed_after_n_steps_having_trained_as_without_the_hook(monkeypatch, tmp_path) -> None:
    config = TrainConfig.from_dict(RUN)
    train(config, tmp_path / "plain")
    monkeypatch.setenv(KILL_AT, "hooked@3")
    monkeypatch.delenv("ZEROLOCK_KILL_PID", raising=False)  # unarmed: the process at the point is the one killed
    kills = []

    def kill(pid: int, sig: int) -> None:
        kills.append((pid, sig))
        raise _Killed

    monkeypatch.setattr(os, "kill", kill)
    with pytest.raises(_Killed):
        probed_train(config, tmp_path / "hooked")
    assert kills == [(os.getpid(), signal.SIGKILL)]
    timing = ("train/tokens_per_s", "train/step_time_s")
    plain, hooked = ([{k: v for k, v in r.items() if k not in timing} for r in read_records(tmp_path / d / "metrics.jsonl")]
                     for d in ("plain", "hooked"))
    assert [r["step"] for r in hooked] == [0, 1, 2]  # steps 0..2 done and logged, step 3 not started
    assert hooked == plain[:3]
