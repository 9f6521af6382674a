"""Per-chunk α, frozen chunks and the un-detached twin: known answers against backprop and ZeroLock."""

from __future__ import annotations

import pytest
import torch

from zerolock_theory.config import LoraSettings, MethodConfig, ModelConfig, OptimConfig
from zerolock_theory.models import ChunkedLM, attach_adapters
from zerolock_theory.training.steps import UndetachedStep, ZeroLockStep, build_step

V = 64


def _step(tiny_lm, method: MethodConfig, chunks: int, layers: int = 4):
    torch.manual_seed(0)
    chunked = ChunkedLM(tiny_lm("llama", layers=layers), chunks)
    attach_adapters(chunked, LoraSettings(rank=4))
    with torch.no_grad():  # LoRA B starts at 0; make the adapters non-trivial (same values every call)
        g = torch.Generator().manual_seed(3)
        for name, p in chunked.model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    return build_step(chunked, method, OptimConfig(name="sgd", lr=0.1), ModelConfig(chunks=chunks), 10)


def _batch(seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, V, (4, 9), generator=g)
    labels = torch.randint(3, V, (4, 9), generator=g)
    labels[0, -2:] = -100
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


def _params_after(step, steps: int = 2):
    for t in range(steps):
        step.train_step(_batch(t + 1), t)
    return [[p.detach().clone() for p in ps] for ps in step.params]


def _assert_equal(a, b):
    for k, (xs, ys) in enumerate(zip(a, b, strict=True), start=1):
        for x, y in zip(xs, ys, strict=True):
            assert torch.equal(x, y), f"chunk {k} differs (max {float((x - y).abs().max()):.3g})"


def test_undetached_at_one_chunk_alpha_one_is_backprop_bit_for_bit(tiny_lm):
    twin = _step(tiny_lm, MethodConfig(alpha=1.0, detach=False), chunks=1)
    assert isinstance(twin, UndetachedStep)
    backprop = _step(tiny_lm, MethodConfig(name="backprop"), chunks=1)
    _assert_equal(_params_after(twin), _params_after(backprop))


@pytest.mark.parametrize("alpha", [0.5, [0.3, 0.5, 1.0]], ids=["scalar-alpha-0.5", "list-alpha-last-1"])
def test_undetached_with_only_the_output_loss_weighted_is_backprop(tiny_lm, alpha):
    """w = (0, 0, 1): only ℓ_K counts; with α_K = 1 it is CE(p_y, p_K) through every chunk."""
    alpha_k = alpha if isinstance(alpha, list) else [0.5, 0.5, 1.0]
    twin = _step(tiny_lm, MethodConfig(alpha=alpha_k, detach=False, loss_weights=[0.0, 0.0, 1.0]), chunks=3,
                 layers=3)
    backprop = _step(tiny_lm, MethodConfig(name="backprop"), chunks=3, layers=3)
    _assert_equal(_params_after(twin), _params_after(backprop))


def test_undetached_top_chunk_steps_as_zerolock_and_early_chunks_learn_from_later_losses(tiny_lm):
    """w = (0, 1): ω_2 gets ∂ℓ_2/∂ω_2, ZeroLock's own (same inputs' values, detached target);
    ω_1 moves although its own loss has weight 0 (ℓ_2 reaches it), where ZeroLock's ω_1 follows ℓ_1."""
    method = MethodConfig(alpha=0.5, detach=False, loss_weights=[0.0, 1.0])
    twin, detached = _step(tiny_lm, method, chunks=2), _step(tiny_lm, MethodConfig(alpha=0.5), chunks=2)
    start = [[p.detach().clone() for p in ps] for ps in twin.params]
    after, zl = _params_after(twin, steps=1), _params_after(detached, steps=1)
    assert any(not torch.equal(x, y) for x, y in zip(start[0], after[0], strict=True))
    for x, y in zip(after[1], zl[1], strict=True):
        torch.testing.assert_close(x, y, atol=1e-7, rtol=1e-6)
    assert not all(torch.allclose(x, y) for x, y in zip(after[0], zl[0], strict=True))


def test_scalar_alpha_and_equal_list_give_the_same_zerolock_step(tiny_lm):
    scalar = _step(tiny_lm, MethodConfig(alpha=0.5), chunks=2)
    listed = _step(tiny_lm, MethodConfig(alpha=[0.5, 0.5]), chunks=2)
    _assert_equal(_params_after(scalar), _params_after(listed))


def test_alpha_per_chunk_is_each_chunks_own(tiny_lm):
    """Chunk 1's update depends only on α_1; chunk 2's changes with α_2 (one step from the same ω)."""
    a = _params_after(_step(tiny_lm, MethodConfig(alpha=[0.5, 1.0]), chunks=2), steps=1)
    b = _params_after(_step(tiny_lm, MethodConfig(alpha=[0.5, 0.5]), chunks=2), steps=1)
    c = _params_after(_step(tiny_lm, MethodConfig(alpha=[0.2, 1.0]), chunks=2), steps=1)
    _assert_equal([a[0]], [b[0]])
    assert not all(torch.equal(x, y) for x, y in zip(a[1], b[1], strict=True))
    assert not all(torch.equal(x, y) for x, y in zip(a[0], c[0], strict=True))


def test_frozen_early_chunks_train_only_the_top_chunk_and_equal_restricted_backprop(tiny_lm):
    """ZeroLock with chunks 1..K-1 frozen and α_K = 1 is backprop restricted to chunk K."""
    zl = _step(tiny_lm, MethodConfig(alpha=[0.5, 0.5, 1.0], frozen_chunks=[1, 2]), chunks=3, layers=3)
    assert isinstance(zl, ZeroLockStep)
    bp = _step(tiny_lm, MethodConfig(name="backprop", frozen_chunks=[1, 2]), chunks=3, layers=3)
    start = [[p.detach().clone() for p in ps] for ps in zl.params]
    got, want = _params_after(zl), _params_after(bp)
    _assert_equal(got[:2], start[:2])  # the frozen chunks never move
    assert not all(torch.equal(x, y) for x, y in zip(got[2], start[2], strict=True))
    _assert_equal(got, want)


def test_frozen_chunks_report_their_losses(tiny_lm):
    metrics = _step(tiny_lm, MethodConfig(alpha=0.5, frozen_chunks=[1]), chunks=2).train_step(_batch(), 0)
    assert metrics["chunk/1/grad_norm_sq"] == 0.0 and metrics["chunk/2/grad_norm_sq"] > 0
    assert metrics["chunk/1/loss"] > 0 and metrics["chunk/1/ce"] > 0
