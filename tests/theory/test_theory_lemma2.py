"""zerolock_theory.theory.lemma2: the exact identities, the full-vocabulary distances, the temperature match."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from strategies import epsilons, interior_alphas, vocab_sizes

from zerolock_theory.theory.divergences import entropy, total_variation
from zerolock_theory.theory.lemma2 import (
    entropy_matching_temperature,
    forward_identity,
    readout_distances,
    reverse_identity,
    temper,
)
from zerolock_theory.theory.targets import (
    arithmetic_target,
    geometric_target,
    label_smooth,
    one_hot,
)


def _case(vocab: int, epsilon: float, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    p_y = label_smooth(one_hot(torch.tensor(vocab - 1), vocab, torch.float64), epsilon)
    prev = torch.rand(vocab, generator=g, dtype=torch.float64) + 0.01
    return p_y, prev / prev.sum()


@given(vocab_sizes, epsilons, interior_alphas)
def test_reverse_identity_holds_and_g_is_the_minimum(vocab, epsilon, alpha) -> None:
    p_y, prev = _case(vocab, epsilon)
    check = reverse_identity(p_y, prev, alpha)
    assert check.residual < 1e-12
    assert check.min_excess >= -1e-12


@given(vocab_sizes, epsilons, interior_alphas)
def test_forward_identity_holds_and_m_is_the_minimum(vocab, epsilon, alpha) -> None:
    p_y, prev = _case(vocab, epsilon)
    check = forward_identity(p_y, prev, alpha)
    assert check.residual < 1e-12
    assert check.min_excess >= -1e-12


def test_a_wrong_target_breaks_the_reverse_check() -> None:
    p_y, prev = _case(4, 0.1)
    check = reverse_identity(p_y, prev, 0.5, target=arithmetic_target(p_y, prev, 0.5))
    assert check.residual > 1e-3 or check.min_excess < -1e-3


def test_readout_distances_equal_the_dense_reference() -> None:
    g = torch.Generator().manual_seed(1)
    n, vocab, alpha, eps = 7, 11, 0.3, 0.2
    log_prev = torch.log_softmax(torch.randn(n, vocab, generator=g, dtype=torch.float64), -1)
    log_p = torch.log_softmax(torch.randn(n, vocab, generator=g, dtype=torch.float64), -1)
    labels = torch.randint(vocab, (n,), generator=g)
    p_y = label_smooth(one_hot(labels, vocab, torch.float64), eps)
    m = arithmetic_target(p_y, log_prev.exp(), alpha)
    g_k = geometric_target(p_y, log_prev.exp(), alpha)[0].exp()
    out = readout_distances(log_prev, log_p, labels, alpha, eps)
    torch.testing.assert_close(out["tv_m_g"], total_variation(m, g_k), atol=1e-14, rtol=0)
    torch.testing.assert_close(out["tv_m"], total_variation(log_p.exp(), m), atol=1e-14, rtol=0)
    torch.testing.assert_close(out["tv_g"], total_variation(log_p.exp(), g_k), atol=1e-14, rtol=0)
    torch.testing.assert_close(out["entropy"], entropy(log_p.exp()), atol=1e-13, rtol=0)


def test_readout_distances_in_blocks_equal_one_block(monkeypatch) -> None:
    import zerolock_theory.theory.lemma2 as module

    g = torch.Generator().manual_seed(2)
    log_prev = torch.log_softmax(torch.randn(9, 16, generator=g), -1)
    log_p = torch.log_softmax(torch.randn(9, 16, generator=g), -1)
    labels = torch.randint(16, (9,), generator=g)
    whole = readout_distances(log_prev, log_p, labels, 0.5, 0.1)
    monkeypatch.setattr(module, "BLOCK_ELEMS", 32)  # two positions per block
    parts = readout_distances(log_prev, log_p, labels, 0.5, 0.1)
    for name in whole:
        assert torch.equal(whole[name], parts[name])


def test_readout_distances_refuse_the_degenerate_epsilon() -> None:
    lp = torch.log_softmax(torch.zeros(2, 3), -1)
    with pytest.raises(ValueError, match="epsilon"):
        readout_distances(lp, lp, torch.tensor([0, 1]), 0.5, 0.0)


@pytest.mark.parametrize("tau", [0.5, 1.0, 1.3, 4.0])
def test_entropy_matching_recovers_the_temperature(tau) -> None:
    g = torch.Generator().manual_seed(3)
    log_p = torch.log_softmax(3 * torch.randn(20, 30, generator=g, dtype=torch.float64), -1)
    target = float(entropy(temper(log_p, tau), log_input=True).mean())
    assert math.isclose(entropy_matching_temperature(log_p, target), tau, rel_tol=1e-8)


def test_entropy_matching_clips_to_the_bracket() -> None:
    log_p = torch.log_softmax(torch.randn(4, 8, dtype=torch.float64), -1)
    assert entropy_matching_temperature(log_p, math.log(8) + 1.0) == 1e3
    assert entropy_matching_temperature(log_p, -1.0) == 1e-2
