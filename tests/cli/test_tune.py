"""zerolock tune: the packaged recipe loads, the grid's order, the three-way split leaves the default alone."""

from __future__ import annotations

from zerolock_theory.config import TrainConfig, apply_values, read_recipe
from zerolock_theory.workflows.tune import confirm_points, grid_points, split_recipe


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
