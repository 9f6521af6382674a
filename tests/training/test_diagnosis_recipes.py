"""The diagnosis's embedded control recipes (recipes/diagnosis/): each is tune_embedded with its
control's method keys and nothing else changed, and each tunes one method over >= 3 values."""

from __future__ import annotations

from pathlib import Path

import pytest

from zerolock_theory.app.workflows.tune import split_recipe
from zerolock_theory.config import TrainConfig, read_recipe

DIAG = Path(__file__).resolve().parents[2] / "zerolock_theory" / "recipes" / "diagnosis"

CONTROLS = {  # recipe -> (its method, the method keys that differ from tune_embedded's)
    "embedded_plain": ("zerolock-forward", {}),
    "embedded_backprop_wide": ("backprop", {}),
    "embedded_alpha_out": ("zerolock-forward", {"alpha": [0.5, 0.5, 0.5, 1.0]}),
    "embedded_alpha_one": ("zerolock-forward", {"alpha": 1.0}),
    "embedded_frozen": ("zerolock-forward", {"alpha": [0.5, 0.5, 0.5, 1.0], "frozen_chunks": [1, 2, 3]}),
    "embedded_p0_uniform": ("zerolock-forward", {"p0": "uniform"}),
    "embedded_twin_half": ("zerolock-forward", {"detach": False}),
    "embedded_twin_one": ("zerolock-forward", {"alpha": 1.0, "detach": False}),
}


def test_every_recipe_of_the_folder_is_a_known_control():
    assert sorted(p.stem for p in DIAG.glob("*.toml")) == sorted(CONTROLS)


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_a_control_changes_only_its_method_keys(name):
    method, keys = CONTROLS[name]
    base, spec = split_recipe(read_recipe(DIAG / f"{name}.toml"))
    ref_base, ref_spec = split_recipe(read_recipe("tune_embedded"))
    config, ref = TrainConfig.from_dict(base).to_dict(), TrainConfig.from_dict(ref_base).to_dict()
    assert {k: v for k, v in config.items() if k != "method"} == {k: v for k, v in ref.items() if k != "method"}
    changed = {k: v for k, v in config["method"].items() if v != ref["method"][k]}
    assert changed == keys
    assert spec.methods == (method,) and len(spec.lr_grid) >= 3
    assert (spec.grid_seeds, spec.confirm_seeds) == (ref_spec.grid_seeds, ref_spec.confirm_seeds)
    if method == "backprop":  # tune_embedded chose its largest value for backprop: the grid goes above it
        assert max(spec.lr_grid) > max(ref_spec.lr_grid)
