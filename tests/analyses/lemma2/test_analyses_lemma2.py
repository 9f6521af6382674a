"""The three Lemma 2 rows and the descriptive tracking, on constructed cases with known answers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from synthetic_runs import laid_out

from analyses.lemma2.targets import (
    IMPLEMENTED_OUTCOMES,
    MISMATCH_OUTCOMES,
    STATED_OUTCOMES,
    TRACKING_OUTCOMES,
    TV_SMALL,
    lemma2_implemented,
    lemma2_mismatch,
    lemma2_stated,
    lemma2_tracking,
)
from analyses.results import load_result
from probes.lemma2 import lemma2_metrics, null_metrics
from zerolock_theory.records import INITIAL, LEMMA2
from zerolock_theory.theory.lemma2 import temper
from zerolock_theory.theory.targets import (
    arithmetic_target,
    geometric_target,
    label_smooth,
    one_hot,
)

K, N, V, ALPHA, EPS = 3, 40, 50, 0.5, 0.1


def test_lemma2_as_stated_holds_exactly() -> None:
    result = lemma2_stated()
    assert result.outcome == "holds (exact)"
    assert result.max_residual < 1e-12 and result.min_excess >= 0.0 and result.n_cases == 81
    assert load_result(result.to_json()) == result


def test_lemma2_as_stated_fails_for_another_point() -> None:
    result = lemma2_stated(vocab_sizes=(3,), target=arithmetic_target)
    assert result.outcome == "fails"
    assert {lemma2_stated().outcome, result.outcome} == set(STATED_OUTCOMES)


def test_the_headline_case_at_epsilon_one_tenth() -> None:
    result = lemma2_implemented()
    assert result.outcome == "no: m_k"
    assert result.p_y == pytest.approx([0.95, 0.05])
    assert result.m == pytest.approx([0.725, 0.275], abs=1e-12)
    g1 = math.sqrt(0.95 * 0.5) / (math.sqrt(0.95 * 0.5) + math.sqrt(0.05 * 0.5))
    assert result.g == pytest.approx([g1, 1 - g1], abs=1e-12) and round(g1, 3) == 0.813
    assert round(result.tv_m_g, 3) == 0.088
    assert result.forward_residual < 1e-12
    assert result.numerical_tv_m < 1e-8 and result.numerical_tv_g == pytest.approx(result.tv_m_g, abs=1e-8)


@pytest.mark.parametrize("case", [{"alpha": 1.0}, {"alpha": 0.0}, {"p_prev": (0.95, 0.05)}])
def test_implemented_says_yes_where_the_targets_coincide(case) -> None:
    assert lemma2_implemented(**case).outcome == "yes"
    assert {lemma2_implemented().outcome, "yes"} == set(IMPLEMENTED_OUTCOMES)


def _mismatch_frame(before: list[float], after: list[float]) -> pd.DataFrame:
    rows = [{"step": 0, **{LEMMA2.key(k, "tv_m_g" + INITIAL): v for k, v in enumerate(before, 1)},
             **{LEMMA2.key(k, "tv_m_g"): v for k, v in enumerate(before, 1)}},
            {"step": 9, **{LEMMA2.key(k, "tv_m_g"): v for k, v in enumerate(after, 1)}}]
    return laid_out(pd.DataFrame(rows), len(before))


def _mismatch(level: float, spread: float, seeds: int = 5):
    rng = np.random.default_rng(0)
    frames = {f"s{s}": _mismatch_frame(list(level + spread * rng.standard_normal(K)),
                                       list(level + spread * rng.standard_normal(K))) for s in range(seeds)}
    return lemma2_mismatch(frames)


@pytest.mark.parametrize(("level", "spread", "outcome"), [
    (0.40, 0.02, "far apart"), (0.01, 0.002, "close"), (TV_SMALL, 0.02, "undecided"),
])
def test_mismatch_outcomes(level, spread, outcome) -> None:
    result = _mismatch(level, spread)
    assert result.outcome == outcome
    assert [c.chunk for c in result.chunks] == [1, 2, 3] and len(result.runs) == 5


def test_mismatch_is_not_testable_with_two_seeds_or_no_keys() -> None:
    assert _mismatch(0.4, 0.02, seeds=2).outcome == "not testable"
    assert lemma2_mismatch({"a": laid_out(pd.DataFrame({"step": [0]}), K)}).outcome == "not testable"
    seen = {_mismatch(0.4, 0.02).outcome, _mismatch(0.01, 0.002).outcome, _mismatch(TV_SMALL, 0.02).outcome,
            _mismatch(0.4, 0.02, seeds=2).outcome}
    assert seen == set(MISMATCH_OUTCOMES)


def _tracking_frame(seed: int, trained_from) -> pd.DataFrame:
    """A run's records as the ``lemma2`` probe writes them, with log p̃^T = ``trained_from(log p̃^0, targets)``."""
    g = torch.Generator().manual_seed(seed)
    untrained = torch.log_softmax(0.3 * torch.randn(K + 1, N, V, generator=g, dtype=torch.float64), -1)
    labels = torch.randint(V, (N,), generator=g)
    trained = trained_from(untrained, labels)
    first = {"step": 0, **lemma2_metrics(untrained, labels, ALPHA, EPS, INITIAL),
             **lemma2_metrics(untrained, labels, ALPHA, EPS)}
    last = {"step": 9, **lemma2_metrics(trained, labels, ALPHA, EPS),
            **null_metrics(untrained, trained, labels, ALPHA, EPS)}
    return laid_out(pd.DataFrame([first, last]), K)


