"""Single-process pieces of the pipeline: replay buffer, options, memory meter, restart points."""

from __future__ import annotations

import re

import pytest
import torch

from zerolock_theory.config import TrainConfig
from zerolock_theory.pipeline.checkpoints import restart_point
from zerolock_theory.pipeline.memory import SavedTensorMeter
from zerolock_theory.pipeline.options import PipelineOptions
from zerolock_theory.pipeline.replay import ReplayBuffer, ReplayGapError, ReplayOverflowError
from zerolock_theory.pipeline.stage import split_batch


def _config(method: str = "zerolock", **run) -> TrainConfig:
    return TrainConfig.from_dict({"model": {"chunks": 4}, "data": {"batch_size": 4}, "method": {"name": method},
                                  "run": {"steps": 10, "checkpoint_every": 3, **run}})


def test_replay_buffer_trims_replays_and_bounds() -> None:
    buf = ReplayBuffer(capacity_steps=3)
    for step in range(3):
        for micro in range(2):
            buf.put(step, micro, torch.full((2,), float(10 * step + micro)))
    assert len(buf) == 3 and buf.nbytes == 6 * 2 * 4
    with pytest.raises(ReplayOverflowError):
        buf.put(3, 0, torch.zeros(2))
    got = [(s, m, float(t[0])) for s, m, t in buf.replay_from(1, 1)]
    assert got == [(1, 1, 11.0), (2, 0, 20.0), (2, 1, 21.0)]
    buf.trim(2)
    assert len(buf) == 1
    buf.put(3, 0, torch.zeros(2))
    with pytest.raises(ReplayGapError):
        buf.replay_from(1, 0)
    assert buf.replay_from(4, 0) == []  # not produced yet: nothing to replay
    with pytest.raises(ValueError):
        buf.put(3, 0, torch.zeros(2))  # positions must increase
    assert buf.peak_steps == 3


def test_replay_buffer_skips_steps_downstream_no_longer_needs() -> None:
    buf = ReplayBuffer(capacity_steps=2)
    buf.trim(5)  # a restarted stage re-producing steps its downstream checkpointed past
    buf.put(3, 0, torch.zeros(1))
    assert len(buf) == 0 and buf.produced == (3, 0)


def test_restart_point_is_newest_checkpoint_still_needed() -> None:
    assert restart_point(7, None, 3) == 6  # last stage: its newest checkpoint
    assert restart_point(7, 4, 3) == 3  # downstream still needs step 4
    assert restart_point(2, 2, 3) == 0  # before the first checkpoint: the initial state


