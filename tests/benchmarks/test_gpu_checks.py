"""The GPU check scripts: sized as they say, and runnable with ``--tiny --device cpu``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import gpu_check_smollm2  # noqa: E402

from zerolock_theory.app.workflows.verify_config import load_suite  # noqa: E402


def test_the_smollm2_check_runs_the_gpu_suite_at_its_k_on_the_device():
    """The cost rows' K is the suite's; the suite is verify_smollm2 with the device and bf16 autocast."""
    spec, tables = load_suite(gpu_check_smollm2.SUITE,
                              gpu_check_smollm2.suite_overrides("smollm2-135m", "cuda", tiny=False, full=False))
    assert gpu_check_smollm2.SUITE == "verify_smollm2" and spec.chunks == gpu_check_smollm2.CHUNKS == 5
    assert tables["model"] == {"path": "smollm2-135m", "device": "cuda", "autocast": "bfloat16"}
    assert spec.steps == 20 and len(spec.seeds) == 3 and spec.memory_stages == (2,)
    full, _ = load_suite(gpu_check_smollm2.SUITE, gpu_check_smollm2.suite_overrides("smollm2-135m", "cuda", False, True))
    assert full.steps == 1000  # --full-suite: the suite as shipped


def _run(script: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--tiny", "--device", "cpu"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_gpu_check_smollm2_tiny_on_cpu():
    out = _run("gpu_check_smollm2.py")
    assert "K = 4 for the cost rows" in out and "backprop step ms (own loss only)" in out
    assert "suite verify_smollm2 wall s" in out and "--tiny check of the SmolLM2 GPU suite" in out


@pytest.mark.slow
def test_gpu_check_tiny_on_cpu():
    out = _run("gpu_check.py")
    assert "backprop step ms (own loss only)" in out and "zerolock pipeline" in out
