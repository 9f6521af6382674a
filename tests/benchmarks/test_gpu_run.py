"""benchmarks/gpu_run.py: every part writes its table or says why not, and a failing or cut-off part
does not stop the next one."""

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
import gpu_run  # noqa: E402

from zerolock_theory.app.workflows.verify_config import load_suite  # noqa: E402


def _run(out: Path, *flags: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, str(BENCHMARKS / "gpu_run.py"), "--out", str(out), *flags], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)


def _summary(out: Path) -> dict[str, str]:
    """part -> its summary row's status."""
    rows = (out / "summary.txt").read_text().splitlines()[1:]
    return {row.split()[0]: row.split(None, 1)[1].split(" | ")[0] for row in rows}


def _status(out: Path, part: str) -> str:
    return [line for line in (out / f"{part}.txt").read_text().splitlines() if line.startswith("status:")][-1]


def test_dry_run_writes_each_parts_table_and_a_failing_part_does_not_stop_the_next(tmp_path: Path) -> None:
    """--dry-run, the scaling part forced to fail: the gpu tests are skipped (no CUDA here) with their
    rows, the population part writes its table or "not available", scaling is reported FAILED in its
    table and the summary, and the suite after it still runs and writes its verdict table."""
    done = _run(tmp_path, "--dry-run", "--fail", "scaling")
    assert done.returncode == 1, done.stderr[-2000:]  # one part failed
    summary = _summary(tmp_path)
    assert list(summary) == list(gpu_run.PARTS)
    tests = (tmp_path / "tests.txt").read_text()
    assert summary["tests"] == "skipped: needs CUDA" and "needs a CUDA device" in tests or summary["tests"] == "ok"
    population = (tmp_path / "population.txt").read_text()
    assert (summary["population"] == "not available: population trainer not available in this checkout"
            or (summary["population"] == "ok" and "S = 2" in population))
    assert summary["scaling"].startswith("FAILED RuntimeError: forced failure of part scaling")
    assert _status(tmp_path, "scaling") == "status: " + summary["scaling"]
    assert summary["suite"] == "ok" and _status(tmp_path, "suite") == "status: ok"
    verdicts = (tmp_path / "suite_verdicts.txt").read_text()
    assert "gpu_run --dry-run suite" in verdicts and "Lemma 2 as stated" in verdicts
    assert "verdict" in (tmp_path / "suite.txt").read_text() and (tmp_path / "suite_report.md").is_file()


def test_a_part_over_its_budget_is_cut_and_the_next_part_runs(tmp_path: Path) -> None:
    """A part that never ends is killed at its budget and reported TIMED OUT; the next part runs."""
    done = _run(tmp_path, "--dry-run", "--parts", "scaling", "population", "--hang", "scaling", "--budget", "scaling=2")
    summary = _summary(tmp_path)
    assert done.returncode == 1
    assert summary["scaling"] == "TIMED OUT: ran out of its time budget of 2 s"
    assert _status(tmp_path, "scaling") == "status: TIMED OUT: ran out of its time budget of 2 s"
    assert summary["population"].startswith(("not available", "ok"))
    assert _status(tmp_path, "population").startswith(("status: not available", "status: ok"))


def test_parts_with_no_time_left_of_the_total_are_reported_skipped(tmp_path: Path) -> None:
    done = _run(tmp_path, "--dry-run", "--parts", "population", "tests", "--total", "0")
    assert done.returncode == 1
    assert _summary(tmp_path) == dict.fromkeys(("population", "tests"), "skipped: no time left of the total budget (0 s)")
    assert _status(tmp_path, "tests") == "status: skipped: no time left of the total budget (0 s)"


def test_the_suite_part_runs_the_gpu_suite_at_300_steps_and_16_seeds_on_the_device() -> None:
    spec, tables = load_suite(gpu_check_smollm2.SUITE, gpu_check_smollm2.suite_overrides(
        "smollm2-135m", "cuda", False, False, gpu_run.long_horizon(300, 16)))
    assert spec.steps >= 300 and len(spec.seeds) >= 16 and spec.chunks == gpu_check_smollm2.CHUNKS
    assert tables["model"] == {"path": "smollm2-135m", "device": "cuda", "autocast": "bfloat16"}
    assert sum(gpu_run.BUDGET.values()) <= gpu_run.TOTAL <= 540


@pytest.mark.slow
def test_dry_run_every_part_succeeds_or_says_why_not(tmp_path: Path) -> None:
    done = _run(tmp_path, "--dry-run")
    assert done.returncode == 0, (tmp_path / "summary.txt").read_text()
    summary = _summary(tmp_path)
    assert summary["scaling"] == "ok" and "kernel launches: probe with baseline" in (tmp_path / "scaling.txt").read_text()
    assert summary["suite"] == "ok"
