"""Assumption 5 terms: closed-form φ against autograd, undefined and infinite cases."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import alphas, epsilons

from zerolock_theory.theory.divergences import kl
from zerolock_theory.theory.stability import (
    FirstOrder,
    StabilityTerms,
    as_metric,
    first_order_totals,
    shared_totals,
    stability_terms,
)
from zerolock_theory.theory.targets import (
    arithmetic_target,
    geometric_target,
    label_smooth,
    one_hot,
)

OBJECTIVES = st.sampled_from(["paper", "implemented"])


def _probe(seed: int, k: int, n: int, v: int, h: float, epsilon: float = 0.1):
    """p̃^t, p̃^{t+1} = p̃^t + h(q − p̃^t) (on the simplex), p_out, smoothed p_y."""
    gen = torch.Generator().manual_seed(seed)

    def simplex(*shape: int) -> torch.Tensor:
        return torch.softmax(2 * torch.randn(*shape, v, generator=gen, dtype=torch.float64), -1)

    p_t, q, p_out = simplex(k, n), simplex(k, n), simplex(k, n)
    p_y = label_smooth(one_hot(torch.randint(v, (n,), generator=gen), v, torch.float64), epsilon)
    return p_t, p_t + h * (q - p_t), p_out, p_y


def reference_r(p_tilde: torch.Tensor, p_out, p_y, alpha: float, objective: str) -> torch.Tensor:
    """R(ω^t; p̃) from its definition, over the whole [K, N, V] array at once."""
    if objective == "paper":
        divergence = kl(p_out, geometric_target(p_y, p_tilde, alpha)[0].exp())
    else:
        divergence = kl(arithmetic_target(p_y, p_tilde, alpha), p_out)
    return divergence.mean(-1).sum()


@given(
    seed=st.integers(0, 10_000),
    shape=st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(2, 6)),
    alpha=alphas,
    epsilon=epsilons,
    objective=OBJECTIVES,
)
@example(seed=0, shape=(1, 1, 2), alpha=1.0, epsilon=0.5, objective="paper")
@example(seed=1, shape=(2, 3, 4), alpha=0.0, epsilon=0.1, objective="paper")
@example(seed=2, shape=(2, 3, 4), alpha=0.0, epsilon=0.1, objective="implemented")
def test_closed_form_phi_matches_autograd(seed, shape, alpha, epsilon, objective) -> None:
    p_t, p_next, p_out, p_y = _probe(seed, *shape, h=0.05, epsilon=epsilon)
    terms = stability_terms(p_t, p_next, p_out, p_y, alpha, objective, check_autograd=True)
    leaf = p_t.clone().requires_grad_(True)
    r = reference_r(leaf, p_out, p_y, alpha, objective)
    # α = 1 (paper): g_k = p_y does not depend on p̃ at all
    grad = torch.autograd.grad(r, leaf)[0] if r.requires_grad else torch.zeros_like(leaf)
    phi_reference = (grad * (p_next - p_t)).sum()
    assert torch.allclose(terms.phi, terms.phi_autograd, atol=1e-12, rtol=1e-8)
    assert float(terms.phi_total) == pytest.approx(float(phi_reference), abs=1e-12, rel=1e-8)
    r_t = reference_r(p_t, p_out, p_y, alpha, objective)
    r_next = reference_r(p_next, p_out, p_y, alpha, objective)
    assert float(terms.r_before_total) == pytest.approx(float(r_t), abs=1e-12, rel=1e-10)
    assert float(terms.actual_total) == pytest.approx(float(r_next - r_t), abs=1e-11)
    n = p_t.shape[1]
    assert float(terms.q_total) == pytest.approx(float(((p_next - p_t) ** 2).sum()) / n, rel=1e-12)
    assert torch.allclose(terms.remainder, terms.actual - terms.phi)
    assert terms.defined and terms.reason == ""


@pytest.mark.parametrize("objective", ["paper", "implemented"])
def test_remainder_is_second_order_and_ratio_scales_like_one_over_step(objective: str) -> None:
    small = [stability_terms(*_probe(3, 2, 4, 5, h), 0.4, objective) for h in (2e-3, 1e-3)]
    assert float(small[0].remainder_total / small[1].remainder_total) == pytest.approx(
        4.0, rel=0.05
    )
    phi = [float(t.phi_total) for t in small]
    assert phi[0] / phi[1] == pytest.approx(2.0, rel=1e-6)  # φ is first order in Δp̃
    if phi[0] > 0:  # ρ = φ/‖Δp̃‖² doubles when the step halves: no uniform bound
        ratio = float(small[1].ratio_total / small[0].ratio_total)
        assert ratio == pytest.approx(2.0, rel=1e-6)


def test_unchanged_upstream_gives_nan_ratio_and_none_metric() -> None:
    p_t, p_next, p_out, p_y = _probe(1, 3, 2, 4, h=0.1)
    p_next[0] = p_t[0]  # chunk 1: p_0 is the frozen embedding readout
    terms = stability_terms(p_t, p_next, p_out, p_y, 0.5, "paper")
    assert math.isnan(float(terms.ratio[0])) and as_metric(terms.ratio[0]) is None
    assert terms.defined and math.isfinite(float(terms.ratio_total))
    still = stability_terms(p_t, p_t, p_out, p_y, 0.5, "implemented")
    assert not still.defined and "did not change" in still.reason
    assert as_metric(still.ratio_total) is None and float(still.phi_total) == 0.0


def test_one_hot_paper_objective_is_flagged_inf_never_nan() -> None:
    p_t, p_next, p_out, _ = _probe(2, 2, 3, 4, h=0.1)
    p_y = one_hot(torch.tensor([0, 3, 1]), 4, torch.float64)
    terms = stability_terms(p_t, p_next, p_out, p_y, 0.5, "paper", check_autograd=True)
    assert not terms.defined and "label smoothing" in terms.reason
    for name in ("phi", "phi_autograd", "ratio", "actual", "remainder", "r_before"):
        assert bool(torch.isposinf(getattr(terms, name)).all()), name
        assert as_metric(getattr(terms, f"{name}_total")) == math.inf
    for name in ("r_before", "r_after", "phi", "phi_autograd", "q", "ratio", "actual", "remainder"):
        assert not bool(torch.isnan(getattr(terms, name)).any()), name
        assert not bool(torch.isnan(getattr(terms, f"{name}_total"))), name
    implemented = stability_terms(p_t, p_next, p_out, p_y, 0.5, "implemented")
    assert implemented.defined and math.isfinite(float(implemented.ratio_total))


@pytest.mark.parametrize("objective", ["paper", "implemented"])
def test_log_input_and_float32(objective: str) -> None:
    p_t, p_next, p_out, p_y = _probe(5, 2, 3, 6, h=0.05)
    plain = stability_terms(p_t, p_next, p_out, p_y, 0.3, objective)
    logs = stability_terms(
        p_t.log(), p_next.log(), p_out.log(), p_y.log(), 0.3, objective, log_input=True
    )
    assert torch.allclose(plain.phi, logs.phi, rtol=1e-9) and torch.allclose(
        plain.r_before, logs.r_before
    )
    low = stability_terms(p_t.float(), p_next.float(), p_out.float(), p_y.float(), 0.3, objective)
    assert low.phi.dtype == torch.float64 and torch.allclose(
        low.phi, plain.phi, rtol=1e-3, atol=1e-7
    )


def test_alpha_one_has_zero_first_order_term() -> None:
    terms = stability_terms(*_probe(6, 2, 3, 4, h=0.1), 1.0, "paper", check_autograd=True)
    assert float(terms.phi_total) == 0.0 and float(terms.actual_total) == 0.0
    assert float(terms.ratio_total) == 0.0


def test_validation_and_metrics() -> None:
    p_t, p_next, p_out, p_y = _probe(0, 2, 3, 4, h=0.1)
    with pytest.raises(ValueError):
        stability_terms(p_t, p_next[:, :2], p_out, p_y, 0.5, "paper")
    with pytest.raises(ValueError):
        stability_terms(p_t, p_next, p_out, p_y, 1.5, "paper")
    with pytest.raises(ValueError):
        stability_terms(p_t, p_next, p_out, p_y, 0.5, "forward")
    terms = stability_terms(p_t, p_next, p_out, p_y, 0.5, "implemented")
    assert terms.phi_autograd is None and terms.phi_autograd_total is None and terms.num_chunks == 2
    assert as_metric(None) is None and as_metric(float("nan")) is None
    assert as_metric(torch.tensor(-math.inf)) == -math.inf and as_metric(torch.tensor(1.5)) == 1.5
    with pytest.raises(ValueError):
        StabilityTerms(**{**terms.__dict__, "phi": torch.zeros(3, dtype=torch.float64)})


@pytest.mark.parametrize("objective", ["paper", "implemented"])
def test_duplicating_the_probe_batch_changes_nothing(objective: str) -> None:
    """φ, q and ρ are per-position means: the batch B and B ∪ B give the same numbers."""
    p_t, p_next, p_out, p_y = _probe(11, 3, 5, 6, h=0.05)
    once = stability_terms(p_t, p_next, p_out, p_y, 0.4, objective)
    twice = stability_terms(
        *(torch.cat([x, x], dim=1) for x in (p_t, p_next, p_out)), torch.cat([p_y, p_y]), 0.4, objective
    )
    for name in ("phi", "q", "ratio", "actual", "r_before"):
        torch.testing.assert_close(getattr(twice, name), getattr(once, name), rtol=1e-12, atol=1e-15)
        torch.testing.assert_close(getattr(twice, f"{name}_total"), getattr(once, f"{name}_total"), rtol=1e-12, atol=1e-15)
    assert float(once.q_total) > 0 and float(once.ratio_total) >= 0


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equal floats, NaN equal to NaN."""
    return bool(torch.equal(a, b)) or (bool(torch.isnan(a)) and bool(torch.isnan(b)))


