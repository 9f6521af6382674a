"""The batched step-scaling probe equals today's probe on a real run (embedded model)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from probes.scaling import ScalingProbe
from probes.scaling_batched import BatchedScalingProbe, shared_population
from zerolock_theory.config import LoraSettings, TrainConfig
from zerolock_theory.models import ChunkedLM, attach_adapters
from zerolock_theory.training.loop import train

N, K, STEPS = 32, 2, 4
FACTORS = (1.0, 0.5, 0.25, 0.125)


class _Both:
    """Runs today's probe and the batched one at the same steps and keeps both outputs."""

    def __init__(self) -> None:
        self.reference = ScalingProbe(every=2, factors=FACTORS, n_positions=N)
        self.batched = BatchedScalingProbe(every=2, factors=FACTORS, n_positions=N)
        self.pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def on_start(self, ctx):
        self.reference.on_start(ctx)
        self.batched.on_start(ctx)

    def before_step(self, ctx, step):
        self.reference.before_step(ctx, step)
        self.batched.before_step(ctx, step)

    def after_step(self, ctx, step, record):
        before = [p.detach().clone() for p in ctx.chunked.model.parameters() if p.requires_grad]
        got = self.batched.after_step(ctx, step, record)
        moved = [p.detach() for p in ctx.chunked.model.parameters() if p.requires_grad]
        assert all(torch.equal(a, b) for a, b in zip(before, moved, strict=True))  # ω^{t+1} untouched
        want = self.reference.after_step(ctx, step, record)
        if want or got:
            self.pairs.append((want, got))
        return {}

    def on_checkpoint(self, ctx, step):
        pass

    def on_end(self, ctx):
        self.reference.on_end(ctx)
        self.batched.on_end(ctx)


@pytest.mark.parametrize("method", [{"direction": "forward"}, {"direction": "reverse", "epsilon": 0.1}],
                         ids=["forward", "reverse"])
def test_batched_scaling_equals_the_scaling_probe(tmp_path, method):
    config = TrainConfig.from_dict({
        "model": {"path": "embedded", "chunks": K, "device": "cpu", "lora": {"rank": 4}},
        "data": {"seq_len": 32, "batch_size": 2, "eval_batches": 1},
        "method": {"alpha": 0.5, **method},
        "optim": {"lr": 0.01},
        "run": {"steps": STEPS, "eval_every": STEPS, "checkpoint_every": STEPS, "progress": False},
    })
    both = _Both()
    train(config, tmp_path / "run", hooks=[both])
    assert len(both.pairs) == STEPS // 2
    for want, got in both.pairs:
        assert list(got) == list(want)
        for key, value in want.items():
            if value is None or isinstance(value, bool):
                assert got[key] == value, key
            else:
                assert math.isclose(got[key], value, rel_tol=1e-9, abs_tol=1e-15), (key, got[key], value)


def test_shared_population_shares_the_frozen_weights(tiny_lm):
    chunked = ChunkedLM(tiny_lm("llama"), 2)
    attach_adapters(chunked, LoraSettings(rank=4))
    population = shared_population(chunked, 3)
    mine = {id(p) for p in population.chunked.model.parameters()}
    frozen = [p for p in chunked.model.parameters() if not p.requires_grad]
    assert frozen and all(id(p) in mine for p in frozen)
    assert not any(p.requires_grad for p in population.chunked.model.parameters())
    ids = torch.randint(3, 64, (2, 5))
    with torch.no_grad():
        torch.testing.assert_close(population.chunked(ids.repeat(3, 1))[:2], chunked(ids), rtol=0, atol=0)
