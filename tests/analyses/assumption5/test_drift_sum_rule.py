"""Theorem 1 (b)'s rule along the run (``analyses.assumption5.drift_sum``) on exact constructions:
the switch-on, the data-driven warm-up, the trimmed block mean and the run's resolution, each with
its answer known by construction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analyses.assumption5 import drift_sum as ds
from analyses.assumption5.families import FACTORS

C = np.asarray(FACTORS)
STEPS = 31


def _seed(a: np.ndarray, seed: int, steps: int = STEPS) -> ds.SeedDriftSum:
    """drift(c) = c·a_t + c²·b_t at η_t = 0.1/√(t+1), with float-sized noise."""
    rng = np.random.default_rng(seed)
    eta = 0.1 / np.sqrt(np.arange(steps) + 1.0)
    b = eta**2 * (0.1 + rng.normal(size=steps))
    drift = C[None, :] * a[:, None] + C[None, :] ** 2 * b[:, None]
    drift = drift + 1e-12 * np.abs(drift[:, :1]) * rng.normal(size=drift.shape)
    return ds.seed_drift_sum(f"s{seed}", C, eta, drift)


def _eta(steps: int = STEPS) -> np.ndarray:
    return 0.1 / np.sqrt(np.arange(steps) + 1.0)


def _group(make, seeds: int = 5) -> ds.DriftSum:
    return ds.drift_sum([_seed(make(_eta()), i) for i in range(seeds)])


def test_exact_eta_squared_sits_at_two_and_reads_within():
    found = _group(lambda eta: 0.5 * eta**2)
    assert found.outcome == ds.WITHIN and found.reason == "slope_holds"
    assert abs(found.slope.estimate - 2.0) < 1e-6
    assert found.growth is not None and found.growth < 1.001


@pytest.mark.parametrize(("p", "outcome", "reason"), [
    (1.0, ds.NOT_WITHIN, "slope_below"),
    (1.5, ds.NOT_WITHIN, "slope_below"),
    (1.9, "not distinguished", "slope_below_short"),
    (2.5, ds.WITHIN, "slope_above"),
])
def test_the_threshold_is_two_and_the_run_states_its_resolution(p, outcome, reason):
    """a_t = 0.5·η_t^p: s ≈ p; below 2 the bend (η_first/η_last)^(2 − s) decides between
    not within and "too short to tell" (p = 1.9 bends |a_t|/η_t² by about 5% over 31 steps)."""
    found = _group(lambda eta: 0.5 * eta**p)
    assert abs(found.slope.estimate - p) < 0.03  # block means: exact at p = 2 only
    assert (found.outcome, found.reason) == (outcome, reason)
    if p < 2:
        assert math.isclose(found.growth, found.eta_ratio ** (2 - found.slope.high), rel_tol=1e-9)
        assert (found.growth >= ds.RUN_GROWTH) == (outcome == ds.NOT_WITHIN)


def test_late_switch_on_is_left_out_not_fitted_as_small_values():
    """a_t = 0 until T/2, then 0.5·η_t²: the zeros are the switch-on; s = 2 on the rest."""
    seed = _seed(np.where(np.arange(STEPS) >= STEPS / 2, 0.5 * _eta() ** 2, 0.0), 0)
    assert seed.n_warm >= 16 and abs(seed.slope - 2.0) < 1e-6
    assert _group(lambda eta: np.where(np.arange(STEPS) >= STEPS / 2, 0.5 * eta**2, 0.0)).outcome == ds.WITHIN


@pytest.mark.parametrize("tau", [30, 100])
def test_a_warm_up_that_eats_the_run_is_not_testable(tau):
    """a_t = 0.5·η_t²·(1 − e^(−(t+1)/τ))² rises over the whole run: no slope, and the words say why."""
    warm = (1.0 - np.exp(-(np.arange(STEPS) + 1.0) / tau)) ** 2
    found = _group(lambda eta: 0.5 * eta**2 * warm)
    assert all(s.warm_eats and math.isnan(s.slope) for s in found.seeds)
    assert (found.outcome, found.reason) == ("not testable", "warm_up")


def test_a_warm_up_that_settles_is_fitted_after_it():
    """A rise peaking near step 25 of a 200-step run, times 0.5·η_t^p: the fit starts where η_t has
    fallen by ``SETTLE`` from the peak block's end (beyond the one fixed block). p = 2 reads within;
    p = 1 is not told apart on the short window left (never within)."""
    steps = 200
    eta = _eta(steps)
    warm = (1.0 - np.exp(-(np.arange(steps) + 1.0) / 20.0)) ** 2
    for p, outcome, reason in ((2, ds.WITHIN, "slope_holds"), (1, "not distinguished", "slope_below_short")):
        seeds = [_seed(0.5 * eta**p * warm, i, steps) for i in range(5)]
        assert all(s.n_warm > steps // ds.BLOCKS and not s.warm_eats for s in seeds)
        found = ds.drift_sum(seeds)
        assert (found.outcome, found.reason) == (outcome, reason) and abs(found.slope.estimate - p) < 0.05


def test_one_outlier_per_block_does_not_move_the_slope():
    """a_t = 0.5·η_t² with one value ×100 in every fitted block: the trimmed mean drops it."""
    a = 0.5 * _eta() ** 2
    for i in (9, 15, 21, 27):
        a[i] *= 100.0
    seed = _seed(a, 0)
    assert abs(seed.slope - 2.0) < 1e-6


def test_all_zero_is_second_order_and_within():
    found = _group(lambda eta: np.zeros_like(eta))
    assert (found.outcome, found.reason) == (ds.WITHIN, "all_zero")


def test_the_row_says_when_the_run_is_too_short_to_tell():
    """p = 1.9: the row's reason names the bend and that the run cannot tell T^(1 - s/2) from log T."""
    from analyses.theorem1.claim_proof import ProofDrift, reason, short
    from analyses.verdict import Evidence

    found = _group(lambda eta: 0.5 * eta**1.9)
    ev = Evidence(found.reason, result=ProofDrift("paper", "g", None, None, found))
    text = reason(ev)
    assert "too short to tell T^(1 - s/2) from log T" in text and f"(x{found.growth:.3g} here)" in text
    assert short(ev).endswith("(within needs >= 2)")
