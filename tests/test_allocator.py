"""keep_freed_memory: fewer page faults for the probes' float64 temporaries, the user's settings kept."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from zerolock_theory.allocator import SETTINGS, _glibc

pytestmark = pytest.mark.skipif(_glibc() is None, reason="glibc's malloc only")

# The shape of the scaling probe's drift maths: float64 [K+1, N, V] temporaries, made and freed.
CHURN = """
import resource, sys
from zerolock_theory.allocator import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "on" else {}
import torch
x = torch.rand(5, 64, 4096, dtype=torch.float64)
for i in range(35):
    if i == 5:  # the steady state: the first rounds grow the heap
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    logs = [(x * c).log() for c in (0.5, 0.25, 0.125)]
    torch.where(x > 0, x * (logs[0] - logs[1]), torch.zeros_like(x)).sum(-1)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, sorted(applied))
"""


def _churn(mode: str, env: dict[str, str]) -> tuple[int, str]:
    out = subprocess.run([sys.executable, "-c", CHURN, mode], env=env, capture_output=True, text=True,
                         check=True).stdout.split(maxsplit=1)
    return int(out[0]), out[1].strip()


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    return {**env, "OMP_NUM_THREADS": "1"}


def test_freed_pages_are_reused():
    """In the steady state the same allocations fault under a third as many pages in once the
    settings apply."""
    off, _ = _churn("off", _clean_env())
    on, applied = _churn("on", _clean_env())
    assert applied == str(sorted(SETTINGS))
    assert on < off / 3, (on, off)


def test_user_settings_are_kept():
    """A MALLOC_*_ variable the user set is neither overridden nor re-applied."""
    env = {**_clean_env(), "MALLOC_TRIM_THRESHOLD_": "131072"}
    _, applied = _churn("on", env)
    assert "MALLOC_TRIM_THRESHOLD_" not in applied
    assert "MALLOC_MMAP_THRESHOLD_" in applied
