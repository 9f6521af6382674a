"""Theorem 1 (b), the proof's drift budget: exact identities, each outcome, calibration."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analyses.io import RunDataError
from analyses.results import load_result
from analyses.theorem1.drift_budget import (
    DRIFT_OUTCOMES,
    MIN_HORIZON,
    S_THRESHOLD,
    DriftBudget,
    burn_in,
    drift_budget,
    drift_from_table,
    seed_drift,
)
from analyses.theorem1.families import DRIFT_EXPECTED, DRIFT_FAMILIES, drift_table

# Documented calibration (docs/THEOREM1.md, benchmarks/calibrate_rate.py --drift): 5 seeds,
# T = 1000, the true outcome's share is at least this (minus a tolerance for 30 repetitions).
DOCUMENTED_CORRECT = {
    "first order (a·eta_t)": 0.99,
    "first order, zero mean (eta_t·z)": 0.99,
    "intermediate (eta_t^1.5)": 0.70,
    "second order (b·eta_t^2)": 0.97,
    "second order, negative mean": 0.54,
}
TOLERANCE = 0.2

STEP = np.arange(1000)
ETA = 0.1 / np.sqrt(STEP + 1.0)


def test_exact_orders_give_the_reference_slopes():
    first = seed_drift(STEP, ETA, 0.3 * ETA)
    assert first.s == pytest.approx(first.s_first, abs=1e-12)
    assert 0.5 - 1 / np.log(1000) - 0.05 < first.s_first < 0.5
    second = seed_drift(STEP, ETA, 2.0 * ETA**2)
    assert second.s == pytest.approx(0.0, abs=1e-12)
    assert burn_in(1000) == 100 and burn_in(50) == 10


def test_share_and_signed_sum_are_the_defined_sums():
    drift = np.where(STEP % 2 == 0, ETA**2, -3 * ETA**2)
    fit = seed_drift(STEP, ETA, drift, -ETA)
    assert fit.d_plus == pytest.approx(float((ETA**2)[::2].sum()))
    assert fit.signed == pytest.approx(float(drift.sum()))
    assert fit.share == pytest.approx(float((ETA**2)[::2].sum() / ETA.sum()))
    assert fit.s1 == pytest.approx(float(ETA.sum())) and fit.s2 == pytest.approx(float((ETA**2).sum()))


@pytest.mark.parametrize("family", list(DRIFT_FAMILIES))
def test_each_family_gets_its_outcome_at_the_documented_rate(family):
    rng = np.random.default_rng(11)
    reps = 30
    hits = sum(drift_from_table(drift_table(family, 1000, 5, rng), "drift", "lr", seed_column="seed",
                                descent_column="descent").outcome == DRIFT_EXPECTED[family] for _ in range(reps))
    assert hits / reps >= DOCUMENTED_CORRECT[family] - TOLERANCE


def test_not_testable_cases():
    def run(p):
        return (STEP, ETA, ETA**p, None)
    short = drift_budget([(STEP[:MIN_HORIZON - 1], ETA[:MIN_HORIZON - 1], ETA[:MIN_HORIZON - 1], None)] * 3)
    assert (short.outcome, short.reason) == ("not testable", "short_horizon")
    two = drift_budget([run(1), run(1)])
    assert (two.outcome, two.reason) == ("not testable", "few_seeds") and two.first_order is None
    assert two.to_cli()["first_order"]["estimate"] == pytest.approx(two.per_seed[0].s)
    mixed = drift_budget([run(1), run(2), run(1), run(2)])  # seeds disagree: the interval straddles τ
    assert (mixed.outcome, mixed.reason) == ("not testable", "ambiguous")
    assert mixed.first_order.low < S_THRESHOLD < mixed.first_order.high


def test_no_positive_drift_is_second_order_and_round_trip():
    none = drift_budget([(STEP, ETA, -ETA, -ETA)] * 3)
    assert (none.outcome, none.reason) == ("within", "no_positive_drift")
    again = load_result(none.to_json())
    assert isinstance(again, DriftBudget) and again == none and again.outcome in DRIFT_OUTCOMES


def test_table_errors():
    frame = pd.DataFrame({"step": STEP, "lr": ETA, "drift": ETA})
    with pytest.raises(RunDataError, match="missing column 'nope'"):
        drift_from_table(frame, "nope", "lr")
    with pytest.raises(RunDataError, match="must be positive"):
        drift_from_table(frame.assign(lr=0.0), "drift", "lr")
    with pytest.raises(RunDataError, match="duplicated steps"):
        drift_from_table(pd.concat([frame, frame]), "drift", "lr")
    with pytest.raises(RunDataError, match="not finite"):
        drift_from_table(frame.assign(drift=np.inf), "drift", "lr")
