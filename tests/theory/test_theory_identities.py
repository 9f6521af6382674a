"""Property tests of the docs/MATH.md identities for divergences, targets and local losses."""

from __future__ import annotations

import math

import pytest
import scipy.stats
import torch
from hypothesis import given
from hypothesis import strategies as st
from strategies import batch_shapes, distribution, loss_case, one_hot_case, vocab_sizes

from zerolock_theory.theory.divergences import (
    cross_entropy,
    entropy,
    jensen_shannon,
    kl,
    total_variation,
)
from zerolock_theory.theory.losses import DegenerateObjectiveError, local_loss
from zerolock_theory.theory.targets import arithmetic_target, geometric_target, label_smooth

ATOL = 1e-10


@st.composite
def case_with_point(draw, zeros: bool = False):
    p_y, p_prev, alpha = draw(loss_case(zeros=zeros))
    return p_y, p_prev, alpha, draw(distribution(p_y.numel()))


@given(case_with_point())
def test_reverse_loss_is_kl_to_geometric_target_minus_log_z(case) -> None:
    p_y, p_prev, alpha, p = case
    log_g, log_z = geometric_target(p_y, p_prev, alpha)
    lhs = local_loss(p, p_y, p_prev, alpha, "reverse")
    rhs = kl(p, log_g.exp()) - log_z
    assert torch.allclose(lhs, rhs, atol=ATOL, rtol=1e-10)


@given(case_with_point(zeros=True))
def test_forward_loss_is_kl_from_arithmetic_target_plus_constants(case) -> None:
    p_y, p_prev, alpha, p = case  # zeros in p_y and p_prev, p has full support
    m = arithmetic_target(p_y, p_prev, alpha)
    lhs = local_loss(p, p_y, p_prev, alpha, "forward")
    rhs = kl(m, p) + entropy(m) - (1 - alpha) * entropy(p_prev)
    assert torch.allclose(lhs, rhs, atol=ATOL, rtol=1e-10)


@given(vocab_sizes.flatmap(lambda v: st.tuples(distribution(v, zeros=True), distribution(v))))
def test_cross_entropy_is_forward_kl_plus_entropy(pair) -> None:
    p_y, p = pair
    assert torch.allclose(cross_entropy(p_y, p), kl(p_y, p) + entropy(p_y), atol=ATOL)


@given(
    vocab_sizes.flatmap(
        lambda v: st.tuples(distribution(v, zeros=True), distribution(v, zeros=True))
    )
)
def test_entropy_and_kl_agree_with_scipy(pair) -> None:
    p, q = pair
    assert float(entropy(p)) == pytest.approx(scipy.stats.entropy(p.numpy()), abs=1e-12)
    want = scipy.stats.entropy(p.numpy(), q.numpy())
    got = float(kl(p, q))
    assert got == want if math.isinf(want) else got == pytest.approx(want, abs=1e-12)
    assert not math.isnan(got)


@given(
    vocab_sizes.flatmap(
        lambda v: st.tuples(distribution(v, zeros=True), distribution(v, zeros=True))
    )
)
def test_js_and_tv_bounds_and_symmetry(pair) -> None:
    p, q = pair
    js, tv = jensen_shannon(p, q), total_variation(p, q)
    assert 0.0 <= float(js) <= math.log(2) + 1e-15
    assert 0.0 <= float(tv) <= 1.0
    assert torch.allclose(js, jensen_shannon(q, p), atol=1e-14)
    assert torch.allclose(tv, total_variation(q, p), atol=1e-15)
    assert float(jensen_shannon(p, p)) == pytest.approx(0.0, abs=1e-14)
    assert float(total_variation(p, p)) == 0.0
    assert float(tv) <= math.sqrt(float(kl(p, q)) / 2) + 1e-12  # Pinsker (inf allowed)


@given(one_hot_case(), st.data())
def test_degenerate_one_hot_reverse_is_inf_never_nan(case, data) -> None:
    p_y, p_prev, alpha, y = case
    p = data.draw(distribution(p_y.numel()))  # full support: mass off y
    value = local_loss(p, p_y, p_prev, alpha, "reverse")
    assert math.isinf(float(value)) and float(value) > 0
    with pytest.raises(DegenerateObjectiveError):
        local_loss(p, p_y, p_prev, alpha, "reverse", on_degenerate="raise")
    assert math.isfinite(float(local_loss(p_y, p_y, p_prev, alpha, "reverse")))
    log_g, _ = geometric_target(p_y, p_prev, alpha)
    assert torch.equal(log_g.exp(), p_y)  # g_k = e_y for every α > 0
    forward = local_loss(p, p_y, p_prev, alpha, "forward")
    assert math.isfinite(float(forward))  # the implemented loss stays finite


def test_review_two_token_values() -> None:
    p_y = torch.tensor([1.0, 0.0], dtype=torch.float64)
    p = torch.tensor([0.5, 0.5], dtype=torch.float64)
    assert float(kl(p, p_y)) == math.inf
    assert float(cross_entropy(p_y, p)) == pytest.approx(math.log(2), abs=1e-15)
    assert math.isfinite(float(kl(p, label_smooth(p_y, 0.1))))


@given(loss_case(zeros=True), st.data())
def test_zeros_in_p_prev_and_alpha_edges(case, data) -> None:
    p_y, p_prev, alpha = case
    p = data.draw(distribution(p_y.numel()))
    forward = local_loss(p, p_y, p_prev, alpha, "forward")
    reverse = local_loss(p, p_y, p_prev, alpha, "reverse")
    assert math.isfinite(float(forward))  # p has full support
    assert not math.isnan(float(reverse))
    misses = (alpha > 0 and bool((p_y == 0).any())) or (alpha < 1 and bool((p_prev == 0).any()))
    assert math.isinf(float(reverse)) == misses


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("direction", ["forward", "reverse"])
@given(shape=batch_shapes, vocab=vocab_sizes, alpha=st.floats(0.0, 1.0))
def test_batched_losses_match_rows_in_both_dtypes(dtype, direction, shape, vocab, alpha) -> None:
    gen = torch.Generator().manual_seed(len(shape) * 7 + vocab)

    def draw() -> torch.Tensor:
        return torch.softmax(torch.randn(*shape, vocab, generator=gen), -1).to(dtype)

    p, p_y, p_prev = draw(), draw(), draw()
    batched = local_loss(p, p_y, p_prev, alpha, direction)
    assert batched.shape == shape and batched.dtype == dtype
    flat = [
        local_loss(a, b, c, alpha, direction)
        for a, b, c in zip(
            p.reshape(-1, vocab), p_y.reshape(-1, vocab), p_prev.reshape(-1, vocab), strict=True
        )
    ]
    want = torch.stack(flat).reshape(shape) if flat else batched
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert torch.allclose(batched, want, atol=tol, rtol=tol)
    assert not torch.isnan(batched).any()


@given(
    vocab_sizes.flatmap(
        lambda v: st.tuples(distribution(v, zeros=True), distribution(v, zeros=True))
    )
)
def test_gradients_are_nan_free_where_values_are_finite(pair) -> None:
    """Zeros of q under zeros of p: KL and CE are finite and so are their gradients."""
    p, q = pair
    q = torch.where(p > 0, q.clamp_min(1e-3), q).requires_grad_(True)  # q covers p's support
    for divergence in (kl, cross_entropy):
        (grad,) = torch.autograd.grad(divergence(p, q), q)
        assert not torch.isnan(grad).any() and bool((grad[p == 0] == 0).all())
