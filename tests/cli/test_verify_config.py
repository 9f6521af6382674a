"""verify --config/--set: the packaged suites equal the presets, overrides reach the runs' base config,
bad [suite] input is one line (exit 2, nothing written). No training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zerolock_theory.app.cli import main
from zerolock_theory.app.workflows import verify as verify_module
from zerolock_theory.app.workflows.suite_spec import FULL, QUICK, suite_base, suite_points
from zerolock_theory.app.workflows.verify_config import load_suite
from zerolock_theory.config import TrainConfig


def test_packaged_suites_equal_the_presets():
    assert load_suite("verify_quick") == (QUICK, {})
    assert load_suite("verify_full") == (FULL, {})
    assert QUICK.seeds == (0, 1, 2) and QUICK.lr_factors == ()


def test_the_smollm2_suites_load_with_their_model_and_a_valid_memory_split():
    """verify_smollm2_cpu (2 cores) and verify_smollm2 (GPU): SmolLM2 at K = 5; the memory runs
    at K = 2, 3, 5 with 8 micro-batches (1F1B needs >= K); the CPU suite is short (Theorem 1
    not testable) and its scope line names it, but scales >= 30 steps per seed (Assumption 5's
    share needs them: the run with 10 read "not testable")."""
    cpu, tables = load_suite("verify_smollm2_cpu")
    assert tables == {"model": {"path": "smollm2-135m"}} and (cpu.chunks, cpu.smoke, cpu.steps) == (5, True, 32)
    assert (cpu.memory_stages, cpu.memory_micro_batches, cpu.scaled_steps, cpu.proof_every) == ((2, 3, 5), 8, 32, 0)
    base = suite_base(cpu, "embedded", "embedded", "cpu", "float32", None, tables)
    assert base["model"]["path"] == "smollm2-135m" and base["probes"]["scaling"]["every"] == 1
    assert verify_module._scope_settings(cpu, {"backprop": 0.1}, [], "embedded")["suite"].startswith(
        "SmolLM2 CPU suite (32 steps: Theorem 1 not testable); eta_0: backprop 0.1")
    assert cpu.scaling_groups == ("zerolock-forward", "zerolock-reverse")
    points = {p.name: dict(p.overrides) for p in suite_points(cpu, 0.025)}
    assert [n for n, o in points.items() if o.get("probes.scaling.enabled") is False] == [
        f"backprop_lr-0.025_seed-{s}" for s in range(3)]  # the backprop runs skip the scaled steps, nothing else does
    full = {p.name: dict(p.overrides) for p in suite_points(FULL, 0.1)}
    assert FULL.scaling_groups == cpu.scaling_groups
    for name, over in full.items():  # backprop: neither scaled steps nor the proof probe (its drift is 0)
        bp = name.startswith("backprop")
        assert (over.get("probes.scaling.enabled") is False) == (bp or "matched" in name), name
        assert (over.get("probes.proof.enabled") is False) == (bp or "matched" in name), name
    with pytest.raises(ValueError, match=r"suite.scaling_groups: unknown group\(s\) \['sideways'\]"):
        load_suite("verify_smollm2_cpu", ['suite.scaling_groups=["sideways"]'])
    gpu, tables = load_suite("verify_smollm2")
    assert tables == {"model": {"path": "smollm2-135m"}} and (gpu.steps, len(gpu.seeds), gpu.smoke) == (1000, 5, False)
    with pytest.raises(ValueError, match="memory_micro_batches=4: the memory runs need >= max"):
        load_suite("verify_smollm2_cpu", ["suite.memory_micro_batches=4"])
    with pytest.raises(ValueError, match="divide suite.batch_size=6"):
        load_suite("verify_smollm2_cpu", ["suite.batch_size=6"])


def test_empty_lr_factors_means_no_sweep():
    names = [p.name for p in suite_points(QUICK, 0.1)]
    assert len(names) == 9 and all("lr-0.1_" in n for n in names)  # 3 methods x 3 seeds, nothing swept
    full = [p.name for p in suite_points(FULL, {"zerolock-forward": 0.1, "zerolock-reverse": 0.003, "backprop": 0.2})]
    assert len(full) == 15 + 3 and full[-3:] == [f"zerolock-forward-matched_lr-0.003_seed-{s}" for s in range(3)]


def _captured(monkeypatch, argv: list[str]) -> dict:
    """Run the verify CLI with verify() replaced by a recorder; return its arguments."""
    seen: dict = {}

    def record(spec, out, **kwargs):
        seen.update(spec=spec, out=out, **kwargs)
        raise ValueError("recorded")

    monkeypatch.setattr(verify_module, "verify", record)
    assert main(["verify", "--out", "unused", *argv]) == 2
    return seen


def test_set_and_shorthands_reach_the_base_config(monkeypatch, capsys):
    seen = _captured(monkeypatch, ["--quick", "--steps", "60", "--seeds", "4", "--data", "c.jsonl",
                                   "--set", "data.text_field=body", "--set", "model.lora.rank=4",
                                   "--set", "model.readout_chunk_size=256", "--set", "data.seq_len=64",
                                   "--set", "suite.lr_factors=[0.5]", "--autocast", "bfloat16"])
    spec, tables = seen["spec"], seen["tables"]
    assert (spec.steps, spec.seeds, spec.lr_factors, spec.seq_len) == (60, (0, 1, 2, 3), (0.5,), 32)
    base = suite_base(spec, "embedded", "embedded", seen["device"], "float32", None, tables)
    assert base["data"] == {"source": "c.jsonl", "seq_len": 64, "batch_size": 4, "text_field": "body"}
    assert base["model"]["lora"] == {"rank": 4} and base["model"]["readout_chunk_size"] == 256
    assert (base["model"]["dtype"], base["model"]["autocast"]) == ("float32", "bfloat16")
    assert base["run"]["steps"] == 60 and base["probes"]["stability"]["n_positions"] == 64  # from [suite]
    config = TrainConfig.from_dict(base)
    assert (config.data.seq_len, config.model.lora.rank, config.data.text_field) == (64, 4, "body")


def test_recipe_tables_and_verify_json(tmp_path: Path, monkeypatch):
    """A recipe's [data] table lands in verify.json's base (the runs themselves are skipped)."""
    recipe = tmp_path / "mine.toml"
    text = (Path(verify_module.__file__).parents[2] / "recipes" / "verify_quick.toml").read_text()
    recipe.write_text(text + "\n[data]\nbatch_size = 2\n\n[method]\nalpha = 0.25\n")

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        raise Stop

    monkeypatch.setattr(verify_module, "run_points", stop)
    spec, tables = load_suite(recipe, ["suite.lr=0.05", "run.eval_every=20"])
    with pytest.raises(Stop):
        verify_module.verify(spec, tmp_path / "v", device="cpu", tables=tables)
    saved = json.loads((tmp_path / "v" / "verify.json").read_text())
    assert saved["base"]["data"]["batch_size"] == 2 and saved["base"]["method"]["alpha"] == 0.25
    assert saved["base"]["run"]["eval_every"] == 20 and saved["lr"]["backprop"] == 0.05


@pytest.mark.parametrize("argv, message", [
    (["--set", "suite.bogus=1"], "unknown key(s) in [suite]: ['bogus']"),
    (["--set", "suite.steps=2.5"], "suite.steps=2.5: expected an integer"),
    (["--set", "suite.seeds=[]"], "suite.seeds=[]: needs at least one seed"),
    (["--set", 'suite.lr_grid="fast"'], "suite.lr_grid=\"fast\": expected a list of numbers"),
    (["--set", "suite.smoke=1"], "suite.smoke=1: expected true or false"),
    (["--set", "suite.eval_every=0"], "suite.eval_every=0: must be >= 1"),
    (["--config", "backprop"], "has no [suite] table"),
    (["--set", "data.seq_len=-3"], "seq_len"),
    (["--set", "nosuch.key=1"], "nosuch"),
])
def test_bad_suite_input_is_one_line_and_writes_nothing(tmp_path: Path, capsys, argv, message):
    out = tmp_path / "v"
    assert main(["verify", "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_a_suite_missing_keys_names_them(tmp_path: Path, capsys):
    recipe = tmp_path / "s.toml"
    recipe.write_text("[suite]\nsteps = 40\n")
    assert main(["verify", "--config", str(recipe), "--out", str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err.strip()
    assert "[suite] misses" in err and "seq_len" in err and len(err.splitlines()) == 1


def test_train_refuses_a_verify_suite_in_one_line(tmp_path: Path, capsys):
    assert main(["train", "--config", "verify_quick", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert "is a verify suite" in err and len(err.splitlines()) == 1 and not (tmp_path / "r").exists()


def test_variable_length_tuples_are_type_checked():
    from zerolock_theory.config_types import check_value

    assert check_value([1, 2], tuple[float, ...], "k") == (1.0, 2.0)
    assert check_value([], tuple[int, ...], "k") == ()
    with pytest.raises(ValueError, match=r'^k=\[1, "a"\]: expected a list of integers$'):
        check_value([1, "a"], tuple[int, ...], "k")
