"""The training form ``local_loss_from_logits`` against ``local_loss`` on softmax(logits)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from strategies import alphas, epsilons

from zerolock_theory.theory.divergences import cross_entropy
from zerolock_theory.theory.losses import (
    DegenerateObjectiveError,
    local_loss,
    local_loss_from_logits,
)
from zerolock_theory.theory.targets import label_smooth, one_hot


def _inputs(seed: int, shape: tuple[int, ...], vocab: int, dtype: torch.dtype):
    gen = torch.Generator().manual_seed(seed)
    logits = (3 * torch.randn(*shape, vocab, generator=gen)).to(dtype)
    prev_logits = 3 * torch.randn(*shape, vocab, generator=gen)
    labels = torch.randint(vocab, shape, generator=gen)
    labels[..., 0] = -100  # one unlabelled position per row
    return logits, torch.log_softmax(prev_logits, -1), labels


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@given(
    seed=st.integers(0, 10_000),
    shape=st.sampled_from([(3,), (2, 4)]),
    vocab=st.integers(2, 7),
    alpha=alphas,
    direction=st.sampled_from(["forward", "reverse"]),
    epsilon=st.one_of(st.just(0.0), epsilons),
)
def test_logits_form_matches_probability_form(
    dtype, seed, shape, vocab, alpha, direction, epsilon
) -> None:
    if direction == "reverse" and epsilon == 0.0:
        epsilon = 0.1  # the reverse direction needs ε > 0 (tested below)
    logits, log_prev, labels = _inputs(seed, shape, vocab, dtype)
    terms = local_loss_from_logits(logits, labels, log_prev, alpha, direction, epsilon)
    mask = labels != -100
    assert torch.equal(terms.mask, mask)
    p = torch.softmax(logits.double(), -1)
    p_y = label_smooth(one_hot(labels.clamp_min(0), vocab, torch.float64), epsilon)
    want = local_loss(p, p_y, log_prev.double().exp(), alpha, direction)
    tol = 1e-4 * (1 + want.abs())
    assert bool(((terms.loss.double() - want).abs() <= tol)[mask].all())
    ce = cross_entropy(one_hot(labels.clamp_min(0), vocab, torch.float64), p)
    assert bool(((terms.ce.double() - ce).abs() <= 1e-4 * (1 + ce))[mask].all())
    for field in (terms.loss, terms.task, terms.consistency, terms.ce):
        assert bool((field[~mask] == 0).all()) and not torch.isnan(field).any()


def test_reverse_without_smoothing_raises_and_alpha_one_needs_no_prev() -> None:
    logits, log_prev, labels = _inputs(0, (4,), 5, torch.float32)
    with pytest.raises(DegenerateObjectiveError):
        local_loss_from_logits(logits, labels, log_prev, 0.5, "reverse", 0.0)
    terms = local_loss_from_logits(logits, labels, None, 1.0, "forward", 0.0)
    assert torch.allclose(terms.loss, terms.ce)
    with pytest.raises(ValueError):
        local_loss_from_logits(logits, labels, None, 0.5, "forward", 0.0)


def test_gradients_in_logits_match() -> None:
    logits, log_prev, labels = _inputs(1, (6,), 5, torch.float64)
    for direction in ("forward", "reverse"):
        a = logits.clone().requires_grad_(True)
        local_loss_from_logits(a, labels, log_prev, 0.4, direction, 0.1).loss.sum().backward()
        b = logits.clone().requires_grad_(True)
        p_y = label_smooth(one_hot(labels.clamp_min(0), 5, torch.float64), 0.1)
        values = local_loss(torch.softmax(b, -1), p_y, log_prev.exp(), 0.4, direction)
        torch.where(labels != -100, values, torch.zeros_like(values)).sum().backward()
        assert torch.allclose(a.grad.double(), b.grad, atol=1e-5), direction
        assert math.isfinite(float(a.grad.abs().max()))


def test_zeros_in_p_prev_forward_is_finite() -> None:
    """log p_{k-1} = −inf entries (zeros in p_{k-1}) follow 0·log 0 = 0, not NaN."""
    log_prev = torch.log(torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]))
    logits = torch.tensor([[0.3, -1.0, 2.0], [1.0, 0.0, -1.0]], requires_grad=True)
    labels = torch.tensor([0, 2])
    terms = local_loss_from_logits(logits, labels, log_prev, 0.5, "forward", 0.1)
    p_y = label_smooth(one_hot(labels, 3, torch.float64), 0.1)
    want = local_loss(torch.softmax(logits.double(), -1), p_y, log_prev.double().exp(), 0.5)
    assert torch.allclose(terms.loss.double(), want, atol=1e-5)
    terms.loss.sum().backward()
    assert torch.isfinite(logits.grad).all()
