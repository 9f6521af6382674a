"""Recipes by name: `--config NAME` and `zerolock recipes` (list, copy out, never overwrite)."""

from __future__ import annotations

from pathlib import Path

from zerolock_theory.app.cli import main
from zerolock_theory.config import load_config
from zerolock_theory.recipes import RECIPE_DIR, list_recipes

NAMES = ["backprop", "probes", "theorem_sgd", "tune_embedded", "tune_smollm2_cpu", "verify_full", "verify_quick", "verify_sensitivity", "verify_smollm2",
         "verify_smollm2_cpu", "zerolock_forward", "zerolock_reverse"]
TRAIN = [name for name in NAMES if not name.startswith(("verify_", "tune_"))]  # verify_* are suites (tests/cli/test_verify_config.py)


def test_every_packaged_recipe_is_listed_and_loads_by_name() -> None:
    assert list(list_recipes()) == NAMES
    for name in TRAIN:
        by_file = load_config(RECIPE_DIR / f"{name}.toml")
        assert load_config(name) == by_file and load_config(f"{name}.toml") == by_file


def test_a_local_file_wins_over_a_packaged_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("backprop.toml").write_text("[run]\nsteps = 7\n")
    assert load_config("backprop.toml").run.steps == 7
    assert load_config("backprop").method.name == "backprop"


def test_unknown_recipe_names_the_packaged_ones(capsys, tmp_path: Path) -> None:
    assert main(["train", "--config", "nope", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "config file not found: nope" in err and "zerolock_forward" in err


def test_recipes_lists_and_copies_without_overwriting(capsys, tmp_path: Path) -> None:
    assert main(["recipes"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == NAMES
    assert "Theorem 1" in listed[NAMES.index("theorem_sgd")]
    out = tmp_path / "mine.toml"
    assert main(["recipes", "zerolock_forward", "--out", str(out)]) == 0
    assert out.read_text() == (RECIPE_DIR / "zerolock_forward.toml").read_text()
    out.write_text("edited")
    assert main(["recipes", "backprop", "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err and out.read_text() == "edited"
    assert main(["recipes", "probes", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "probes.toml").is_file()
    assert main(["recipes", "nope"]) == 2
