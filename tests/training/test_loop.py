"""The training loop on the embedded model: run directory, resume equality, errors."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from zerolock_theory.app.cli import main
from zerolock_theory.config import TrainConfig, load_config, read_recipe
from zerolock_theory.jsonio import read_records
from zerolock_theory.training.loop import setup, train
from zerolock_theory.training.state import latest_checkpoint
from zerolock_theory.training.steps import NonFiniteLossError

TIMING = ("train/tokens_per_s", "train/step_time_s")


def small_config(**sections) -> TrainConfig:
    raw = {
        "model": {"chunks": 2},
        "data": {"seq_len": 32, "batch_size": 2, "eval_batches": 1},
        "optim": {"name": "adamw", "lr": 3e-3},
        "run": {"steps": 6, "eval_every": 3, "checkpoint_every": 3, "progress": False},
    }
    for name, values in sections.items():
        raw.setdefault(name, {}).update(values)
    return TrainConfig.from_dict(raw)


def _strip(records):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records]


def _final_adapters(run_dir: Path) -> dict[str, torch.Tensor]:
    return load_file(str(latest_checkpoint(run_dir) / "adapters.safetensors"))


def _assert_same_run(a: Path, b: Path) -> None:
    assert _strip(read_records(a / "metrics.jsonl")) == _strip(read_records(b / "metrics.jsonl"))
    wa, wb = _final_adapters(a), _final_adapters(b)
    assert wa.keys() == wb.keys()
    for name in wa:
        assert torch.equal(wa[name], wb[name]), name


@pytest.mark.parametrize("method", ["zerolock", "backprop"])
def test_run_directory_contents(tmp_path, method):
    summary = train(small_config(method={"name": method}), tmp_path / "run")
    run = tmp_path / "run"
    for name in ("config.json", "manifest.json", "metrics.jsonl"):
        assert (run / name).is_file(), name
    records = read_records(run / "metrics.jsonl")
    assert [r["step"] for r in records] == list(range(6))
    first = records[0]
    for key in ("train/lr", "train/final_ce", "train/grad_norm_sq", "train/tokens_per_s", "data/epoch",
                "chunk/2/ce", "chunk/1/grad_norm_sq", "eval/ce_initial"):
        assert key in first, key
    # backprop reads out the chunks before K at the eval cadence only (training.steps)
    assert [r["step"] for r in records if "chunk/1/ce" in r] == ([2, 5] if method == "backprop" else list(range(6)))
    if method == "zerolock":
        for key in ("chunk/1/loss", "chunk/1/consistency", "chunk/2/task"):
            assert key in first, key
    assert "eval/ce" in records[2] and "eval/chunk/1/ce" in records[5]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["versions"]["torch"] and "transformers" in manifest["versions"]
    assert TrainConfig.from_dict(json.loads((run / "config.json").read_text())) == small_config(method={"name": method})
    assert summary.initial_eval_ce == records[0]["eval/ce_initial"]
    assert (run / "checkpoints" / "step_00000006" / "COMPLETE").is_file()


def test_training_lowers_held_out_ce(tmp_path):
    cfg = small_config(run={"steps": 20, "eval_every": 20, "checkpoint_every": 20})
    summary = train(cfg, tmp_path / "run")
    assert summary.final_eval_ce < summary.initial_eval_ce


@pytest.mark.parametrize("method", ["zerolock", "backprop"])
def test_resume_equals_uninterrupted(tmp_path, method):
    cfg = small_config(method={"name": method}, model={"lora": {"dropout": 0.1}})
    full = train(cfg, tmp_path / "full")
    shutil.copytree(tmp_path / "full", tmp_path / "cut")
    cut = tmp_path / "cut"
    shutil.rmtree(cut / "checkpoints" / "step_00000006")  # interrupted after step 4 ...
    with open(cut / "metrics.jsonl", "a") as fh:
        fh.write('{"step": 6, "torn')  # ... mid-write
    resumed = train(cfg, cut, resume=True)
    _assert_same_run(tmp_path / "full", cut)
    assert resumed.initial_eval_ce == full.initial_eval_ce  # read back from the log: ω^0 is not evaluated again


def test_resume_after_sigkill_equals_uninterrupted(tmp_path):
    args = ["--out", str(tmp_path / "killed"), "--chunks", "2", "--seq-len", "32", "--batch-size", "2",
            "--steps", "12", "--checkpoint-every", "2", "--eval-every", "4", "--optimizer", "adamw",
            "--lr", "0.003", "--set", "data.eval_batches=1", "--set", "run.threads=1", "--no-progress"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "zerolock_theory", "train", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    marker = tmp_path / "killed" / "checkpoints" / "step_00000004" / "COMPLETE"
    deadline = time.time() + 120
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert marker.exists(), "the run never reached its second checkpoint"
    assert main(["train", *args, "--resume"]) == 0
    cfg = load_config(None, ["model.chunks=2", "data.seq_len=32", "data.batch_size=2", "run.steps=12",
                             "run.checkpoint_every=2", "run.eval_every=4", 'optim.name="adamw"',
                             "optim.lr=0.003", "data.eval_batches=1", "run.progress=false", "run.threads=1"])
    train(cfg, tmp_path / "uninterrupted")
    _assert_same_run(tmp_path / "uninterrupted", tmp_path / "killed")


def test_resume_refuses_a_different_experiment(tmp_path):
    train(small_config(run={"steps": 3}), tmp_path / "run")
    with pytest.raises(ValueError, match="method.alpha"):
        setup(small_config(method={"alpha": 0.9}), tmp_path / "run", resume=True)


def test_cli_refuses_non_empty_out(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    assert main(["train", "--out", str(out), "--steps", "1", "--no-progress"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (out / "precious.txt").read_text() == "keep me"


def test_non_finite_loss_stops_with_clear_error(tmp_path):
    run = setup(small_config(), tmp_path / "run")
    with torch.no_grad():
        run.step_fn.params[0][0].fill_(float("nan"))
    batch = run.stream.next_batch()
    with pytest.raises(NonFiniteLossError, match="chunk 1"):
        run.step_fn.train_step(batch, 0)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (["method.direction=reverse"], "epsilon"),
        (["method.alpha=1.5"], "alpha"),
        (["model.lora.rank=0"], "rank"),
        (["optim.schedule=linear"], "schedule"),
        (["model.bogus=1"], "bogus"),
    ],
)
def test_config_validation(override, message):
    with pytest.raises(ValueError, match=message):
        load_config(None, override)


def test_cli_reports_config_errors_in_one_line(tmp_path, capsys):
    assert main(["train", "--out", str(tmp_path / "r"), "--divergence", "reverse"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "epsilon" in err


def test_every_shipped_recipe_loads():
    recipes = sorted(p for p in (resources.files("zerolock_theory") / "recipes").iterdir()
                     if p.name.endswith((".toml", ".yaml")))
    assert len(recipes) >= 4
    for recipe in recipes:
        sections = read_recipe(Path(str(recipe)))
        if "suite" in sections or "tune" in sections:
            continue  # a verify suite or a tune grid: tests/cli/test_verify_config.py and test_tune.py load those
        cfg = load_config(Path(str(recipe)))
        assert cfg.run.steps >= 1, recipe.name


def test_corrupt_checkpoint_is_a_clear_error(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", "--out", str(out), "--chunks", "2", "--seq-len", "32", "--batch-size", "2", "--steps", "2",
            "--checkpoint-every", "2", "--set", "data.eval_batches=1", "--no-progress"]
    assert main(args) == 0
    (latest_checkpoint(out) / "state.pt").write_bytes(b"truncated")
    assert main([*args, "--resume"]) == 2
    assert "cannot read checkpoint" in capsys.readouterr().err
