"""A dead or hung peer ends a pipelined run with a clear error, never a hang.

With restarts disabled, an abruptly killed stage makes its neighbour raise
``PeerFailureError`` naming it, and the launcher raises ``PipelineError`` listing the cause
first. A stage that hangs (alive, sockets open, silent) makes its neighbour's receive time
out after ``comm_timeout_s``; the launcher then ends the hung process by its id.
"""

from __future__ import annotations

import re
import time

import pytest

from zerolock_theory.pipeline import PipelineError, PipelineOptions, launch
from zerolock_theory.pipeline.fixtures import small_config

pytestmark = [pytest.mark.distributed]


@pytest.fixture(scope="module")
def config(pipeline_inputs):
    model, corpus = pipeline_inputs
    return small_config(model, 2, 4, data_source=corpus)


@pytest.mark.timeout(120)
def test_dead_peer_is_a_clear_error(config, tmp_path) -> None:
    options = PipelineOptions(max_restarts=0, fail_stage=2, fail_at_step=1, comm_timeout_s=60)
    tic = time.monotonic()
    with pytest.raises(PipelineError) as info:
        launch(config, options, tmp_path / "dead")
    elapsed = time.monotonic() - tic
    lines = str(info.value).splitlines()
    assert len(lines) == 2  # one line per failed stage
    assert "stage 2 exited with status 17 (injected failure at step 1)" in lines[0]  # the cause first
    assert "stage 1 exited" in lines[1] and "PeerFailureError" in lines[1] and "lost stage 2" in lines[1]
    assert elapsed < 45, f"a dead peer took {elapsed:.0f}s to surface (comm timeout is 60s)"
    assert (tmp_path / "dead" / "stages" / "stage_1" / "error.txt").is_file()


@pytest.mark.timeout(120)
def test_hung_peer_times_out(config, tmp_path) -> None:
    options = PipelineOptions(fail_stage=2, fail_at_step=1, fail_mode="hang", comm_timeout_s=3, max_lead=1)
    with pytest.raises(PipelineError, match=r"stage 1: no progress on link 1 with stage 2 within 3 s"):
        launch(config, options, tmp_path / "hung")


def _cli(argv: list[str]) -> int:
    """``zerolock pipeline ARGV`` through the command's own parser."""
    import argparse

    from zerolock_theory.app.cli import pipeline

    parser = argparse.ArgumentParser(prog="zerolock")
    pipeline.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["pipeline", *argv])
    return args.func(args)


@pytest.mark.timeout(120)
def test_cli_recovers_and_reports_latency(config, tmp_path, capsys) -> None:
    argv = ["--stages", "2", "--model", config.model.path, "--data", config.data.source, "--seq-len", "32",
            "--batch-size", "2", "--micro-batches", "2", "--steps", "4", "--checkpoint-every", "2",
            "--max-lead", "1", "--fail-stage", "1", "--fail-at-step", "2", "--device", "cpu",
            "--no-progress", "--out", str(tmp_path / "cli")]
    assert _cli(argv) == 0
    out = capsys.readouterr().out
    # stage 2 may still need step 1 (it has completed 1 or 2 steps): restart from step 0 or 2
    assert re.search(r"recovery: stage 1 failed in step 2, restarted from checkpoint step [02],", out), out
    assert (tmp_path / "cli" / "recovery.json").is_file() and (tmp_path / "cli" / "adapters.safetensors").is_file()
