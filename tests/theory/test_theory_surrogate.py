"""Surrogates R^t, R̄^t: values and gradients equal those of the local losses (Lemma 3)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from strategies import alphas, epsilons

from zerolock_theory.theory.divergences import entropy
from zerolock_theory.theory.losses import local_loss
from zerolock_theory.theory.surrogate import (
    chunk_surrogate_terms,
    frozen_targets,
    implemented_surrogate,
    paper_surrogate,
    surrogate,
)
from zerolock_theory.theory.targets import geometric_target, label_smooth, one_hot

DIRECTION = {"paper": "reverse", "implemented": "forward"}


def _setup(seed: int, k: int = 3, n: int = 4, v: int = 5, epsilon: float = 0.1):
    gen = torch.Generator().manual_seed(seed)
    upstream = torch.softmax(2 * torch.randn(k, n, v, generator=gen, dtype=torch.float64), -1)
    logits = torch.randn(k, n, v, generator=gen, dtype=torch.float64, requires_grad=True)
    labels = torch.randint(v, (n,), generator=gen)
    p_y = label_smooth(one_hot(labels, v, torch.float64), epsilon)
    return upstream, logits, p_y


@given(
    seed=st.integers(0, 1000),
    alpha=alphas,
    epsilon=epsilons,
    objective=st.sampled_from(["paper", "implemented"]),
)
def test_gradient_equals_local_loss_gradient(seed, alpha, epsilon, objective) -> None:
    upstream, logits, p_y = _setup(seed, epsilon=epsilon)
    targets = frozen_targets(p_y, upstream, alpha, objective)
    r = surrogate(torch.softmax(logits, -1), targets, objective)
    (grad_r,) = torch.autograd.grad(r, logits)
    losses = local_loss(torch.softmax(logits, -1), p_y, upstream, alpha, DIRECTION[objective])
    (grad_l,) = torch.autograd.grad(losses.mean(-1).sum(), logits)
    assert torch.allclose(grad_r, grad_l, atol=1e-10)


@given(seed=st.integers(0, 1000), alpha=alphas, epsilon=epsilons)
def test_values_differ_from_local_losses_by_the_constants(seed, alpha, epsilon) -> None:
    upstream, logits, p_y = _setup(seed, epsilon=epsilon)
    p = torch.softmax(logits, -1).detach()
    _, log_z = geometric_target(p_y, upstream, alpha)
    paper = paper_surrogate(p, frozen_targets(p_y, upstream, alpha, "paper"))
    want = (local_loss(p, p_y, upstream, alpha, "reverse") + log_z).mean(-1).sum()
    assert torch.allclose(paper, want, atol=1e-10)
    m = frozen_targets(p_y, upstream, alpha, "implemented")
    implemented = implemented_surrogate(p, m)
    constant = entropy(torch.stack(m)) - (1 - alpha) * entropy(upstream)
    want = (local_loss(p, p_y, upstream, alpha, "forward") - constant).mean(-1).sum()
    assert torch.allclose(implemented, want, atol=1e-10)


@pytest.mark.parametrize("objective", ["paper", "implemented"])
@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
def test_list_tensor_and_log_forms_agree(objective: str, alpha: float) -> None:
    upstream, logits, p_y = _setup(7)
    p = torch.softmax(logits, -1)
    targets = frozen_targets(p_y, upstream, alpha, objective)
    log_targets = frozen_targets(p_y.log(), upstream.log(), alpha, objective, log_input=True)
    as_tensor = surrogate(p, torch.stack(targets), objective)
    as_list = surrogate(list(p), targets, objective)
    as_log = surrogate(torch.log_softmax(logits, -1), log_targets, objective, log_input=True)
    assert torch.allclose(as_tensor, as_list) and torch.allclose(as_tensor, as_log, atol=1e-10)
    assert chunk_surrogate_terms(p, targets, objective).shape == (3,)


def test_targets_are_detached_and_mask_averages_labelled_positions() -> None:
    upstream, logits, p_y = _setup(3)
    upstream = upstream.clone().requires_grad_(True)
    targets = frozen_targets(p_y, upstream, 0.5, "implemented")
    assert all(not t.requires_grad for t in targets)
    mask = torch.tensor([True, False, True, False])
    p = torch.softmax(logits, -1)
    r = surrogate(p, targets, "implemented", mask=mask)
    want = surrogate(p[:, mask], [t[mask] for t in targets], "implemented")
    assert torch.allclose(r, want)
    r.backward()
    assert upstream.grad is None and logits.grad is not None


def test_one_hot_paper_surrogate_is_inf_not_nan() -> None:
    upstream, logits, _ = _setup(4)
    p_y = one_hot(torch.tensor([0, 1, 2, 3]), 5, torch.float64)
    r = paper_surrogate(torch.softmax(logits, -1), frozen_targets(p_y, upstream, 0.5, "paper"))
    assert torch.isinf(r) and r > 0


def test_invalid_inputs() -> None:
    upstream, logits, p_y = _setup(5)
    p = torch.softmax(logits, -1)
    targets = frozen_targets(p_y, upstream, 0.5, "paper")
    with pytest.raises(ValueError):
        surrogate(p, targets, "reverse")
    with pytest.raises(ValueError):
        surrogate(p, targets[:2], "paper")
    with pytest.raises(ValueError):
        surrogate(p[:, :2], targets, "paper")
    with pytest.raises(ValueError):
        surrogate(p, targets, "paper", mask=torch.zeros(4, dtype=torch.bool))
    with pytest.raises(ValueError):
        frozen_targets(p_y, upstream, 1.5, "paper")
    with pytest.raises(ValueError):
        surrogate([], [], "paper")
