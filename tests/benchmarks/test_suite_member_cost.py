"""benchmarks/suite_member_cost.py: the full suite's group as a population, its cost table and the
batched pieces against their per-member forms; bad sizes are one line."""

from __future__ import annotations

import pytest

SCRIPT = "suite_member_cost.py"


def test_bad_sizes_are_one_line(run_benchmark):
    done = run_benchmark(SCRIPT, "--steps", "1")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines()[-1].endswith("--members must be >= 1, --steps >= 2 and --repeats >= 1")


@pytest.mark.slow
def test_two_members_two_steps_print_every_part(run_benchmark):
    done = run_benchmark(SCRIPT, "--members", "2", "--steps", "2", "--repeats", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for part in ("training step", "probe ProofProbe", "probe ScalingProbe", "global G-hat_t", "rest (loop",
                 "at 20 seeds", "one population pass", "largest relative difference 0.0e+00", "eval/train switch",
                 "Population.member(s) entered and left, S = 2"):
        assert part in out, part
