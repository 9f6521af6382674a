"""docs/PROBES.md's examples run as written.

The two ``python`` blocks of the section "In your own loop, or in a Hugging Face ``Trainer``"
are executed unchanged, each in a fresh working directory, and their printed output checked.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).parents[2] / "docs" / "PROBES.md"
SECTION = "## In your own loop, or in a Hugging Face `Trainer`"


def examples() -> list[str]:
    """The python blocks of the section, as written."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def run_example(code: str, cwd: Path) -> str:
    script = cwd / "example.py"
    script.write_text(code, encoding="utf-8")
    root = str(Path(__file__).parents[2])
    done = subprocess.run([sys.executable, str(script)], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": root, "OMP_NUM_THREADS": "1",
                               "HOME": str(cwd), "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_section_holds_a_session_and_a_trainer_example():
    found = examples()
    assert len(found) == 2
    assert "ProbeSession(" in found[0] and "probes.step(0)" in found[0]  # records omega^0
    assert "ProbeCallback(" in found[1] and "Trainer(" in found[1]


@pytest.mark.slow
def test_the_session_example_runs_as_written(tmp_path):
    out = run_example(examples()[0], tmp_path).splitlines()
    assert out[-2] == "(5, 64, 4096)"
    ratio, ce = map(float, out[-1].split())
    assert ratio == ratio and ce > 0  # finite numbers: stability of the last step, CE of the last chunk
    assert sorted(p.name for p in (tmp_path / "runs" / "mine" / "readouts").glob("step-*.parquet")) == [
        f"step-{t:08d}.parquet" for t in range(5)]


@pytest.mark.slow
def test_the_trainer_example_runs_as_written(tmp_path):
    out = run_example(examples()[1], tmp_path).splitlines()
    assert "[0, 2, 4]" in out
    lines = (tmp_path / "runs" / "trainer" / "probes.jsonl").read_text().splitlines()
    assert len(lines) == 3
