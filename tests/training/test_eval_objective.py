"""``eval/objective``: the run's own objective on the fixed held-out batches, equal to the
training code's own loss terms (``chunk_loss``) summed the way each method trains."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from zerolock_theory.config import TrainConfig
from zerolock_theory.training.gradients import count_labelled
from zerolock_theory.training.loop import evaluate, setup
from zerolock_theory.training.losses import LossSpec, chunk_loss


@pytest.mark.parametrize("method", [
    {"name": "zerolock", "direction": "forward", "alpha": 0.5},
    {"name": "zerolock", "direction": "reverse", "alpha": 0.5, "epsilon": 0.1},
    {"name": "zerolock", "direction": "forward", "alpha": 1.0},
    {"name": "zerolock", "direction": "forward", "alpha": 0.5, "p0": "uniform"},
    {"name": "backprop", "epsilon": 0.1},
])
def test_eval_objective_is_the_trained_loss_on_the_held_out_batches(tmp_path: Path, method: dict) -> None:
    config = TrainConfig.from_dict({"model": {"chunks": 3}, "data": {"seq_len": 16, "batch_size": 2, "eval_batches": 2},
                                    "method": method, "run": {"steps": 1, "progress": False}})
    run = setup(config, tmp_path / "run")
    got = evaluate(run)
    local = method["name"] == "zerolock"
    spec = LossSpec.local(config.method) if local else LossSpec.global_(config.method)
    K = run.chunked.num_chunks
    total = 0.0
    with torch.no_grad():
        batches = list(run.data.eval_batches())
        count = sum(count_labelled(b["labels"]) for b in batches)
        for batch in batches:
            hiddens = run.chunked.hiddens(batch["input_ids"], batch.get("attention_mask"))
            for k in range(1, K + 1) if local else (K,):
                total += chunk_loss(run.step_fn.readout, spec, hiddens[k], hiddens[k - 1], batch["labels"], k,
                                    count).sums["loss"]
    assert got["eval/objective"] == pytest.approx(total, rel=1e-5)
