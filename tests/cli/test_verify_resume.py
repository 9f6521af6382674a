"""``zerolock verify`` survives a kill: SIGKILL at random points, then the same command again.

The resumed suite must end with the same verdict table, the same analysis and, run by run,
the same ``metrics.jsonl`` as an uninterrupted suite (timings aside), say what it skipped, and
leave no process behind (the workers die with the killed parent). Ctrl-C prints one line with
the command that resumes and exits with 130.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import signal
import subprocess
import sys
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
TIMING = ("time", "per_s", "seconds")  # wall-clock figures differ between any two runs
PROVENANCE = ("manifest", "path")  # each run's start time, git commit and directory


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
            "OMP_NUM_THREADS": "1"}


def _start(out: Path, args: list[str] = SMALL) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "zerolock_theory", "verify", *args, "--out", str(out)],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _children(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from /proc)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found += kids
        frontier += kids
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _written(out: Path) -> bool:
    """Whether some run of the killed suite had logged a step (a non-empty ``metrics.jsonl``)."""
    return any(f.stat().st_size > 0 for f in out.rglob("metrics.jsonl"))


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
    tic = time.perf_counter()
    proc = _start(reference, args)
    stdout, stderr = proc.communicate(timeout=3600)
    total = time.perf_counter() - tic
    assert proc.returncode == 0, stderr
    table = _verdict_table(stdout)
    rng = random.Random(0)
    resumed = 0
    for point in (rng.uniform(0.1, 0.35), rng.uniform(0.35, 0.6), rng.uniform(0.6, 0.9)):  # pilot, runs, late
        out = tmp_path / f"killed-{point:.2f}"
        proc = _start(out, args)
        time.sleep(point * total)
        kids = _children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)  # the parent only: its workers must follow it
        proc.communicate()
        deadline = time.monotonic() + 30
        while any(_alive(k) for k in kids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [k for k in kids if _alive(k)], f"processes left behind after the kill at {point:.2f}"
        written = _written(out)
        resumed += written
        again = _start(out, args)
        stdout, stderr = again.communicate(timeout=3600)
        assert again.returncode == 0, stderr
        if not written:  # killed before any run logged a step (a slow start): nothing to resume
            pass
        elif suite == "quick":
            assert "resuming: " in stdout and "already complete, skipped" in stdout, stdout
        else:  # it says what it skipped, or which half-written runs it resumes
            assert "complete, skipped" in stdout or ": resuming" in stdout, stdout
        assert _verdict_table(stdout) == table, point
        assert _metrics(out) == _metrics(reference), point
        assert _analysis(out) == _analysis(reference), point
    assert resumed >= 2, "fewer than two kills found a run with logged steps: the test resumed nothing"


@pytest.mark.slow
def test_ctrl_c_prints_the_resume_command_and_exits_130(tmp_path) -> None:
    out = tmp_path / "v"
    proc = _start(out)
    time.sleep(20)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    command = ["zerolock", "verify", "--quick", "--out", str(out), "--jobs", "2"]
    for override in SMALL[2:-2:2]:
        command += ["--set", override]
    assert stderr.strip().splitlines() == [f"zerolock verify: interrupted; resume with: {shlex.join(command)}"]
    assert "Traceback" not in stdout
