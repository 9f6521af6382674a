"""Calibration of the fixed-point decision on synthetic reached readouts with known answers, recorded
without the label-permutation null (the arms then decide on the change E_d itself; the catalogue
with the null is ``test_analyses_fixed_point_arms``).

Each seed draws its own batch: a nearly uniform p_{k-1} (as p_0 is on the package's runs),
labels, and a start readout p^0. "Toward m_k" = the mixture (1-λ)·p^0 + λ·m_k, "toward g_k"
= (1-λ)·p^0 + λ·g_k; "flattened" = p^0 at a temperature T > 1 (no label information).
"""

from __future__ import annotations

import itertools

import pytest
import torch

from analyses.lemma2.fixed_point import (
    ARM_OUTCOMES,
    CONTRAST_FLOOR,
    FixedPointResult,
    FixedPointSeed,
    fixed_point_decision,
    reached,
)
from analyses.results import load_result
from zerolock_theory.theory.lemma2 import temper
from zerolock_theory.theory.targets import (
    arithmetic_target,
    geometric_target,
    label_smooth,
    one_hot,
)

N, V, ALPHA, EPS, SEEDS = 48, 64, 0.5, 0.1, 5


def _batch(seed: int, spread: float = 0.3, noise: float = 0.5):
    """p_{k-1} with logits of scale ``spread``; the start p^0 = p_{k-1} with log-noise of scale ``noise``."""
    g = torch.Generator().manual_seed(seed)
    log_prev = torch.log_softmax(spread * torch.randn(N, V, generator=g, dtype=torch.float64), -1)
    log_start = torch.log_softmax(log_prev + noise * torch.randn(N, V, generator=g, dtype=torch.float64), -1)
    labels = torch.randint(V, (N,), generator=g)
    p_y = label_smooth(one_hot(labels, V, torch.float64), EPS)
    m = arithmetic_target(p_y, log_prev.exp(), ALPHA)
    g_k = geometric_target(p_y, log_prev.exp(), ALPHA)[0].exp()
    return log_prev, log_start, labels, {"m": m, "g": g_k}


def _toward(log_start: torch.Tensor, target: torch.Tensor, lam: float) -> torch.Tensor:
    return ((1 - lam) * log_start.exp() + lam * target).log()


def _seeds(forward, reverse, n: int = SEEDS, spread: float = 0.3, noise: float = 0.5) -> list[FixedPointSeed]:
    """``forward(seed, log_start, targets)`` / ``reverse(...)`` give the reached log-readouts."""
    out = []
    for s in range(n):
        log_prev, log_start, labels, targets = _batch(s, spread, noise)
        rec = {d: reached(d, log_prev, log_start, fn(s, log_start, targets), labels, ALPHA, EPS)
               for d, fn in (("forward", forward), ("reverse", reverse))}
        tv_m_g = float((0.5 * (targets["m"] - targets["g"]).abs().sum(-1)).mean())
        out.append(FixedPointSeed(s, rec["forward"], rec["reverse"], 0.0, 0.0, tv_m_g))
    return out


def toward(name, lam: float = 0.3):
    return lambda s, start, targets: _toward(start, targets[name], lam + 0.02 * s)


def flattened(temperature: float, step: float):
    return lambda s, start, _: temper(start, temperature + step * s)


def _decide(seeds) -> FixedPointResult:
    return fixed_point_decision(seeds, chunk=1, alpha=ALPHA, epsilon=EPS)


# (p_{k-1} logit scale, start noise): nearly uniform p_{k-1} as on the package's runs, and peaked
SHAPES = [(0.3, 0.5), (0.3, 2.0), (2.0, 0.5), (2.0, 2.0)]


@pytest.mark.parametrize(("spread", "noise"), SHAPES)
@pytest.mark.parametrize("lam", [0.3, 0.6])
def test_each_loss_toward_its_own_target_and_swapped(spread, noise, lam) -> None:
    own = _decide(_seeds(toward("m", lam), toward("g", lam), spread=spread, noise=noise))
    assert (own.forward_arm.outcome, own.reverse_arm.outcome) == ARM_OUTCOMES[:1] * 2
    assert own.outcome == "each loss moves toward its own optimum" and own.statistic == "projection"
    assert own.contrast.high < -CONTRAST_FLOOR and own.counted == SEEDS
    swapped = _decide(_seeds(toward("g", lam), toward("m", lam), spread=spread, noise=noise))
    assert swapped.outcome == "opposite"


@pytest.mark.parametrize("name", ["m", "g"])
def test_both_toward_the_same_target_reads_one_arm_toward_the_others(name) -> None:
    """Both trainings move the same way: the contrast C is exactly 0, the arms say where they went."""
    result = _decide(_seeds(toward(name), toward(name)))
    assert result.outcome == f"both move toward {name}_k"
    assert result.contrast.estimate == 0.0


@pytest.mark.parametrize(("spread", "noise"), SHAPES)
def test_flattened_readouts_never_give_a_verdict(spread, noise) -> None:
    temps = [1.05, 1.5, 4.0]
    for t_f, t_r in itertools.product(temps, temps):
        seeds = _seeds(flattened(t_f, 0.01), flattened(t_r, 0.02), spread=spread, noise=noise)
        result = _decide(seeds)
        assert result.outcome == "not testable", (t_f, t_r, result.contrast)
        assert result.label_blind == list(range(SEEDS))
        assert max(max(s.forward.residual, s.reverse.residual) for s in seeds) < 1e-6


def test_without_the_guard_flattening_moves_the_contrast() -> None:
    """Why the guard is there: two flattenings alone give a contrast off 0."""
    seeds = _seeds(flattened(1.1, 0.0), flattened(3.0, 0.0), spread=2.0)
    contrast = fixed_point_decision(seeds, 1, ALPHA, EPS, residual_floor=-1.0).contrast
    assert contrast.high < -CONTRAST_FLOOR or contrast.low > CONTRAST_FLOOR


def test_one_label_blind_training_leaves_the_seed_out() -> None:
    result = _decide(_seeds(flattened(1.5, 0.0), toward("g")))
    assert result.outcome == "not testable" and result.counted == 0


def test_too_few_seeds_is_not_testable() -> None:
    assert _decide(_seeds(toward("m"), toward("g"), n=2)).outcome == "not testable"


def test_the_result_round_trips() -> None:
    result = _decide(_seeds(toward("m"), toward("g")))
    assert load_result(result.to_json()).to_json() == result.to_json()  # NaN losses: compare the JSON
