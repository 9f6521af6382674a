"""Sweeps: grid expansion, names, and resumability (complete runs skipped, partial resumed)."""

from __future__ import annotations

import shutil

import pytest

from zerolock_theory.app.cli import main
from zerolock_theory.app.workflows.sweep import expand_grid, is_complete, parse_axis, run_grid
from zerolock_theory.jsonio import read_records


def test_parse_axis_and_expand_grid():
    assert parse_axis("optim.lr=1e-3,0.01") == ("optim.lr", [0.001, 0.01])
    assert parse_axis("method.direction=forward,reverse") == ("method.direction", ["forward", "reverse"])
    points = expand_grid([parse_axis("optim.lr=1,2"), parse_axis("run.seed=0,1,2")])
    assert len(points) == 6
    assert points[0].name == "lr-1_seed-0" and points[-1].name == "lr-2_seed-2"
    assert dict(points[4].overrides) == {"optim.lr": 2, "run.seed": 1}


@pytest.mark.parametrize("bad", ["lr=1,2", "optim.lr", "optim.lr="])
def test_bad_axis_is_refused(bad):
    with pytest.raises(ValueError):
        parse_axis(bad)


def test_cli_dry_run_and_invalid_grid(capsys, tmp_path):
    assert main(["sweep", "--out", str(tmp_path), "--grid", "run.seed=0,1", "--dry-run"]) == 0
    assert capsys.readouterr().out.split() == ["seed-0", "seed-1"]
    assert main(["sweep", "--out", str(tmp_path), "--grid", "method.alpha=0.5,2"]) == 2
    assert "alpha" in capsys.readouterr().err


def test_sweep_skips_complete_and_resumes_partial(tmp_path):
    base = {
        "model": {"chunks": 2},
        "data": {"seq_len": 32, "batch_size": 2, "eval_batches": 1},
        "run": {"steps": 4, "eval_every": 2, "checkpoint_every": 2, "progress": False},
    }
    points = expand_grid([parse_axis("run.seed=0,1")])
    dirs = run_grid(base, points, tmp_path, log=lambda _: None)
    assert all(is_complete(d, 4) for d in dirs)
    reference = read_records(dirs[1] / "metrics.jsonl")
    shutil.rmtree(dirs[1] / "checkpoints" / "step_00000004")  # seed 1 interrupted after step 2
    lines = []
    run_grid(base, points, tmp_path, log=lines.append)
    assert any("seed-0: complete, skipped" in line for line in lines)
    assert any("seed-1: resuming" in line for line in lines)
    timing = ("train/tokens_per_s", "train/step_time_s")
    strip = lambda rs: [{k: v for k, v in r.items() if k not in timing} for r in rs]  # noqa: E731
    assert strip(read_records(dirs[1] / "metrics.jsonl")) == strip(reference)
