"""Step objects: Lemma 3 on a real model, locality, the frozen readout, slicing, backprop."""

from __future__ import annotations

import pytest
import torch

from zerolock_theory.config import LoraSettings, MethodConfig, ModelConfig, OptimConfig
from zerolock_theory.models import ChunkedLM, attach_adapters
from zerolock_theory.theory.divergences import kl
from zerolock_theory.theory.targets import (
    arithmetic_target,
    geometric_target,
    label_smooth,
    one_hot,
)
from zerolock_theory.training.losses import LossSpec, sliced_backward
from zerolock_theory.training.steps import build_step

V = 64


def _setup(tiny_lm, method: MethodConfig, arch: str = "llama", chunks: int = 2, slice_size=None):
    chunked = ChunkedLM(tiny_lm(arch), chunks)
    attach_adapters(chunked, LoraSettings(rank=4))
    with torch.no_grad():  # LoRA B starts at 0; make the adapters non-trivial
        for name, p in chunked.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)
    step = build_step(chunked, method, OptimConfig(name="sgd", lr=0.1), ModelConfig(readout_chunk_size=slice_size), 10)
    return chunked, step


def _batch(seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, V, (2, 9), generator=g)
    labels = torch.randint(3, V, (2, 9), generator=g)
    labels[0, -2:] = -100
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


def _surrogate_gradients(chunked: ChunkedLM, step, batch, method: MethodConfig):
    """∇ of R̄^t = Σ_k KL(m_k ‖ p_k(ω_k)) or R^t = Σ_k KL(p_k(ω_k) ‖ g_k), built independently."""
    labels = batch["labels"]
    keep = labels != -100
    p_y = label_smooth(one_hot(labels[keep], V, torch.float64), method.epsilon)
    with torch.no_grad():
        hiddens = [h.detach() for h in chunked.hiddens(batch["input_ids"], batch["attention_mask"])]
    _, ctx = chunked.embed(batch["input_ids"], batch["attention_mask"])
    grads = []
    for k in range(1, chunked.num_chunks + 1):
        p_prev = torch.softmax(chunked.readout(hiddens[k - 1]).double(), -1)[keep].detach()
        p_k = torch.softmax(chunked.readout(chunked.forward_chunk(k, hiddens[k - 1], ctx)).double(), -1)[keep]
        if method.direction == "forward":
            surrogate = kl(arithmetic_target(p_y, p_prev, method.alpha), p_k).mean()
        else:
            log_g, _ = geometric_target(p_y, p_prev, method.alpha)
            surrogate = kl(p_k.log(), log_g, log_input=True).mean()
        grads.append(torch.autograd.grad(surrogate, step.params[k - 1]))
    return grads


@pytest.mark.parametrize(
    "method",
    [
        MethodConfig(direction="forward", alpha=0.3),
        MethodConfig(direction="forward", alpha=0.7, epsilon=0.1),
        MethodConfig(direction="reverse", alpha=0.5, epsilon=0.1),
    ],
    ids=["forward", "forward-smoothed", "reverse"],
)
def test_lemma3_zerolock_step_is_surrogate_gradient_step(tiny_lm, applied_gradients, method):
    chunked, step = _setup(tiny_lm, method)
    batch = _batch()
    expected = _surrogate_gradients(chunked, step, batch, method)
    before = [[p.detach().clone() for p in ps] for ps in step.params]
    applied, _ = applied_gradients(step, batch)
    for k, (got, want) in enumerate(zip(applied, expected, strict=True), start=1):
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g.double(), w.double(), atol=1e-6, rtol=1e-4, msg=lambda m, k=k: f"chunk {k}: {m}")
    # ω^{t+1} = ω^t − η ∇R̄^t(ω^t): the update is the surrogate's gradient step, block by block
    for ps, b, want in zip(step.params, before, expected, strict=True):
        for p, p0, w in zip(ps, b, want, strict=True):
            torch.testing.assert_close(p.detach().double(), p0.double() - 0.1 * w.double(), atol=1e-6, rtol=1e-5)


