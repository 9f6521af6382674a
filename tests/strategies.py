"""Shared hypothesis strategies for the property tests (distributions, α, ε, shapes).

Distributions are float64 torch vectors built from log-uniform weights, so entries range
over several orders of magnitude; ``zeros=True`` lets some entries be exactly 0 (never all).
"""

from __future__ import annotations

import math

import torch
from hypothesis import strategies as st

__all__ = [
    "alphas",
    "batch_shapes",
    "distribution",
    "epsilons",
    "interior_alphas",
    "loss_case",
    "one_hot_case",
    "readout_pair_case",
    "vocab_sizes",
]

vocab_sizes = st.integers(min_value=2, max_value=6)
interior_alphas = st.floats(min_value=0.01, max_value=0.99)
alphas = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(min_value=0.0, max_value=1.0))
epsilons = st.floats(min_value=0.01, max_value=0.5)
batch_shapes = st.lists(st.integers(min_value=1, max_value=3), min_size=0, max_size=2).map(tuple)

_log_weight = st.floats(min_value=-8.0, max_value=0.0)


@st.composite
def distribution(draw: st.DrawFn, vocab: int, *, zeros: bool = False) -> torch.Tensor:
    """A probability vector of length ``vocab`` (float64)."""
    weights = [math.exp(draw(_log_weight)) for _ in range(vocab)]
    if zeros:
        keep = draw(st.lists(st.booleans(), min_size=vocab, max_size=vocab))
        if not any(keep):
            keep[draw(st.integers(0, vocab - 1))] = True
        weights = [w if k else 0.0 for w, k in zip(weights, keep, strict=True)]
    p = torch.tensor(weights, dtype=torch.float64)
    return p / p.sum()


@st.composite
def loss_case(
    draw: st.DrawFn, *, zeros: bool = False, edges: bool = True, vocab: int | None = None
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """(p_y, p_prev, α) of one length; α ∈ {0, 1} included when ``edges``."""
    v = vocab if vocab is not None else draw(vocab_sizes)
    p_y = draw(distribution(v, zeros=zeros))
    p_prev = draw(distribution(v, zeros=zeros))
    alpha = draw(alphas if edges else interior_alphas)
    return p_y, p_prev, alpha


@st.composite
def one_hot_case(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, float, int]:
    """(e_y, p_prev with full support, α ∈ (0, 1], y)."""
    v = draw(vocab_sizes)
    y = draw(st.integers(0, v - 1))
    p_y = torch.zeros(v, dtype=torch.float64)
    p_y[y] = 1.0
    alpha = draw(st.one_of(st.just(1.0), interior_alphas))
    return p_y, draw(distribution(v)), alpha, y


@st.composite
def readout_pair_case(draw: st.DrawFn, direction: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]:
    """(p_{k-1}, p_k, t = p_y^ε, α ∈ (0, 1]) for Proposition 1: any readouts, sometimes p_k exactly at
    the loss's optimum (δ_k = 0) or p_{k-1} confident on the label; ε ∈ [0, 0.5] forward, (0, 0.5] reverse."""
    from zerolock_theory.theory.targets import arithmetic_target, geometric_target, label_smooth

    v = draw(vocab_sizes)
    y = draw(st.integers(0, v - 1))
    e_y = torch.zeros(v, dtype=torch.float64)
    e_y[y] = 1.0
    epsilon = draw(epsilons if direction == "reverse" else st.one_of(st.just(0.0), epsilons))
    target = label_smooth(e_y, epsilon)
    alpha = draw(st.one_of(st.just(1.0), interior_alphas))
    p_prev = draw(distribution(v))
    if draw(st.booleans()):
        p_prev = 0.99 * e_y + 0.01 * p_prev
    p = draw(distribution(v))
    if draw(st.booleans()):
        p = arithmetic_target(target, p_prev, alpha) if direction == "forward" else \
            geometric_target(target, p_prev, alpha)[0].exp()
    return p_prev, p, target, alpha
