"""benchmarks/step_against_rev.py: each tree's code runs in its own worker; a bad revision is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "step_against_rev.py"


def test_a_revision_git_does_not_know_is_one_line_and_nothing_starts(run_benchmark):
    done = run_benchmark(SCRIPT, "--rev", "no-such-revision-0123")
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.strip() == "--rev no-such-revision-0123: not a revision of this repository"


@pytest.mark.slow
def test_both_trees_step_in_their_own_workers(run_benchmark):
    """HEAD against today's tree: each (tree, method) worker imports the package from its own
    tree (the unpacked revision, or this checkout), and every method gets a row."""
    done = run_benchmark(SCRIPT, "--rev", "HEAD", "--chunks", "2", "--seq-len", "8", "--batch-size", "2", "--repeats", "1",
                "--warmup", "0")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {fields[0]: fields for fields in map(str.split, done.stdout.splitlines())
            if len(fields) == 4 and fields[0] in ("zerolock", "backprop")}
    assert set(rows) == {"zerolock", "backprop"} and all(float(r[3]) > 0 for r in rows.values())
    ran = [line.split("ran ")[1] for line in done.stdout.splitlines() if " ran " in line]
    assert len(ran) == 4 and ran.count(str(ROOT / "zerolock_theory")) == 2
    assert all("step-against-rev-" in path and path.endswith("tree/zerolock_theory")
               for path in ran if path != str(ROOT / "zerolock_theory"))
