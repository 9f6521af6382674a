"""A population trained through the loop writes each member's run directory as its single run would.

S = 3 members against three separate runs of the same configs (embedded model, fp32, 20 steps,
LoRA dropout on, the readouts, stability, minimizers, Lemma 2, gradients and step-scaling probes;
the proof and gradient-batch probes in a second, slow test): every record value (losses, Ĝ_t, gradient
norms, evaluations, every probe value) to 1e-5 relative, every LoRA tensor of the final
checkpoints, the readout store; the analyses load a member's directory as a single run. A
population cut back to an earlier checkpoint (members at different steps) resumes equal to the
uninterrupted one."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

from analyses.io import load_run
from probes.registry import build_probes
from zerolock_theory.config import TrainConfig
from zerolock_theory.records import STEP_TIME_S, TOKENS_PER_S
from zerolock_theory.training.logger import read_records
from zerolock_theory.training.loop import train
from zerolock_theory.training.population_loop import check_members, train_population
from zerolock_theory.training.state import complete_checkpoints, latest_checkpoint

SEEDS = (0, 1, 2)
STEPS = 20
TIMING = {STEP_TIME_S, TOKENS_PER_S}
PROBES = {
    "n_positions": 16, "epsilon": 0.1,
    "readouts": {"every": 1, "mode": "full", "dtype": "float32"},
    "stability": {"every": 5}, "minimizers": {"every": 5}, "lemma2": {"every": 10, "null": False},
    "gradients": {"every": 10}, "scaling": {"every": 10},
}
METHODS = {
    "forward": {"name": "zerolock", "direction": "forward", "alpha": 0.5},
    "reverse": {"name": "zerolock", "direction": "reverse", "alpha": 0.5, "epsilon": 0.1},
    "backprop": {"name": "backprop"},
}


MORE_PROBES = {"n_positions": 16, "epsilon": 0.1, "proof": {"every": 2, "smoothness_every": 4},
               "gradient_batch": {"every": 4, "multiple": 2}}


def config(method: dict, seed: int, probes: dict | None = None, **run) -> TrainConfig:
    return TrainConfig.from_dict({
        "model": {"chunks": 2, "lora": {"dropout": 0.1}},
        "data": {"seq_len": 32, "batch_size": 4, "eval_batches": 1, "order_seed": seed},
        "optim": {"name": "adamw", "lr": 3e-3, "max_grad_norm": 1.0},
        "method": method,
        "run": {"steps": STEPS, "eval_every": 5, "checkpoint_every": 5, "progress": False, "seed": seed,
                "global_grad_every": 5, **run},
        "probes": PROBES if probes is None else probes,
    })


def _hooks(configs):
    return [build_probes(c.probes, c.probe_settings) for c in configs]


def _close(a, b, where: str) -> None:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            assert math.isnan(a) and math.isnan(b), where
        else:
            assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-9), f"{where}: {a} vs {b}"
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def assert_same_records(a: Path, b: Path) -> int:
    """Records equal, timing aside; the number of values compared."""
    ra, rb = read_records(a / "metrics.jsonl"), read_records(b / "metrics.jsonl")
    assert len(ra) == len(rb) == STEPS
    n = 0
    for x, y in zip(ra, rb, strict=True):
        assert x.keys() == y.keys(), sorted(x.keys() ^ y.keys())
        for key in x.keys() - TIMING:
            _close(x[key], y[key], f"step {x['step']} {key}")
            n += 1
    return n


def assert_same_run(a: Path, b: Path) -> int:
    """Records (timing aside), final adapters and readout stores equal; the number of values compared."""
    n = assert_same_records(a, b)
    wa, wb = (load_file(str(latest_checkpoint(r) / "adapters.safetensors")) for r in (a, b))
    assert wa.keys() == wb.keys()
    for name in wa:
        torch.testing.assert_close(wa[name], wb[name], rtol=1e-5, atol=1e-7)
    sa, sb = pd.read_parquet(a / "readouts"), pd.read_parquet(b / "readouts")
    assert len(sa) == len(sb) > 0
    for col in ("step", "row", "position"):
        assert (sa[col].to_numpy() == sb[col].to_numpy()).all()
    la, lb = (torch.from_numpy(np.stack(s["log_probs"].to_numpy())) for s in (sa, sb))
    torch.testing.assert_close(la, lb, rtol=1e-5, atol=1e-5)
    return n


def _population_equals_single_runs(tmp_path: Path, method: str) -> None:
    configs = [config(METHODS[method], s) for s in SEEDS]
    outs = [tmp_path / "pop" / f"seed-{s}" for s in SEEDS]
    train_population(configs, outs, hooks=_hooks(configs))
    for c, out, s in zip(configs, outs, SEEDS, strict=True):
        single = tmp_path / f"single-{s}"
        train(c, single, hooks=build_probes(c.probes, c.probe_settings))
        assert assert_same_run(out, single) > 500
        assert (out / "adapter" / "adapter_config.json").is_file()
        member, alone = load_run(out), load_run(single)
        assert member.config == alone.config
        frame_a, frame_b = (r.metrics.drop(columns=[k for k in TIMING if k in r.metrics]) for r in (member, alone))
        pd.testing.assert_frame_equal(frame_a, frame_b, check_exact=False, rtol=1e-5)


def test_population_of_three_equals_three_single_runs_forward(tmp_path):
    _population_equals_single_runs(tmp_path, "forward")


@pytest.mark.slow
@pytest.mark.parametrize("method", ["reverse", "backprop"])
def test_population_of_three_equals_three_single_runs(tmp_path, method):
    _population_equals_single_runs(tmp_path, method)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["forward", "backprop"])
def test_population_with_the_proof_and_gradient_batch_probes_equals_single_runs(tmp_path, method):
    configs = [config(METHODS[method], s, MORE_PROBES) for s in SEEDS[:2]]
    outs = [tmp_path / "pop" / f"seed-{s}" for s in SEEDS[:2]]
    train_population(configs, outs, hooks=_hooks(configs))
    for c, out, s in zip(configs, outs, SEEDS, strict=False):
        train(c, tmp_path / f"single-{s}", hooks=build_probes(c.probes, c.probe_settings))
        assert assert_same_records(out, tmp_path / f"single-{s}") > 400
        keys = {k for r in read_records(out / "metrics.jsonl") for k in r}
        assert any(k.startswith("probe/proof/") for k in keys) and any(k.startswith("probe/gradient_batch/") for k in keys)


@pytest.mark.slow  # 23 s; training.population's own resume test runs by default
def test_population_cut_back_resumes_equal_to_uninterrupted(tmp_path):
    configs = [config(METHODS["reverse"], s, keep_checkpoints=4) for s in SEEDS]
    full = [tmp_path / "full" / f"seed-{s}" for s in SEEDS]
    first = train_population(configs, full, hooks=_hooks(configs))
    shutil.copytree(tmp_path / "full", tmp_path / "cut")
    cut = [tmp_path / "cut" / f"seed-{s}" for s in SEEDS]
    for out in cut:  # killed after step 15's checkpoints ...
        shutil.rmtree(out / "checkpoints" / "step_00000020")
        shutil.rmtree(out / "adapter")
    shutil.rmtree(cut[2] / "checkpoints" / "step_00000015")  # ... before member 2 wrote its own
    with open(cut[1] / "metrics.jsonl", "a") as fh:
        fh.write('{"step": 20, "torn')
    assert [p.name for p in complete_checkpoints(cut[0])][-1] == "step_00000015"
    resumed = train_population(configs, cut, resume=True, hooks=_hooks(configs))
    for a, b in zip(full, cut, strict=True):
        assert_same_run(a, b)
    assert [r.initial_eval_ce for r in resumed] == [r.initial_eval_ce for r in first]  # read back from the log


def test_members_may_differ_only_in_their_seeds():
    a = config(METHODS["forward"], 0)
    check_members([a, config(METHODS["forward"], 1)])
    with pytest.raises(ValueError, match="method.direction"):
        check_members([a, config(METHODS["reverse"], 1)])


def test_cli_population_seeds_writes_one_single_run_per_seed(tmp_path):
    """``zerolock train --population-seeds 3 4`` writes out/seed-3, out/seed-4, each equal to
    ``zerolock train --seed s --order-seed s`` (here: ``train`` of that config)."""
    from zerolock_theory.app.cli import main
    from zerolock_theory.app.workflows.runs import member_configs

    args = ["train", "--out", str(tmp_path / "pop"), "--chunks", "2", "--seq-len", "32", "--batch-size", "2",
            "--steps", "3", "--eval-every", "3", "--checkpoint-every", "3", "--optimizer", "adamw", "--lr", "0.003",
            "--set", "data.eval_batches=1", "--set", "model.lora.dropout=0.1", "--no-progress",
            "--population-seeds", "3", "4"]
    assert main(args) == 0
    members = member_configs(TrainConfig.from_dict(json_config(tmp_path / "pop" / "seed-3")), [3, 4])
    for c, seed in zip(members, (3, 4), strict=True):
        assert c.run.seed == c.data.order_seed == seed
        train(c, tmp_path / f"single-{seed}")
        a, b = (read_records(d / "metrics.jsonl") for d in (tmp_path / "pop" / f"seed-{seed}", tmp_path / f"single-{seed}"))
        assert len(a) == len(b) == 3
        for x, y in zip(a, b, strict=True):
            for key in x.keys() - TIMING:
                _close(x[key], y[key], f"seed {seed} step {x['step']} {key}")
    assert main([*args[:-3], "--resume", "--population-seeds", "3", "4"]) == 0  # completed: nothing to do


def json_config(run_dir: Path) -> dict:
    import json

    return json.loads((run_dir / "config.json").read_text())
