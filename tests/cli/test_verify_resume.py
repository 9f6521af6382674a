"""``zerolock verify`` survives a kill: SIGKILL at chosen points, then the same command again.

The kills land where a test hook puts them (``ZEROLOCK_KILL_AT``, ``workflows.kill_point``): the
suite is killed mid-run, resumed and killed again later, resumed and killed before its analysis,
then resumed to the end. It must end with the same verdict table, the same analysis and, run by
run, the same ``metrics.jsonl`` as an uninterrupted suite (timings aside), say what it skipped,
and leave no process behind after each kill (the workers die with the killed parent). Ctrl-C
prints one line with the command that resumes and exits with 130.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from zerolock_theory.jsonio import read_records

# verify --quick at the smallest size that still runs every part (pilot, 3 groups x 3 seeds, analysis)
SMALL = ["--quick", "--set", "suite.steps=5", "--set", "suite.pilot_steps=5", "--set", "suite.lr_grid=[0.1]",
         "--set", "suite.probe_positions=16", "--set", "probes.scaling.every=5", "--set", "suite.fixed_point_chunks=[]",
         "--set", "suite.memory_stages=[]", "--jobs", "2"]
# the sensitivity suite at the smallest size that still runs every part (two settings, one seed, their map)
SMALL_SENSITIVITY = ["--config", "verify_sensitivity", "--set", "suite.steps=6", "--set", "suite.scaled_steps=6",
                     "--set", "suite.eval_every=6", "--set", "suite.probe_positions=16", "--set",
                     "suite.readout_records=3", "--set", "suite.seeds=[0]", "--set",
                     'suite.variants=["model.chunks=2"]', "--jobs", "2"]
SUITES = {"quick": SMALL, "sensitivity": SMALL_SENSITIVITY}
# Per suite, its kill points in order (ZEROLOCK_KILL_AT, workflows.kill_point), each with what the
# re-run after it must say: a run killed mid-way resumes, finished ones are skipped.
KILLS = {
    "quick": [  # the pilot's third run (the others, or one of them, done), a late run, before the analysis
        ("pilot/backprop/*@2", [r"resuming: [1-9]\d* pilot run\(s\) already complete, skipped",
                                r"backprop_lr-[^_ ]+_seed-0: resuming"]),
        ("runs/backprop_*_seed-1@2", [r"resuming: 3 pilot run\(s\) already complete, skipped",
                                      r"resuming: [1-9]\d* of \d+ runs already complete, skipped",
                                      r"backprop_lr-[^_ ]+_seed-1: resuming"]),
        ("analysis", [r"resuming: (\d+) of \1 runs already complete, skipped"]),
    ],
    "sensitivity": [  # the default setting's forward run, the second setting's reverse run, before the map
        ("settings/default/runs/zerolock-forward_*@3", [r"zerolock-forward_lr-[^_ ]+_seed-0: resuming"]),
        ("settings/chunks-2/runs/zerolock-reverse_*@3", [r"zerolock-reverse_lr-[^_ ]+_seed-0: complete, skipped",
                                                         r"zerolock-reverse_lr-[^_ ]+_seed-0: resuming"]),
        ("analysis", [r"complete, skipped"]),
    ],
}
TIMING = ("time", "per_s", "seconds")  # wall-clock figures differ between any two runs
PROVENANCE = ("manifest", "path")  # each run's start time, git commit and directory


def _env(kill_at: str | None = None) -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
           "OMP_NUM_THREADS": "1"}
    env.pop("ZEROLOCK_KILL_AT", None)
    return {**env, "ZEROLOCK_KILL_AT": kill_at} if kill_at else env


def _start(out: Path, args: list[str] = SMALL, kill_at: str | None = None, stdout=subprocess.PIPE,
           stderr=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "zerolock_theory", "verify", *args, "--out", str(out)],
                            env=_env(kill_at), stdout=stdout, stderr=stderr, text=True, start_new_session=True)


def _session(sid: int) -> list[int]:
    """Every live process of session ``sid`` (from /proc): a suite started in its own session is
    its verify process and every process it started, whoever their parent is now."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state, _, _, session = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:4]
            except OSError:
                continue
            if int(session) == sid and state != "Z":
                found.append(int(entry.name))
    return found