def _flattened(tau: float):
    def make(untrained, labels):
        return torch.stack([untrained[0], *(temper(untrained[k], tau) for k in range(1, K + 1))])
    return make


def _halfway_to_g(untrained, labels):
    """Each p_k moved half-way to g_k built from the untrained p_{k-1} (label information)."""
    p_y = label_smooth(one_hot(labels, V, torch.float64), EPS)
    rows = [untrained[0]]
    for k in range(1, K + 1):
        g_k = geometric_target(p_y, untrained[k - 1].exp(), ALPHA)[0].exp()
        rows.append((0.5 * untrained[k].exp() + 0.5 * g_k).log())
    return torch.stack(rows)


@pytest.mark.parametrize("tau", [1.1, 1.3, 3.0])
def test_tracking_of_flattened_readouts_equals_its_null_and_is_descriptive(tau) -> None:
    frames = {f"s{s}": _tracking_frame(s, _flattened(tau)) for s in range(5)}
    result = lemma2_tracking(frames, "forward")
    assert result.outcome == "descriptive only"
    for run in result.runs:
        assert run.temperatures == pytest.approx([tau] * K, rel=1e-5)
        assert abs(run.excess) < 1e-5
    assert result.difference.high < 0  # r(m) - r(g) alone would read "toward g_k"
    assert load_result(result.to_json()) == result


def test_tracking_of_label_information_differs_from_its_null() -> None:
    frames = {f"s{s}": _tracking_frame(s, _halfway_to_g) for s in range(5)}
    result = lemma2_tracking(frames, "reverse")
    assert result.outcome == "descriptive only"
    assert abs(result.excess.estimate) > 0.01
    # moved half-way straight to g_k, yet r(m) - r(g) > 0: the statistic cannot name the target
    assert result.difference.low > 0


def test_tracking_without_the_null_is_not_measured() -> None:
    frame = _tracking_frame(0, _flattened(1.3))
    frame = frame.drop(columns=[c for c in frame.columns if "/null_" in c])
    result = lemma2_tracking({"s0": frame}, "forward")
    assert result.outcome == "not measured" and result.reasons == ["s0: no_null"]
    assert {result.outcome, "descriptive only"} == set(TRACKING_OUTCOMES)