@given(
    seed=st.integers(0, 10_000),
    shape=st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(2, 6)),
    alpha=st.sampled_from([0.0, 0.3, 0.5, 1.0]),
    epsilon=st.sampled_from([0.0, 0.1]),
    zeros=st.sampled_from(["none", "before", "after", "out", "all", "nan"]),
    objective=OBJECTIVES,
)
def test_first_order_totals_equal_stability_terms_bit_for_bit(seed, shape, alpha, epsilon, zeros, objective) -> None:
    """The step-scaling fast path: every after at once, R at the afters never computed, and the
    same φ, q, ρ and ``defined`` as ``stability_terms`` one after at a time, zeros and all."""
    p_t, _, p_out, p_y = _probe(seed, *shape, h=0.0, epsilon=epsilon)
    gen = torch.Generator().manual_seed(seed + 1)
    afters = [p_t + c * (torch.softmax(torch.randn(p_t.shape, generator=gen, dtype=torch.float64), -1) - p_t)
              for c in (1.0, 0.5, 0.0)]  # c = 0: Δp̃ = 0, the undefined ratio

    def hole(x: torch.Tensor) -> torch.Tensor:  # exact zeros (renormalised) at random coordinates
        keep = torch.rand(x.shape, generator=gen, dtype=torch.float64) > 0.3
        keep[..., 0] = True
        x = x * keep
        return x / x.sum(-1, keepdim=True)

    if zeros in ("before", "all"):
        p_t = hole(p_t)
    if zeros in ("after", "all"):
        afters = [hole(a) for a in afters]
    if zeros in ("out", "all"):
        p_out = hole(p_out)
    if zeros == "nan":
        afters[1] = afters[1].clone()
        afters[1][0, 0, -1] = math.nan
    fast = first_order_totals(p_t, afters, p_out, p_y, alpha, objective)
    for after, got in zip(afters, fast, strict=True):
        terms = stability_terms(p_t, after, p_out, p_y, alpha, objective)
        assert _same(got.phi_total, terms.phi_total), (got.phi_total, terms.phi_total)
        assert _same(got.q_total, terms.q_total)
        assert _same(got.ratio_total, terms.ratio_total), (got.ratio_total, terms.ratio_total)
        assert got.defined == terms.defined
    if zeros != "nan":  # both objectives' FirstOrder at once, Δ and q shared: the same totals
        both = shared_totals([FirstOrder(p_t, p_out, p_y, alpha, o) for o in ("implemented", "paper")], afters)
        for got, again in zip(fast, both[("implemented", "paper").index(objective)], strict=True):
            assert all(_same(getattr(got, f), getattr(again, f)) for f in ("phi_total", "q_total", "ratio_total"))
            assert got.defined == again.defined


