"""benchmarks/suite_member_cost.py: the full suite's group as a population, its cost table and the
batched pieces against their per-member forms; bad sizes are one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "suite_member_cost.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=600)


def test_bad_sizes_are_one_line():
    done = _run("--steps", "1")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines()[-1].endswith("--members must be >= 1, --steps >= 2 and --repeats >= 1")


@pytest.mark.slow
def test_two_members_two_steps_print_every_part():
    done = _run("--members", "2", "--steps", "2", "--repeats", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for part in ("training step", "probe ProofProbe", "probe ScalingProbe", "global G-hat_t", "rest (loop",
                 "at 20 seeds", "one population pass", "largest relative difference 0.0e+00", "eval/train switch",
                 "Population.member(s) entered and left, S = 2"):
        assert part in out, part
