"""Lemma 2's fixed points beside the training runs (``--jobs`` >= 2): the same results as run after them,
in a process of their own that ends with the suite's block; a failure there is one line here."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing

import pytest
import torch

from zerolock_theory.app.workflows.side_runs import fixed_points_beside
from zerolock_theory.app.workflows.suite_spec import QUICK, suite_base

pytestmark = pytest.mark.slow  # three fixed-point experiments: about a minute on one core

SPEC = dataclasses.replace(QUICK, seeds=(0, 1), probe_positions=16, fixed_point_chunks=(1,), fixed_point_steps=30)
TIMING = ("time", "per_s", "seconds")


def _base(spec):
    return suite_base(spec, "embedded", "embedded", "cpu", "float32", None)


def _untimed(value):
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not any(t in k for t in TIMING)}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _controls(out):
    return _untimed(json.loads((out / "chunk-1" / "controls.json").read_text()))


def test_beside_equals_after(tmp_path):
    """jobs = 2 runs them in a spawned one-thread process; jobs = 1 here, on one thread: the same files."""
    lines: dict[int, list[str]] = {1: [], 2: []}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for jobs in (1, 2):
            with fixed_points_beside(SPEC, _base(SPEC), tmp_path / f"j{jobs}", jobs, log=lines[jobs].append) as done:
                dirs = done()
            assert dirs == [tmp_path / f"j{jobs}" / "chunk-1"]
    finally:
        torch.set_num_threads(threads)
    assert _controls(tmp_path / "j1") == _controls(tmp_path / "j2")
    assert [x.split(":")[0] for x in lines[1]] == [x.split(":")[0] for x in lines[2]] != []
    assert not multiprocessing.active_children()
    with fixed_points_beside(SPEC, _base(SPEC), tmp_path / "j2", 2, log=lines[2].append) as done:  # done: skipped
        assert done() == [tmp_path / "j2" / "chunk-1"]
    assert lines[2][-1] == "fixed point, chunk 1: done, skipped"


def test_a_failure_is_one_line_and_leaving_the_block_ends_the_process(tmp_path):
    bad = dataclasses.replace(SPEC, fixed_point_chunks=(9,))  # K = 4: no chunk 9
    with fixed_points_beside(bad, _base(bad), tmp_path / "bad", 2) as done:
        with pytest.raises(RuntimeError, match=r"^the fixed points failed: \w+Error: .*9"):
            done()
    with pytest.raises(KeyError):
        with fixed_points_beside(SPEC, _base(SPEC), tmp_path / "left", 2):
            assert len(multiprocessing.active_children()) == 1
            raise KeyError("a training run failed")
    assert not multiprocessing.active_children()
    assert not (tmp_path / "left" / "chunk-1" / "controls.json").exists()
