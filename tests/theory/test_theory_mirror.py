"""Lemma 1 in both geometries, and its failure for the forward (CE) loss."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from strategies import distribution, interior_alphas, loss_case, one_hot_case, vocab_sizes

from zerolock_theory.theory.minimize import minimize_on_simplex
from zerolock_theory.theory.mirror import (
    entropy_mirror_step,
    euclidean_mirror_step,
    grad_forward_ce,
    grad_half_sq,
    grad_reverse_kl,
    lemma1_euclidean,
    lemma1_forward_entropy,
    lemma1_reverse,
    mirror_objective,
    project_to_simplex,
)
from zerolock_theory.theory.targets import arithmetic_target, geometric_target

TOL = 1e-5


@given(loss_case(zeros=False))
def test_entropy_step_on_reverse_kl_is_geometric_target(case) -> None:
    p_y, p_prev, alpha = case
    assert torch.allclose(
        lemma1_reverse(p_y, p_prev, alpha),
        geometric_target(p_y, p_prev, alpha)[0].exp(),
        atol=1e-12,
    )


@given(one_hot_case())
def test_entropy_step_with_one_hot_target_is_e_y(case) -> None:
    p_y, p_prev, alpha, _ = case
    step = lemma1_reverse(p_y, p_prev, alpha)
    assert torch.equal(step, p_y)


@given(loss_case(zeros=True))
def test_euclidean_step_on_half_squares_is_arithmetic_target(case) -> None:
    p_y, p_prev, alpha = case
    step = lemma1_euclidean(p_y, p_prev, alpha)
    assert torch.allclose(step, arithmetic_target(p_y, p_prev, alpha), atol=1e-14)
    assert float(step.sum()) == pytest.approx(1.0, abs=1e-14) and bool((step >= 0).all())


@given(
    vocab_sizes.flatmap(
        lambda v: st.tuples(distribution(v), st.lists(st.floats(-3, 3), min_size=v, max_size=v))
    ),
    interior_alphas,
    st.sampled_from(["entropy", "euclidean"]),
)
def test_closed_form_steps_minimize_the_mirror_objective(pair, alpha: float, geometry: str) -> None:
    p_prev, grad = pair[0], torch.tensor(pair[1], dtype=torch.float64)
    step = (entropy_mirror_step if geometry == "entropy" else euclidean_mirror_step)(
        p_prev, grad, alpha
    )
    result = minimize_on_simplex(
        lambda p: mirror_objective(p, p_prev, grad, alpha, geometry), p_prev.numel()
    )
    assert (result.p - step).abs().max() <= TOL
    # no point of the simplex does better than the closed form
    floor = mirror_objective(step, p_prev, grad, alpha, geometry)
    assert float(floor) <= float(mirror_objective(result.p, p_prev, grad, alpha, geometry)) + 1e-12


def test_forward_loss_entropy_step_is_not_the_arithmetic_target() -> None:
    """The review's case: p_y = (1,0), p_{k-1} = (½,½), α = ½ gives e/(1+e) ≠ 3/4."""
    p_y = torch.tensor([1.0, 0.0], dtype=torch.float64)
    p_prev = torch.tensor([0.5, 0.5], dtype=torch.float64)
    step = lemma1_forward_entropy(p_y, p_prev, 0.5)
    e = torch.e
    assert torch.allclose(step, torch.tensor([e / (1 + e), 1 / (1 + e)], dtype=torch.float64))
    m = arithmetic_target(p_y, p_prev, 0.5)
    assert float((step - m).abs().max()) > 0.018
    # the numerical argmin of Lemma 1's objective agrees with the step, not with m_k
    grad = grad_forward_ce(p_prev, p_y)
    result = minimize_on_simplex(lambda p: mirror_objective(p, p_prev, grad, 0.5, "entropy"), 2)
    assert (result.p - step).abs().max() <= TOL
    assert (result.p - m).abs().max() > 0.018


@pytest.mark.parametrize(
    ("p_y", "p_prev", "alpha"),
    [([0.7, 0.2, 0.1], [0.2, 0.5, 0.3], 0.3), ([0.9, 0.05, 0.05], [1 / 3, 1 / 3, 1 / 3], 0.5)],
)
def test_forward_entropy_step_differs_from_m_on_more_cases(p_y, p_prev, alpha) -> None:
    p_y, p_prev = torch.tensor(p_y, dtype=torch.float64), torch.tensor(p_prev, dtype=torch.float64)
    step = lemma1_forward_entropy(p_y, p_prev, alpha)
    weights = p_prev * torch.exp(alpha * p_y / p_prev)
    assert torch.allclose(step, weights / weights.sum(), atol=1e-14)
    assert float((step - arithmetic_target(p_y, p_prev, alpha)).abs().max()) > 1e-3


def test_gradients_match_autograd() -> None:
    p = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64, requires_grad=True)
    p_y = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
    cases = [
        (grad_reverse_kl, lambda q: (q * (q / p_y).log()).sum()),
        (grad_half_sq, lambda q: 0.5 * ((q - p_y) ** 2).sum()),
        (grad_forward_ce, lambda q: -(p_y * q.log()).sum()),
    ]
    for closed, loss in cases:
        (auto,) = torch.autograd.grad(loss(p), p)
        assert torch.allclose(closed(p.detach(), p_y), auto, atol=1e-12)


@given(st.lists(st.floats(-5, 5), min_size=2, max_size=6))
def test_projection_onto_simplex(values) -> None:
    x = torch.tensor(values, dtype=torch.float64)
    p = project_to_simplex(x)
    assert float(p.sum()) == pytest.approx(1.0, abs=1e-12) and bool((p >= 0).all())
    assert torch.allclose(project_to_simplex(p), p, atol=1e-14)
    # optimality: ⟨x − p, q − p⟩ ≤ 0 for every vertex q of the simplex
    vertices = torch.eye(x.numel(), dtype=torch.float64)
    assert bool((((x - p) * (vertices - p)).sum(-1) <= 1e-10).all())


def test_zero_alpha_and_zero_mass() -> None:
    p_prev = torch.tensor([0.0, 0.4, 0.6], dtype=torch.float64)
    grad = torch.tensor([1.0, -1.0, 2.0], dtype=torch.float64)
    assert torch.equal(entropy_mirror_step(p_prev, grad, 0.0), p_prev)
    step = entropy_mirror_step(p_prev, grad, 0.5)
    assert step[0] == 0.0 and not torch.isnan(step).any()
    disjoint = lemma1_reverse(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]), 0.5)
    assert torch.equal(disjoint, torch.zeros(2))  # g undefined: no mass, never NaN
    with pytest.raises(ValueError):
        mirror_objective(p_prev, p_prev, grad, 0.0, "entropy")
    with pytest.raises(ValueError):
        mirror_objective(p_prev, p_prev, grad, 0.5, "bregman")
