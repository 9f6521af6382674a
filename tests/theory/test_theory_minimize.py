"""Closed-form minimizers m_k, g_k against the independent numerical minimizer."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from strategies import distribution, interior_alphas, loss_case, vocab_sizes

from zerolock_theory.theory.losses import DegenerateObjectiveError
from zerolock_theory.theory.minimize import loss_domain, minimize_local_loss, minimize_on_simplex
from zerolock_theory.theory.targets import arithmetic_target, geometric_target

TOL = 1e-5


@given(loss_case(zeros=True))
def test_forward_minimizer_is_arithmetic_mixture(case) -> None:
    p_y, p_prev, alpha = case
    result = minimize_local_loss(p_y, p_prev, alpha, "forward")
    m = arithmetic_target(p_y, p_prev, alpha)
    assert (result.p - m).abs().max() <= TOL
    assert result.success


@given(loss_case(zeros=True))
def test_reverse_minimizer_is_geometric_mean(case) -> None:
    p_y, p_prev, alpha = case
    log_g, log_z = geometric_target(p_y, p_prev, alpha)
    if not torch.isfinite(log_z):  # disjoint supports: +inf everywhere
        with pytest.raises(DegenerateObjectiveError):
            minimize_local_loss(p_y, p_prev, alpha, "reverse")
        return
    result = minimize_local_loss(p_y, p_prev, alpha, "reverse")
    assert (result.p - log_g.exp()).abs().max() <= TOL


@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("direction", ["forward", "reverse"])
def test_alpha_edges(alpha: float, direction: str) -> None:
    p_y = torch.tensor([0.6, 0.3, 0.1, 0.0], dtype=torch.float64)
    p_prev = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    want = p_y if alpha == 1.0 else p_prev
    result = minimize_local_loss(p_y, p_prev, alpha, direction)
    assert (result.p - want).abs().max() <= TOL


def test_one_hot_reverse_minimizer_is_e_y() -> None:
    p_y = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    p_prev = torch.tensor([0.3, 0.3, 0.4], dtype=torch.float64)
    result = minimize_local_loss(p_y, p_prev, 0.4, "reverse")
    assert torch.equal(result.p, p_y) and result.n_iter == 0
    assert loss_domain(p_y, p_prev, 0.4, "reverse").tolist() == [False, True, False]


# Bregman generators φ on the positive orthant: D_φ(x, y) = φ(x) − φ(y) − ⟨∇φ(y), x − y⟩.
def _bregman(phi: Callable[[torch.Tensor], torch.Tensor]):
    def divergence(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        y = y.detach().requires_grad_(True) if not y.requires_grad else y
        (grad,) = torch.autograd.grad(phi(y), y, create_graph=True)
        return phi(x) - phi(y) - (grad * (x - y)).sum()

    return divergence


WEIGHTS = torch.tensor([1.0, 2.0, 0.5, 3.0, 1.5, 0.7], dtype=torch.float64)
GENERATORS = {
    "squared_euclidean": lambda x: 0.5 * (x * x).sum(),
    "negative_entropy": lambda x: (x * torch.log(x)).sum(),
    "burg_itakura_saito": lambda x: -torch.log(x).sum(),
    "weighted_squares": lambda x: (WEIGHTS[: x.numel()] * x * x).sum(),
}


@pytest.mark.parametrize("name", sorted(GENERATORS))
@given(vocab_sizes.flatmap(lambda v: st.tuples(distribution(v), distribution(v))), interior_alphas)
def test_arithmetic_mixture_is_the_bregman_mean(name: str, pair, alpha: float) -> None:
    p_y, p_prev = pair
    div = _bregman(GENERATORS[name])

    def objective(p: torch.Tensor) -> torch.Tensor:
        return alpha * div(p_y, p) + (1 - alpha) * div(p_prev, p)

    result = minimize_on_simplex(objective, p_y.numel())
    assert (result.p - arithmetic_target(p_y, p_prev, alpha)).abs().max() <= TOL


def test_generic_callable_and_support() -> None:
    c = torch.tensor([0.2, 0.0, 0.5, 0.3], dtype=torch.float64)
    result = minimize_on_simplex(lambda p: ((p - c) ** 2).sum(), 4, support=c > 0)
    assert (result.p - c).abs().max() <= TOL and result.p[1] == 0.0
    single = minimize_on_simplex(lambda p: p.sum(), 3, support=[False, True, False])
    assert single.p.tolist() == [0.0, 1.0, 0.0]


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError):
        minimize_on_simplex(lambda p: p.sum(), 1)
    with pytest.raises(ValueError):
        minimize_on_simplex(lambda p: p.sum(), 3, support=[False, False, False])
    with pytest.raises(ValueError):
        minimize_on_simplex(lambda p: torch.log(p - 1).sum(), 3)  # not finite at the start
    with pytest.raises(ValueError):
        minimize_local_loss([0.5, 0.6], [0.5, 0.5], 0.5)  # not a distribution
    with pytest.raises(ValueError):
        minimize_local_loss([0.5, 0.5], [0.5, 0.5], 1.5)
    with pytest.raises(DegenerateObjectiveError):
        minimize_local_loss([1.0, 0.0], [0.0, 1.0], 0.5, "reverse")
