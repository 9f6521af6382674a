"""The parts of a step: chunk_loss vs sliced_backward, ChunkOptimizers, labelled tokens."""

from __future__ import annotations

import pytest
import torch

from zerolock_theory.config import LoraSettings, MethodConfig, ModelConfig, OptimConfig
from zerolock_theory.models import ChunkedLM, attach_adapters
from zerolock_theory.training.gradients import count_labelled, grad_sq, labelled_tokens
from zerolock_theory.training.losses import (
    LossSpec,
    NonFiniteLossError,
    chunk_loss,
    sliced_backward,
)
from zerolock_theory.training.steps import step_parts

V = 64


def _parts(tiny_lm, slice_size=None):
    chunked = ChunkedLM(tiny_lm("llama"), 2)
    attach_adapters(chunked, LoraSettings(rank=4))
    return chunked, *step_parts(chunked, OptimConfig(name="sgd", lr=0.1), ModelConfig(readout_chunk_size=slice_size), 10)


def _batch():
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(3, V, (2, 9), generator=g)
    labels = torch.randint(3, V, (2, 9), generator=g)
    labels[1, :4] = -100
    return ids, labels


def test_labelled_tokens():
    _, labels = _batch()
    assert count_labelled(labels) == 14 and labelled_tokens({"labels": labels}) == 14
    assert count_labelled(torch.full((2, 3), -100)) == 0 and labelled_tokens({"labels": torch.full((2, 3), -100)}) == 1


@pytest.mark.parametrize("slice_size", [None, 4])
def test_sliced_backward_equals_autograd_of_chunk_loss(tiny_lm, slice_size):
    chunked, readout, params, _ = _parts(tiny_lm, slice_size)
    ids, labels = _batch()
    spec = LossSpec.local(MethodConfig(alpha=0.4, epsilon=0.05))
    hidden, ctx = chunked.embed(ids)
    h_in = hidden.detach()
    whole = chunk_loss(readout, spec, chunked.forward_chunk(1, h_in, ctx), h_in, labels, 1, 14)
    want = torch.autograd.grad(whole.loss, params[0])
    sums, prev = sliced_backward(readout, spec, chunked.forward_chunk(1, h_in, ctx), h_in, labels, 1, 14)
    for p, w in zip(params[0], want, strict=True):
        torch.testing.assert_close(p.grad, w, atol=1e-6, rtol=1e-5)
    assert sums == pytest.approx(whole.sums, rel=1e-5, abs=1e-7)  # float32 sums over slices
    assert (prev is None) == (slice_size is not None)
    if prev is not None:  # the next chunk's target: this readout's logits and their norm
        torch.testing.assert_close(prev.logits, whole.prev.logits)
        torch.testing.assert_close(prev.norm, whole.prev.norm)


def test_chunk_optimizers_refuse_a_non_finite_gradient_before_any_update(tiny_lm):
    _, _, params, optimizers = _parts(tiny_lm)
    for ps in params:
        for p in ps:
            p.grad = torch.ones_like(p)
    before = [[p.detach().clone() for p in ps] for ps in params]
    with pytest.raises(NonFiniteLossError, match="step 3: chunk 2 gradient is not finite"):
        optimizers.step(3, [grad_sq(params[0]), float("nan")])
    assert all(torch.equal(p, b) for ps, bs in zip(params, before, strict=True) for p, b in zip(ps, bs, strict=True))
    lr = optimizers.step(3, [grad_sq(ps) for ps in params])
    assert lr == pytest.approx(0.1) and all(p.grad is None for ps in params for p in ps)


def test_only_keeps_chunk_k_and_names_it(tiny_lm):
    _, _, params, optimizers = _parts(tiny_lm)
    stage = optimizers.only(2)
    assert len(stage) == 1 and stage[0] is optimizers[1] and stage.params == [params[1]]
    with pytest.raises(NonFiniteLossError, match="chunk 2 gradient"):
        stage.step(0, [float("inf")])