def test_no_gradient_crosses_chunks(tiny_lm):
    chunked, step = _setup(tiny_lm, MethodConfig(alpha=0.5), chunks=3)
    batch = _batch()
    labels = batch["labels"]
    hidden, ctx = chunked.embed(batch["input_ids"])
    for k in range(1, 4):
        h_in = hidden.detach()
        hidden = chunked.forward_chunk(k, h_in, ctx)
        sliced_backward(step.readout, LossSpec.local(MethodConfig(alpha=0.5)), hidden, h_in, labels, k, 10.0)
        for j, params in enumerate(step.params, start=1):
            has_grad = any(p.grad is not None and p.grad.abs().sum() > 0 for p in params)
            assert has_grad == (j == k), f"chunk {k}'s loss reached chunk {j}"
        for p in step.params[k - 1]:
            p.grad = None


@pytest.mark.parametrize("method_name", ["zerolock", "backprop"])
def test_readout_is_frozen_and_unchanged(tiny_lm, method_name):
    chunked, step = _setup(tiny_lm, MethodConfig(name=method_name))
    frozen = {n: p.detach().clone() for n, p in chunked.model.named_parameters() if not p.requires_grad}
    assert all(not p.requires_grad for p in chunked.head.parameters())
    assert all(not p.requires_grad for p in chunked.norm.parameters())
    for t in range(3):
        step.train_step(_batch(t), t)
    for name, p in chunked.model.named_parameters():
        if name in frozen:
            assert p.grad is None, name
            assert torch.equal(p.detach(), frozen[name]), name


@pytest.mark.parametrize("method_name", ["zerolock", "backprop"])
def test_sliced_readout_matches_whole(tiny_lm, applied_gradients, method_name):
    method = MethodConfig(name=method_name, alpha=0.4, epsilon=0.05)
    grads = []
    for size in (None, 4):
        chunked, step = _setup(tiny_lm, method, slice_size=size)
        grads.append(applied_gradients(step, _batch()))
    (g_whole, m_whole), (g_sliced, m_sliced) = grads
    for a, b in zip(g_whole, g_sliced, strict=True):
        for x, y in zip(a, b, strict=True):
            torch.testing.assert_close(x, y, atol=1e-6, rtol=1e-5)
    assert m_whole["train/final_ce"] == pytest.approx(m_sliced["train/final_ce"], rel=1e-6)


def test_backprop_gradient_equals_model_cross_entropy(tiny_lm, applied_gradients):
    chunked, step = _setup(tiny_lm, MethodConfig(name="backprop"), chunks=2)
    batch = _batch()
    logits = chunked.model(input_ids=batch["input_ids"]).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), batch["labels"].reshape(-1), ignore_index=-100)
    want = torch.autograd.grad(loss, [p for ps in step.params for p in ps])
    got = [g for block in step.global_gradient(batch) for g in block]
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, atol=1e-6, rtol=1e-5)
    applied, _ = applied_gradients(step, batch)
    for g, w in zip([g for b in applied for g in b], want, strict=True):
        torch.testing.assert_close(g, w, atol=1e-6, rtol=1e-5)


def test_local_gradients_match_training_step(tiny_lm, applied_gradients):
    chunked, step = _setup(tiny_lm, MethodConfig(alpha=0.6), chunks=2)
    batch = _batch()
    local = step.local_gradients(batch)
    applied, _ = applied_gradients(step, batch)
    for a, b in zip(local, applied, strict=True):
        for x, y in zip(a, b, strict=True):
            torch.testing.assert_close(x, y, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("method", [MethodConfig(alpha=0.6), MethodConfig(alpha=0.5, direction="reverse", epsilon=0.1, p0="uniform"),
                                    MethodConfig(name="backprop")])
@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_global_and_local_gradients_from_one_forward_equal_the_separate_ones(tiny_lm, method, arch):
    """The gradients probe's shared forward gives the same blocks, bit for bit."""
    from zerolock_theory.training.gradients import (
        global_and_local_gradients,
        global_gradient,
        local_gradients,
    )

    _, step = _setup(tiny_lm, method, arch, chunks=3)
    batch = _batch()
    with torch.enable_grad():
        glob, local = global_and_local_gradients(step.readout, step.method, step.params, batch)
        want = (global_gradient(step.readout, step.method, step.params, batch),
                local_gradients(step.readout, step.method, step.params, batch))
    for got, ref in zip((glob, local), want, strict=True):
        for a, b in zip(got, ref, strict=True):
            assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
