"""zerolock tune: the packaged recipe loads, the grid's order, shards partition it and equal one process."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from reports.tuned_figures import write_tuned_figures
from zerolock_theory.app.workflows.tune import (
    confirm_points,
    grid_points,
    parse_shard,
    run_tune,
    split_recipe,
)
from zerolock_theory.config import TrainConfig, read_recipe
from zerolock_theory.config_overrides import apply_values


def test_tune_recipe_loads_and_every_grid_config_validates() -> None:
    base, spec = split_recipe(read_recipe("tune_smollm2_cpu"))
    points = grid_points(spec)
    assert len(points) == len(spec.methods) * len(spec.lr_grid) * len(spec.grid_seeds)
    middle = sorted(spec.lr_grid)[len(spec.lr_grid) // 2]
    assert [dict(p.overrides)["optim.lr"] for p in points[: len(spec.methods)]] == [middle] * len(spec.methods)
    for point in points + confirm_points(spec, dict.fromkeys(spec.methods, middle)):
        config = TrainConfig.from_dict(apply_values(base, dict(point.overrides)))
        assert config.data.test_fraction > 0 and config.data.seed == 0
        assert config.data.order_seed == config.run.seed


def test_shards_partition_each_phase_and_bad_shards_are_refused() -> None:
    _, spec = split_recipe(read_recipe("tune_smollm2_cpu"))
    grid = grid_points(spec)
    shards = [grid[i::3] for i in range(3)]
    assert sorted(p.name for s in shards for p in s) == sorted(p.name for p in grid)
    assert parse_shard("1/2") == (1, 2)
    for bad in ("2/2", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(ValueError, match="--shard"):
            parse_shard(bad)


TINY = """
[tune]
methods = ["zerolock-forward", "zerolock-reverse", "backprop"]
lr_grid = [0.1, 0.025, 0.00625]
grid_seeds = [0, 1]
confirm_seeds = [2]
[model]
path = "embedded"
chunks = 2
[data]
source = "embedded"
seq_len = 16
batch_size = 2
eval_fraction = 0.1
test_fraction = 0.1
eval_batches = 1
[optim]
name = "sgd"
schedule = "inv_sqrt"
[run]
steps = 2
eval_every = 1
checkpoint_every = 2
progress = false
threads = 1
"""


@pytest.mark.slow
def test_two_shards_give_the_unsharded_tune_run_for_run(tmp_path: Path) -> None:
    """Shard 1 runs its grid share first; shard 0 then finds the grid settled, selects and runs its
    confirmations; shard 1's confirmations last. Every run and the choice equal one unsharded tune."""
    recipe = tmp_path / "tiny.toml"
    recipe.write_text(TINY)
    raw = read_recipe(str(recipe))
    quiet = lambda _line: None  # noqa: E731
    whole = run_tune(raw, tmp_path / "whole", quiet)
    run_tune(raw, tmp_path / "sharded", quiet, shard=(1, 2), phases=("grid",))
    run_tune(raw, tmp_path / "sharded", quiet, shard=(0, 2), poll_s=0.01)
    sharded = run_tune(raw, tmp_path / "sharded", quiet, shard=(1, 2), phases=("confirm",))
    assert sharded["chosen"] == whole["chosen"]
    names = sorted(p.name for p in (tmp_path / "whole").iterdir() if p.is_dir())
    assert names == sorted(p.name for p in (tmp_path / "sharded").iterdir() if p.is_dir())
    assert len(names) == 3 * 3 * 2 + 3
    for name in names:
        a = pd.read_json(tmp_path / "whole" / name / "metrics.jsonl", lines=True)
        b = pd.read_json(tmp_path / "sharded" / name / "metrics.jsonl", lines=True)
        time_columns = [c for c in a.columns if c.endswith("_s") or "time" in c]
        pd.testing.assert_frame_equal(a.drop(columns=time_columns), b.drop(columns=time_columns))
    figures = write_tuned_figures(tmp_path / "whole")
    assert [f.name for f in figures] == ["tuned_curves.png", "tuned_chunks.png"]
    assert all(f.read_bytes()[:4] == b"\x89PNG" for f in figures)


def test_a_shard_without_a_confirmation_run_stops_after_its_grid_share(tmp_path: Path, monkeypatch) -> None:
    """One method, one confirmation seed: shard 1/2 has no confirmation run, so it neither waits for
    shard 0's grid runs nor selects; shard 0 still waits (asked here with phases=("confirm",) on an
    empty grid, so nothing trains)."""
    import zerolock_theory.app.workflows.tune as tune

    recipe = tmp_path / "one.toml"
    recipe.write_text(TINY.replace('["zerolock-forward", "zerolock-reverse", "backprop"]', '["zerolock-forward"]'))
    raw = read_recipe(str(recipe))
    waited = []
    monkeypatch.setattr(tune, "_wait_for", lambda *args, **kwargs: waited.append(1))
    lines: list[str] = []
    summary = run_tune(raw, tmp_path / "t", lines.append, shard=(1, 2), phases=("confirm",))
    assert summary["chosen"] == {} and waited == [] and "no confirmation run falls to this shard" in lines[-1]
    assert not (tmp_path / "t" / "tune.json").exists()
    (tmp_path / "t").mkdir()
    run_tune(raw, tmp_path / "t", lines.append, shard=(0, 2), phases=("confirm",))
    assert waited == [1] and "nothing selected yet" in lines[-1]
