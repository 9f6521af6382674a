"""The diagnosis's control recipes (recipes/diagnosis/): each is tune_embedded (embedded_*) or
tune_smollm2_cpu (smollm2_*) with its control's method keys and nothing else changed, and each
tunes one method over >= 3 values."""

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
    "smollm2_plain": ("zerolock-forward", {}),
    "smollm2_backprop_wide": ("backprop", {}),
    "smollm2_alpha_out": ("zerolock-forward", {"alpha": [0.5, 0.5, 0.5, 0.5, 1.0]}),
    "smollm2_alpha_one": ("zerolock-forward", {"alpha": 1.0}),
    "smollm2_frozen": ("zerolock-forward", {"alpha": [0.5, 0.5, 0.5, 0.5, 1.0], "frozen_chunks": [1, 2, 3, 4]}),
    "smollm2_p0_uniform": ("zerolock-forward", {"p0": "uniform"}),
    "smollm2_twin_half": ("zerolock-forward", {"detach": False}),
    "smollm2_twin_one": ("zerolock-forward", {"alpha": 1.0, "detach": False}),
}
BASE = {"embedded": "tune_embedded", "smollm2": "tune_smollm2_cpu"}


def test_every_recipe_of_the_folder_is_a_known_control():
    assert sorted(p.stem for p in DIAG.glob("*.toml")) == sorted(CONTROLS)


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_a_control_changes_only_its_method_keys(name):
    method, keys = CONTROLS[name]
    base, spec = split_recipe(read_recipe(DIAG / f"{name}.toml"))
    ref_base, ref_spec = split_recipe(read_recipe(BASE[name.split("_")[0]]))
    config, ref = TrainConfig.from_dict(base).to_dict(), TrainConfig.from_dict(ref_base).to_dict()
    assert {k: v for k, v in config.items() if k != "method"} == {k: v for k, v in ref.items() if k != "method"}
    changed = {k: v for k, v in config["method"].items() if v != ref["method"][k]}
    assert changed == keys
    assert spec.methods == (method,) and len(spec.lr_grid) >= 3
    assert (spec.grid_seeds, spec.confirm_seeds) == (ref_spec.grid_seeds, ref_spec.confirm_seeds)
    if method == "backprop":  # both tunes chose their largest value for backprop: the grid goes above it
        assert max(spec.lr_grid) > max(ref_spec.lr_grid)
    if name == "smollm2_plain":  # tune_smollm2_cpu chose its smallest value for ZeroLock: the grid goes below it
        assert min(spec.lr_grid) < min(ref_spec.lr_grid)
