"""Shared by the benchmark scripts' tests: run one script as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_benchmark() -> Callable[..., subprocess.CompletedProcess]:
    """``run_benchmark("name.py", *args)``: ``benchmarks/name.py`` in a fresh interpreter from the
    repository root, this checkout first on the path; its exit code and output."""

    def run(script: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=600)

    return run
