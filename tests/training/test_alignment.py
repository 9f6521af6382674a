"""The alignment probe: its first-order prediction against a measured tiny step; known cosines; the
steps it takes along a run are the training loop's."""

from __future__ import annotations

import math

import pytest
import torch

from zerolock_theory.config import LoraSettings, MethodConfig, ModelConfig, OptimConfig, TrainConfig
from zerolock_theory.models import ChunkedLM, attach_adapters, resolve_device
from zerolock_theory.training.alignment import (
    LOWERS,
    NOT_DISTINGUISHED,
    RAISES,
    first_order_outcome,
    measure_alignment,
    measured_change,
    predicted_change,
    train_steps,
)
from zerolock_theory.training.loop import build_components, execute, setup
from zerolock_theory.training.steps import build_step

V = 64


def _step(tiny_lm, method: MethodConfig, chunks: int):
    torch.manual_seed(0)
    chunked = ChunkedLM(tiny_lm("llama", layers=4).double(), chunks)
    attach_adapters(chunked, LoraSettings(rank=4))
    chunked.double()
    with torch.no_grad():
        g = torch.Generator().manual_seed(3)
        for name, p in chunked.model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.05)
    return build_step(chunked, method, OptimConfig(name="sgd", lr=0.1), ModelConfig(chunks=chunks), 10)


def _batch():
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(3, V, (4, 9), generator=g)
    labels = torch.randint(3, V, (4, 9), generator=g)
    labels[0, -3:] = -100
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


@pytest.mark.parametrize("method", [
    MethodConfig(alpha=0.5),
    MethodConfig(direction="reverse", alpha=0.5, epsilon=0.1),
    MethodConfig(alpha=[0.5, 0.5, 1.0], detach=False),
    MethodConfig(alpha=[0.5, 0.5, 1.0], frozen_chunks=[1, 2]),
    MethodConfig(name="backprop"),
], ids=["forward", "reverse", "undetached", "frozen", "backprop"])
def test_first_order_prediction_matches_a_tiny_measured_step(tiny_lm, method):
    step, batch, lr = _step(tiny_lm, method, chunks=3), _batch(), 1e-4
    chunks = measure_alignment(step.readout, method, step.params, batch)
    predicted = predicted_change(chunks, lr)
    measured = measured_change(step.readout, method, step.params, batch, lr)
    assert predicted != 0.0
    assert abs(measured - predicted) <= 0.05 * abs(predicted), (measured, predicted)


def test_frozen_chunks_contribute_nothing(tiny_lm):
    method = MethodConfig(alpha=0.5, frozen_chunks=[1, 2])
    step = _step(tiny_lm, method, chunks=3)
    chunks = measure_alignment(step.readout, method, step.params, _batch())
    assert [c.inner for c in chunks[:2]] == [0.0, 0.0] and math.isnan(chunks[0].cosine)
    assert chunks[2].norm_step > 0


@pytest.mark.parametrize(("method", "chunks"), [
    (MethodConfig(alpha=1.0), 1),
    (MethodConfig(name="backprop"), 3),
    (MethodConfig(alpha=1.0, detach=False), 1),
])
def test_cosine_is_one_when_the_step_follows_the_output_ce(tiny_lm, method, chunks):
    step = _step(tiny_lm, method, chunks=chunks)
    for c in measure_alignment(step.readout, method, step.params, _batch()):
        assert c.cosine == pytest.approx(1.0, abs=1e-12)
        assert c.norm_step == pytest.approx(c.norm_out, rel=1e-12)


def test_zerolock_at_alpha_half_is_not_the_output_gradient(tiny_lm):
    method = MethodConfig(alpha=0.5)
    step = _step(tiny_lm, method, chunks=3)
    cosines = [c.cosine for c in measure_alignment(step.readout, method, step.params, _batch())]
    assert all(c < 0.999 for c in cosines)


def test_measured_change_restores_the_parameters(tiny_lm):
    method = MethodConfig(alpha=0.5)
    step = _step(tiny_lm, method, chunks=2)
    before = [[p.detach().clone() for p in ps] for ps in step.params]
    measured_change(step.readout, method, step.params, _batch(), 0.1)
    for xs, ys in zip(before, step.params, strict=True):
        assert all(torch.equal(x, y) for x, y in zip(xs, ys, strict=True))


@pytest.mark.parametrize(("low", "high", "words"), [
    (0.1, 2.0, LOWERS), (-2.0, -0.1, RAISES), (-0.1, 0.1, NOT_DISTINGUISHED), (0.0, 1.0, NOT_DISTINGUISHED),
])
def test_outcome_words_follow_the_interval(low, high, words):
    assert first_order_outcome(low, high) == words


def _run_config(method: dict) -> TrainConfig:
    return TrainConfig.from_dict({
        "model": {"chunks": 2},
        "data": {"seq_len": 16, "batch_size": 2, "eval_batches": 1, "order_seed": 3},
        "method": method,
        "optim": {"name": "sgd", "lr": 0.2, "schedule": "inv_sqrt"},
        "run": {"steps": 4, "eval_every": 2, "checkpoint_every": 2, "progress": False, "seed": 1},
    })


def _trainable(chunked) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in chunked.model.named_parameters() if p.requires_grad}


@pytest.mark.parametrize("method", [{"alpha": 0.5}, {"alpha": [0.5, 1.0], "detach": False}],
                         ids=["zerolock", "undetached"])
def test_train_steps_reach_the_loops_parameters(tmp_path, method):
    """``train_steps`` in two legs (1 then 3 steps) ends where the loop's 4-step run ends, bit for
    bit, and moves the parameters (so the alignment after N steps is read at the run's ω^N)."""
    config = _run_config(method)
    run = setup(config, tmp_path / "run")
    execute(run)
    by_loop = _trainable(run.chunked)

    chunked, _, _, stream = build_components(config, resolve_device(config.model.device))
    start = _trainable(chunked)
    step = build_step(chunked, config.method, config.optim, config.model, config.run.steps)
    assert train_steps(step, stream, 0, 1) == 1
    assert train_steps(step, stream, 1, 3) == 4
    mine = _trainable(chunked)
    assert mine.keys() == by_loop.keys()
    assert all(torch.equal(mine[n], by_loop[n]) for n in mine)
    assert any(not torch.equal(mine[n], start[n]) for n in mine)
