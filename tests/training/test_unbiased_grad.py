"""Ĝ_t = ⟨g^(1), g^(2)⟩ from two halves of the minibatch (training.steps, docs/MATH.md "Theorem 1")."""

from __future__ import annotations

import pytest
import torch

from zerolock_theory.config import LoraSettings, MethodConfig, ModelConfig, OptimConfig
from zerolock_theory.models import ChunkedLM, attach_adapters
from zerolock_theory.records import CHUNK
from zerolock_theory.training.steps import build_step, split_halves

V = 64


def _setup(tiny_lm, method: MethodConfig, chunks: int = 2):
    chunked = ChunkedLM(tiny_lm("llama"), chunks)
    attach_adapters(chunked, LoraSettings(rank=4))
    with torch.no_grad():
        for name, p in chunked.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)
    return build_step(chunked, method, OptimConfig(name="sgd", lr=0.1), ModelConfig(), 10)


def _batch(rows: int = 4, seed: int = 3):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, V, (rows, 7), generator=g)
    labels = torch.randint(3, V, (rows, 7), generator=g)
    labels[0, -3:] = -100  # unequal labelled counts between the halves
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


def _independent_inner(step, batch, method_name: str) -> list[float]:
    """Per chunk ⟨g1, g2⟩ with each half's mean gradient from autograd, built separately."""
    grads = []
    for half in split_halves(batch):
        blocks = step.global_gradient(half) if method_name == "backprop" else step.local_gradients(half)
        grads.append([torch.cat([g.reshape(-1).double() for g in b]) for b in blocks])
    return [float(torch.dot(a, b)) for a, b in zip(*grads, strict=True)]


@pytest.mark.parametrize("method_name", ["zerolock", "backprop"])
def test_unbiased_estimate_equals_autograd_on_the_halves(tiny_lm, applied_gradients, method_name):
    method = MethodConfig(name=method_name, direction="forward", alpha=0.5)
    step = _setup(tiny_lm, method)
    batch = _batch()
    want = _independent_inner(step, batch, method_name)
    full = step.local_gradients(batch) if method_name == "zerolock" else step.global_gradient(batch)
    applied, metrics = applied_gradients(step, batch)
    for k, w in enumerate(want, start=1):
        assert metrics[CHUNK.key(k, "grad_sq_unbiased")] == pytest.approx(w, rel=1e-4, abs=1e-10)
    assert metrics["train/grad_sq_unbiased"] == pytest.approx(sum(want), rel=1e-4, abs=1e-10)
    # the update is still the full-batch gradient
    for a, b in zip(full, applied, strict=True):
        for x, y in zip(a, b, strict=True):
            torch.testing.assert_close(x, y, atol=1e-6, rtol=1e-5)
    assert metrics["train/grad_norm_sq"] == pytest.approx(
        sum(float(g.double().pow(2).sum()) for b in full for g in b), rel=1e-5
    )


def test_single_sequence_has_no_estimate(tiny_lm):
    step = _setup(tiny_lm, MethodConfig(alpha=0.5))
    metrics = step.train_step(_batch(rows=1), 0)
    assert metrics["train/grad_sq_unbiased"] is None and metrics["chunk/1/grad_sq_unbiased"] is None
    assert metrics["train/grad_norm_sq"] > 0
