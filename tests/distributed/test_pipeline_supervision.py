"""The launcher supervises its stages: killing it ends them all; ``--resume`` continues bit-equal.

Stage 2 is made to hang (fault injection, long timeout) after the checkpoint at step 4, so
the launcher is killed while every stage is certainly alive. After a SIGKILL no descendant
of the launcher (stages, fork server) may survive; after a SIGTERM the launcher also exits
with one line. ``zerolock pipeline --resume`` then continues from the stage-local checkpoints
and must end with exactly (bit for bit) the adapters and losses of an uninterrupted run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from zerolock_theory.app.cli import main
from zerolock_theory.jsonio import read_records

pytestmark = [pytest.mark.distributed]
STEPS = 8


def _args(corpus: str, out: Path) -> list[str]:
    return ["pipeline", "--stages", "2", "--model", "embedded", "--data", corpus, "--seq-len", "32",
            "--batch-size", "2", "--optimizer", "sgd", "--lr", "0.05", "--steps", str(STEPS),
            "--checkpoint-every", "2", "--eval-every", "1000", "--max-lead", "1", "--device", "cpu",
            "--no-progress", "--out", str(out)]


def _process_table() -> dict[int, tuple[int, str]]:
    """pid → (parent pid, state) for every process (Linux /proc)."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            table[int(entry)] = (int(fields[1]), fields[0])
    return table


def _descendants(pid: int) -> set[int]:
    table, found, frontier = _process_table(), set(), {pid}
    while frontier:
        children = {p for p, (ppid, _) in table.items() if ppid in frontier} - found
        found |= children
        frontier = children
    return found


def _alive(pids: set[int]) -> set[int]:
    table = _process_table()
    return {p for p in pids if p in table and table[p][1] != "Z"}


def _start_hung_run(corpus: str, out: Path) -> tuple[subprocess.Popen, set[int]]:
    """A launcher whose stage 2 hangs in step 5 (after the checkpoint at step 4); its stages."""
    argv = [*_args(corpus, out), "--fail-stage", "2", "--fail-at-step", "5", "--fail-mode", "hang",
            "--comm-timeout", "300", "--max-restarts", "0"]
    proc = subprocess.Popen([sys.executable, "-m", "zerolock_theory", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 120
    hung = False
    while time.monotonic() < deadline and proc.poll() is None and not hung:
        time.sleep(0.1)
        hung = (out / "stages" / "stage_1" / "checkpoints" / "step_00000004" / "COMPLETE").is_file() and \
            (out / "stages" / "stage_2" / "checkpoints" / "step_00000004" / "COMPLETE").is_file()
    assert hung and proc.poll() is None, "the run never reached its hang point"
    time.sleep(0.5)  # stage 2 is now inside step 5, hanging; stage 1 waits for it
    stages = _descendants(proc.pid)
    assert len(stages) >= 2, stages
    return proc, stages


def _wait_gone(pids: set[int], seconds: float = 15.0) -> set[int]:
    deadline = time.monotonic() + seconds
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _alive(pids)


@pytest.mark.timeout(300)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_killed_launcher_leaves_no_stage_and_resume_is_bit_equal(pipeline_inputs, tmp_path, capsys) -> None:
    _, corpus = pipeline_inputs
    out = tmp_path / "killed"
    proc, stages = _start_hung_run(corpus, out)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not _wait_gone(stages), "stage processes outlived the SIGKILLed launcher"

    config_before = (out / "config.json").read_bytes()
    assert main([*_args(corpus, out), "--resume"]) == 0
    assert (out / "config.json").read_bytes() == config_before
    assert main([*_args(corpus, tmp_path / "reference")]) == 0
    capsys.readouterr()
    got, ref = load_file(str(out / "adapters.safetensors")), load_file(str(tmp_path / "reference" / "adapters.safetensors"))
    assert got.keys() == ref.keys() and got
    for name in ref:
        assert torch.equal(got[name], ref[name]), name
    timing = ("step_time_s", "tokens_per_s")
    strip = lambda rs: [{k: v for k, v in r.items() if not k.endswith(timing)} for r in rs]  # noqa: E731
    assert strip(read_records(out / "metrics.jsonl")) == strip(read_records(tmp_path / "reference" / "metrics.jsonl"))

    manifest = (out / "manifest.json").read_bytes()
    assert main([*_args(corpus, out), "--resume"]) == 0  # a no-op resume rewrites nothing
    assert (out / "manifest.json").read_bytes() == manifest and (out / "config.json").read_bytes() == config_before


@pytest.mark.timeout(200)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigterm_ends_every_stage_with_one_line(pipeline_inputs, tmp_path) -> None:
    _, corpus = pipeline_inputs
    proc, stages = _start_hung_run(corpus, tmp_path / "term")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and "interrupted" in lines[0], lines
    assert not _wait_gone(stages), "stage processes outlived the SIGTERMed launcher"


@pytest.mark.timeout(120)
def test_stage_setup_error_is_one_line(tmp_path, capsys) -> None:
    """Every stage fails to load a model without weights: one line, no traceback on the terminal."""
    import shutil

    from zerolock_theory.embedded import embedded_path

    model = tmp_path / "no-weights"
    model.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(embedded_path() / name, model / name)
    argv = ["pipeline", "--stages", "2", "--model", str(model), "--steps", "2", "--device", "cpu",
            "--no-progress", "--out", str(tmp_path / "p")]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "stages 1, 2 exited with status 1: ValueError: cannot load the model" in lines[0]
    assert "Traceback" not in err + out
    assert "Traceback" in (tmp_path / "p" / "stages" / "stage_1" / "error.txt").read_text()