def _run(out: Path, args: list[str], kill_at: str | None = None) -> str:
    """Run the suite into ``out``; its stdout. With ``kill_at`` it must be SIGKILLed there and no
    process of it may outlive that; without, it must succeed."""
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        proc = _start(out, args, kill_at, stdout, stderr)  # files, not pipes: nothing waits on a reader
        proc.wait(timeout=3600)
        deadline = time.monotonic() + 30
        while kill_at and _session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        stdout.seek(0)
        stderr.seek(0)
        said, errors = stdout.read(), stderr.read()
    if kill_at is None:
        assert proc.returncode == 0, errors
    else:
        assert proc.returncode == -signal.SIGKILL, f"not killed at {kill_at} (exit {proc.returncode}): {errors}"
        assert not _session(proc.pid), f"processes left behind after the kill at {kill_at}"
    return said


def _logged(out: Path) -> bool:
    """Whether some run has logged a step (a non-empty ``metrics.jsonl``)."""
    try:
        return any(f.stat().st_size > 0 for f in out.rglob("metrics.jsonl"))
    except OSError:  # a directory renamed while it was listed (a checkpoint being written)
        return False


def _verdict_table(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("claim "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("report: "))
    return [line.rstrip() for line in lines[start:end] if line.strip()]


def _untimed(value):
    """``value`` without timing keys and the runs' provenance (which differ between any two suites)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not any(t in k for t in TIMING) and k not in PROVENANCE}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _metrics(out: Path) -> dict[str, list[dict]]:
    """Every run's records, by its path in the suite (``runs/NAME`` or ``settings/S/runs/NAME``)."""
    return {str(f.parent.relative_to(out)): _untimed(read_records(f)) for f in sorted(out.rglob("metrics.jsonl"))
            if "pilot" not in f.parts}


def _analysis(out: Path) -> dict[str, object]:
    """Every analysis file of the suite (``analysis/`` and, for the sensitivity suite, each setting's)."""
    return {str(f.relative_to(out)): _untimed(json.loads(f.read_text())) for f in sorted(out.rglob("*.json"))
            if "analysis" in f.parts}


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("suite", sorted(SUITES))
def test_verify_killed_at_three_points_resumes_to_the_same_result(tmp_path, suite) -> None:
    args = SUITES[suite]
    reference = tmp_path / "reference"
    table = _verdict_table(_run(reference, args))
    out = tmp_path / "killed"
    points = [point for point, _ in KILLS[suite]]
    _run(out, args, kill_at=points[0])
    for (point, said), following in zip(KILLS[suite], [*points[1:], None], strict=True):
        stdout = _run(out, args, kill_at=following)  # the same command again, killed at the next point
        for pattern in said:
            assert re.search(pattern, stdout), f"the re-run after the kill at {point} did not say {pattern!r}:\n{stdout}"
    assert _verdict_table(stdout) == table
    assert _metrics(out) == _metrics(reference)
    assert _analysis(out) == _analysis(reference)


@pytest.mark.slow
def test_ctrl_c_prints_the_resume_command_and_exits_130(tmp_path) -> None:
    out = tmp_path / "v"
    proc = _start(out)
    deadline = time.monotonic() + 600
    while not _logged(out) and proc.poll() is None and time.monotonic() < deadline:  # a pilot run's first step
        time.sleep(0.2)
    assert proc.poll() is None and _logged(out), "the suite ended or logged nothing before the interrupt"
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    command = ["zerolock", "verify", "--quick", "--out", str(out), "--jobs", "2"]
    for override in SMALL[2:-2:2]:
        command += ["--set", override]
    assert stderr.strip().splitlines() == [f"zerolock verify: interrupted; resume with: {shlex.join(command)}"]
    assert "Traceback" not in stdout