@pytest.mark.parametrize("objective", ["paper", "implemented"])
@pytest.mark.parametrize("case", ["underflow", "inf", "huge"])
def test_shared_totals_follow_the_rounding_and_the_range_of_stability_terms(case, objective) -> None:
    """Found by the break of the scaling maths (docs/breaks/scaling_drift.md): an upstream readout of
    5e-324 where the output is exactly 0 (one-hot p_y, α = ½: m rounds to 0 and R stays finite), and
    afters outside [0, 1] (+inf, 1e308: R is infinite or overflows) read as ``stability_terms`` reads them."""
    p_t, p_next, p_out, _ = _probe(3, 2, 3, 5, h=0.2)
    p_y = one_hot(torch.tensor([0, 1, 2]), 5, torch.float64)
    p_t, p_out, after = p_t.clone(), p_out.clone(), p_next.clone()
    if case == "underflow":  # m = ½·5e-324 rounds to 0 at ω^t and after: R finite though p_out is 0 there
        p_t[1, 0, 4] = after[1, 0, 4] = 5e-324
        p_out[1, 0, 4] = 0.0
    else:
        after[1, 0, 4] = math.inf if case == "inf" else 1e308
    got = shared_totals([FirstOrder(p_t, p_out, p_y, 0.5, objective)], [after, p_t])[0]
    for a, fast in zip([after, p_t], got, strict=True):
        terms = stability_terms(p_t, a, p_out, p_y, 0.5, objective)
        assert all(_same(getattr(fast, f), getattr(terms, f)) for f in ("phi_total", "q_total", "ratio_total"))
        assert fast.defined == terms.defined


def test_first_order_totals_rejects_mismatched_shapes() -> None:
    p_t, p_next, p_out, p_y = _probe(0, 2, 3, 4, h=0.1)
    with pytest.raises(ValueError, match="one \\[K, N, V\\] shape"):
        first_order_totals(p_t, [p_next[:1]], p_out, p_y, 0.5, "paper")
