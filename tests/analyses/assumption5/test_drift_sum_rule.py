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
def test_a_rise_over_the_whole_run_is_a_late_rise_not_a_warm_up(tau):
    """a_t = 0.5·η_t²·(1 − e^(−(t+1)/τ))² rises over the whole run: |a_t| peaks in the second half,
    so nothing is left out as a warm-up and no slope is fitted; the words say the coefficient rises at
    the end (within or not depends on whether it keeps rising)."""
    warm = (1.0 - np.exp(-(np.arange(STEPS) + 1.0) / tau)) ** 2
    found = _group(lambda eta: 0.5 * eta**2 * warm)
    assert sum(s.late_rise for s in found.seeds) >= 4 and all(math.isnan(s.slope) for s in found.seeds)
    assert (found.outcome, found.reason) == ("not distinguished", "late_rise")


def _ramp(t: np.ndarray) -> np.ndarray:
    start = 0.8 * t.size
    return 1.0 + 3.0 * np.clip((t - start) / (t.size - 1 - start), 0.0, 1.0)


@pytest.mark.parametrize(("name", "make"), [
    ("0.5 eta^2 x (1 to 4) over the last 20%", lambda eta, t: 0.5 * eta**2 * _ramp(t)),
    ("0.5 eta^2, then 0.5 eta over the last 20%", lambda eta, t: np.where(t >= 0.8 * t.size, 0.5 * eta, 0.5 * eta**2)),
])
def test_a_rise_at_the_end_reads_not_distinguished(name, make):
    """A ramp of a_t/η_t² from 1 to 4 (within) and a switch to first order (not within) over the last
    20%: neither eats the run as a warm-up nor is fitted as a slope below 2; both read not
    distinguished (late_rise), and the blocks before the rise give s = 2 (where |a_t| itself peaks
    late, no slope)."""
    t = np.arange(STEPS, dtype=float)
    found = _group(lambda eta: make(eta, t))
    assert all(s.late_rise and not s.warm_eats for s in found.seeds)
    assert all(math.isnan(s.before_rise) or abs(s.before_rise - 2.0) < 1e-6 for s in found.seeds)
    assert (found.outcome, found.reason) == ("not distinguished", "late_rise")


def test_a_steep_power_law_is_no_late_rise():
    """a_t = 0.5 (s = 0): |a_t|/η_t² rises by x1.4 per block, on its own line: not within, no late rise."""
    found = _group(lambda eta: np.full_like(eta, 0.5))
    assert not any(s.late_rise for s in found.seeds)
    assert (found.outcome, found.reason) == (ds.NOT_WITHIN, "slope_below")


@pytest.mark.parametrize("tau", [3.0, 10.0])
def test_a_fading_rise_reads_not_distinguished(tau):
    """a_t = 0.5·η_t²·t/(t + τ) (within: never above 0.5·η_t²): the fitted slope lies below 2 (about
    1.6 at τ = 3, 1.1 at τ = 10), but its local value climbs along the window by more than ``CLIMB``;
    a power law keeps it (p = 1 stays not within)."""
    t = np.arange(STEPS, dtype=float)
    found = _group(lambda eta: 0.5 * eta**2 * t / (t + tau))
    assert found.slope.high < 2.0 and all(s.climb > ds.CLIMB for s in found.seeds)
    assert (found.outcome, found.reason) == ("not distinguished", "slope_climbs")
    power = _group(lambda eta: 0.5 * eta)
    assert all(abs(s.climb) < 0.05 for s in power.seeds) and power.outcome == ds.NOT_WITHIN


def _drift(eta: np.ndarray, a: np.ndarray, seed: int) -> np.ndarray:
    """drift(c) = c·a_t + c²·b_t at the given η_t, with float-sized noise."""
    rng = np.random.default_rng(seed)
    b = eta**2 * (0.1 + rng.normal(size=eta.size))
    drift = C[None, :] * a[:, None] + C[None, :] ** 2 * b[:, None]
    return drift + 1e-12 * np.abs(drift[:, :1]) * rng.normal(size=drift.shape)


def _scheduled(eta: np.ndarray, a: np.ndarray, seed: int) -> ds.SeedDriftSum:
    return ds.seed_drift_sum(f"s{seed}", C, eta, _drift(eta, a, seed), steps=np.arange(eta.size) * 32)


@pytest.mark.parametrize(("p", "outcome", "reason"), [
    (2.0, ds.WITHIN, "slope_above"),
    (1.5, ds.WITHIN, "slope_above"),
    (1.0, "not distinguished", ("slope_at_threshold", "slope_below_short")),
    (0.5, ds.NOT_WITHIN, "slope_below"),
])
def test_a_faster_schedule_moves_the_threshold_to_one_over_q(p, outcome, reason):
    """η_t = 0.1/(t+1) (q = 1): Σ η_t² converges, and Σ 0.5·η_t^p stays bounded iff p > 1/q = 1.
    p = 1.5 is within (the 1/√t threshold 2 would read it not within); p = 1 sits on the threshold,
    which is itself not within (log T): its slope (0.98 from the block means) is either held or
    below it by less than the run resolves, not distinguished either way."""
    eta = 0.1 / (np.arange(STEPS) * 32 + 1.0)
    found = ds.drift_sum([_scheduled(eta, 0.5 * eta**p, i) for i in range(5)])
    assert abs(found.schedule - 1.0) < 1e-6 and abs(found.threshold - 1.0) < 1e-6
    assert found.outcome == outcome and found.reason in ((reason,) if isinstance(reason, str) else reason)


@pytest.mark.parametrize(("q", "threshold", "strict"), [
    (None, 2.0, False), (0.0, 2.0, False), (0.3, 2.0, False), (0.5, 2.0, False), (0.54, 2.0, False),
    (0.75, 4.0 / 3.0, True), (1.0, 1.0, True), (2.0, 0.5, True),
])
def test_needed_slope_by_schedule(q, threshold, strict):
    """q ≤ ½ (and ½ ± ``SCHEDULE_TOL``): Σ η_t² grows and needs s ≥ 2; q > ½: Σ η_t^s converges iff s > 1/q."""
    got, is_strict = ds.needed_slope(q)
    assert math.isclose(got, threshold) and is_strict == strict


def test_constant_then_sqrt_schedule_keeps_the_threshold_two():
    """η_t = 0.05 for 10 steps, then ∝ 1/√t: the measured q is at most ½, so the threshold stays 2."""
    t = np.arange(STEPS, dtype=float)
    eta = 0.05 * np.minimum(1.0, np.sqrt(10.0 / (t + 1.0)))
    for p, outcome in ((2.0, ds.WITHIN), (1.0, ds.NOT_WITHIN)):
        seeds = [ds.seed_drift_sum(f"s{i}", C, eta, _drift(eta, 0.5 * eta**p, i), steps=t) for i in range(5)]
        found = ds.drift_sum(seeds)
        assert found.schedule <= 0.5 + ds.SCHEDULE_TOL and found.threshold == 2.0 and found.outcome == outcome


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