@pytest.mark.parametrize(
    ("options", "run", "message"),
    [
        (dict(fail_stage=2), {}, "both fail_stage and fail_at_step"),
        (dict(micro_batches=3), {}, "not divisible"),
        (dict(schedule="1f1b", micro_batches=2), {"method": "backprop"}, "1F1B needs micro_batches >= stages"),
        (dict(fail_stage=5, fail_at_step=1), {}, "fail_stage must lie in 1..4"),
        (dict(max_lead=3), {}, "checkpoint_every (3) > max_lead (3)"),
        (dict(), {"keep_checkpoints": 1}, "keep_checkpoints >= 2"),
    ],
)
def test_options_are_checked(options, run, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        PipelineOptions(**options).check_against(_config(**run))


def test_options_round_trip_and_method_match() -> None:
    opts = PipelineOptions(micro_batches=2, fail_stage=2, fail_at_step=4)
    assert PipelineOptions.from_dict(opts.to_dict()) == opts
    with pytest.raises(ValueError, match="trains method 'backprop'"):
        PipelineOptions(schedule="gpipe", max_restarts=0, micro_batches=4).check_against(_config())
    with pytest.raises(ValueError, match="ZeroLock pipeline only"):
        PipelineOptions(schedule="gpipe", fail_stage=1, fail_at_step=1)


def test_saved_tensor_meter_counts_activations_not_weights() -> None:
    lin = torch.nn.Linear(16, 16, bias=False)
    x = torch.randn(8, 16, requires_grad=True)
    with SavedTensorMeter.for_module(lin) as meter:
        y = lin(x).exp()  # saves x (for the weight's grad; the weight itself is excluded) and exp's output
        assert meter.current == 2 * 8 * 16 * 4
        y.sum().backward()
        del y
    assert meter.current == 0 and meter.peak == 2 * 8 * 16 * 4


def test_saved_tensor_meter_frees_a_graph_dropped_without_backward() -> None:
    """exp saves its own output: kept with its grad_fn it made an uncollectable cycle (graph ->
    saved tensor -> graph), so the count and the memory outlived the graph, also after gc."""
    x = torch.randn(1000, requires_grad=True)
    meter = SavedTensorMeter()

    def forward_that_raises() -> None:
        with meter:
            y = (x.exp() * 2).sum()
            assert meter.current == 1000 * 4 and y.requires_grad  # exp's output (a scalar factor saves nothing)
            raise RuntimeError("a failing step")

    with pytest.raises(RuntimeError, match="a failing step"):
        forward_that_raises()
    assert meter.current == 0
    with meter:
        y = x.exp().sum()
    del y
    assert meter.current == 0
    with meter:
        (x.exp() * x).sum().backward()
    assert torch.allclose(x.grad, x.exp() * (1 + x)) and meter.current == 0
    assert meter.peak == 2 * 1000 * 4  # exp's output (saved twice, counted once) and x

@pytest.mark.parametrize("exclude", [False, True])
def test_saved_tensor_meter_keeps_autograds_inplace_check(exclude) -> None:
    """Autograd skips its version check for tensors saved through hooks: without the meter's own
    check, a saved output (or an excluded parameter) changed in place gave a wrong gradient silently."""
    lin = torch.nn.Linear(3, 2, bias=False)
    x = torch.tensor([[0.3, -1.2, 0.5]], requires_grad=True)
    with SavedTensorMeter.for_module(lin) if exclude else SavedTensorMeter() as meter:
        if exclude:  # the weight, saved for x's gradient, is updated before the backward
            y = lin(x).sum()
            with torch.no_grad():
                lin.weight.mul_(2)
        else:  # sigmoid saves its output, then the output is scaled in place
            y = x.sigmoid()
            y.mul_(2)
            y = y.sum()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
    del y
    assert meter.current == 0
    with SavedTensorMeter() as meter:  # in-place ops autograd allows stay allowed
        x.grad = None
        h = x * 3
        h.relu_()
        h.sum().backward()
    torch.testing.assert_close(x.grad, torch.tensor([[3.0, 0.0, 3.0]]))


def test_split_batch_cuts_rows() -> None:
    batch = {"input_ids": torch.arange(12).view(4, 3), "labels": torch.arange(12).view(4, 3)}
    parts = split_batch(batch, 2)
    assert [p["input_ids"].shape[0] for p in parts] == [2, 2]
    torch.testing.assert_close(torch.cat([p["labels"] for p in parts]), batch["labels"])
    with pytest.raises(ValueError):
        split_batch(batch, 3)


def test_choose_checkpoint_respects_downstream_position(tmp_path) -> None:
    from zerolock_theory.pipeline.checkpoints import choose_checkpoint, stage_dir

    for step, complete in ((2, True), (4, True), (6, False)):
        path = stage_dir(tmp_path, 3) / "checkpoints" / f"step_{step:08d}"
        path.mkdir(parents=True)
        if complete:
            (path / "COMPLETE").write_text("{}")
    assert choose_checkpoint(tmp_path, 3, None).name == "step_00000004"  # torn step 6 ignored
    assert choose_checkpoint(tmp_path, 3, 3).name == "step_00000002"  # downstream still needs step 3
    assert choose_checkpoint(tmp_path, 3, 1) is None  # restart from the initial state


def test_cli_maps_stages_and_schedule_onto_the_config() -> None:
    import argparse

    from zerolock_theory.app.cli import CLIError, pipeline

    parser = argparse.ArgumentParser(prog="zerolock")
    pipeline.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["pipeline", "--stages", "4", "--pipeline-schedule", "1f1b", "--micro-batches", "4",
                              "--out", "unused"])
    config, options = pipeline._config(args), pipeline._options(args)
    assert config.model.chunks == 4 and config.method.name == "backprop" and options.schedule == "1f1b"
    bad = parser.parse_args(["pipeline", "--stages", "4", "--chunks", "2", "--out", "unused"])
    with pytest.raises(CLIError, match="contradicts"):
        pipeline._config(bad)


def test_the_fork_server_warms_once_and_forks_stages() -> None:
    """``warm_fork_server`` starts the launcher's fork server (where the platform has one) and returns at
    once; a second call keeps the same server, and a process started through the launcher's context
    is forked from it and runs."""
    import multiprocessing
    import time
    from multiprocessing import forkserver

    from zerolock_theory.pipeline.launch import _context, warm_fork_server

    if "forkserver" not in multiprocessing.get_all_start_methods():
        assert warm_fork_server() is False
        return
    assert warm_fork_server() is True
    pid = forkserver._forkserver._forkserver_pid  # noqa: SLF001 (the standard library's server)
    assert pid is not None
    assert warm_fork_server() is True and forkserver._forkserver._forkserver_pid == pid  # noqa: SLF001
    proc = _context().Process(target=time.sleep, args=(0,))
    proc.start()
    proc.join(120)
    assert proc.exitcode == 0
