"""Theorem 1 (b) through the row's own rule: does the drift at the step actually taken sum within
O(Σ η_t²) along the run, as Lemma 4 needs?

Each group is 5 seeds × 31 scaled steps of ``analyses.assumption5.families`` read by
``analyses.assumption5.scaling.group_scaling`` and decided by the registered row
``theorem1_proof_reverse``. The design is the suite's: one scaled step every 32 steps of a
1000-step run (``EVERY``). The truths (``Family.budget``) were registered with the families
before the rule was tuned. The default suite runs ``REPS`` groups per family; the slow test 100 groups of the done-when families.
"""

from __future__ import annotations

import pytest

from analyses.assumption5.families import FAMILIES, frame
from analyses.assumption5.scaling import StepScaling, group_scaling
from analyses.registry import ClaimInputs, claim

SEEDS, STEPS, EVERY, REPS = 5, 31, 32, 20
WARM_REPS = 10
WITHIN, NOT_WITHIN = "within Σ η_t² along the run", "not within Σ η_t² along the run"
TRUTH_WORDS = {"within": WITHIN, "not within": NOT_WITHIN}


def _verdict(name: str, rep: int = 0, every: int = EVERY):
    runs = [(f"s{i}", frame(FAMILIES[name], 1000 * rep + i, steps=STEPS, every=every)) for i in range(SEEDS)]
    group = group_scaling(runs, "paper", group="synthetic", trained="reverse")
    return claim("theorem1_proof_reverse").decide(ClaimInputs({"scaling_paper": StepScaling("paper", [group], [])}, {}))


def _shares(name: str, reps: int, every: int = EVERY) -> dict[str, float]:
    counts: dict[str, int] = {}
    for rep in range(reps):
        outcome = _verdict(name, rep, every).outcome
        counts[outcome] = counts.get(outcome, 0) + 1
    return {k: v / reps for k, v in counts.items()}


def test_the_registered_truths():
    """The constructions the review named, with the answers known by construction."""
    truth = {name: f.budget for name, f in FAMILIES.items()}
    assert truth["a = 0.5 eta^2 > 0 (A5 holds along the run)"] == "within"
    assert truth["a = 0.5 eta (first order, shrinking like eta)"] == "not within"
    assert truth["second order, warm-up tau = 30"] == truth["second order, warm-up tau = 100"] == "within"
    assert truth["zero drift"] == "within"
    assert truth["a = eta sigma xi (zero-mean first order)"] == "not within"  # noise only
    assert truth["a = 0.5 (constant first order)"] == "not within"


def test_the_row_can_return_each_outcome_word():
    outcomes = claim("theorem1_proof_reverse").outcomes
    assert {WITHIN, NOT_WITHIN, "not distinguished", "not testable", "not measured"} <= set(outcomes)


def test_first_order_coefficient_shrinking_like_eta_squared_reads_within():
    """The referee's case: first order at every scaled iterate, O(η_t²) at the step taken."""
    assert _shares("a = 0.5 eta^2 > 0 (A5 holds along the run)", REPS).get(WITHIN, 0.0) >= 0.95


def test_first_order_coefficient_shrinking_like_eta_reads_not_within():
    assert _shares("a = 0.5 eta (first order, shrinking like eta)", REPS).get(NOT_WITHIN, 0.0) >= 0.95


@pytest.mark.parametrize("tau", [30, 100])
def test_second_order_drift_warming_up_reads_within(tau):
    """drift(c)/c -> 0 at every scaled step whatever the warm-up; the warm-up does not decide."""
    assert _shares(f"second order, warm-up tau = {tau}", WARM_REPS).get(WITHIN, 0.0) >= 0.95
    assert _shares(f"second order, warm-up tau = {tau}", 3, every=1).get(WITHIN, 0.0) == 1.0  # all of it warm-up


def test_the_row_measures_the_theorems_schedule_on_the_suites_design():
    """η_t = 0.1/√(t+1) at one scaled step every 32: the measured exponent is ½ and the threshold 2."""
    d = _verdict("a = 0.5 eta^2 > 0 (A5 holds along the run)").evidence.result.drift_sum
    assert abs(d.schedule - 0.5) < 1e-6 and d.threshold == 2.0


def test_zero_and_constant_drifts():
    assert _shares("zero drift", 5) == {WITHIN: 1.0}
    assert _shares("a = 0.5 (constant first order)", 5) == {NOT_WITHIN: 1.0}


def test_noise_only_never_reads_within():
    """Zero-mean first-order noise: |a_t| shrinks like η_t, its positive part sums like Σ η_t."""
    assert WITHIN not in _shares("a = eta sigma xi (zero-mean first order)", REPS)


DONE_WHEN = ("a = 0.5 eta^2 > 0 (A5 holds along the run)", "a = 0.5 eta (first order, shrinking like eta)",
             "second order, warm-up tau = 30", "second order, warm-up tau = 100", "zero drift")
"""The issue's done-when constructions: each reads its truth in >= 95% of 100 seeded groups."""


@pytest.mark.slow
@pytest.mark.parametrize("name", DONE_WHEN)
def test_the_done_when_families_at_100_groups(name):
    """The true outcome in >= 95% of 100 groups, and the opposite word in at most 5%."""
    shares = _shares(name, 100)
    truth = TRUTH_WORDS[FAMILIES[name].budget]
    other = NOT_WITHIN if truth == WITHIN else WITHIN
    assert shares.get(other, 0.0) <= 0.05
    assert shares.get(truth, 0.0) >= 0.95


def test_the_rows_point_apart_only_with_a_sentence():
    """a_t = 0.5·η_t² reads within here and no growth in Assumption 5: no sentence needed. A first-order
    coefficient that shrinks like η_t beside a bounded ρ_t needs one; a warm-up's growth beside within too."""
    from analyses.assumption5.drift_sum import agreement

    row = _verdict("a = 0.5 eta^2 > 0 (A5 holds along the run)")
    assert row.evidence.result.assumption5 == "no growth" and row.evidence.result.agreement == ""
    assert "both hold" in agreement("no growth", NOT_WITHIN)
    assert "warm-up" in agreement("grows", WITHIN)
    assert agreement("grows", NOT_WITHIN) == agreement("no growth", WITHIN) == ""
    warm = _verdict("second order, warm-up tau = 10", every=1)
    a5 = warm.evidence.result.assumption5
    assert warm.outcome == WITHIN and (a5 != "grows" or "warm-up" in warm.evidence.result.agreement)


def test_the_docs_state_the_rules_constants():
    """docs/THEOREM1.md names every constant of the rule with the code's value."""
    import re
    from pathlib import Path

    from analyses.assumption5 import drift_sum

    text = re.sub(r"\s+", " ", (Path(__file__).resolve().parents[3] / "docs" / "THEOREM1.md").read_text("utf-8"))
    for phrase in (f"| `NEEDED_SLOPE` | {drift_sum.NEEDED_SLOPE:g} |", f"| `SLOPE_MARGIN` | {drift_sum.SLOPE_MARGIN:g} |",
                   f"| `BLOCKS`, `BURN_IN` | {drift_sum.BLOCKS}, {drift_sum.BURN_IN} |",
                   f"| `MIN_BLOCKS` | {drift_sum.MIN_BLOCKS} |", f"| `CLIMB` | {drift_sum.CLIMB:g} |",
                   f"| `SCHEDULE`, `SCHEDULE_TOL` | {drift_sum.SCHEDULE:g}, {drift_sum.SCHEDULE_TOL:g} |",
                   f"2 − {drift_sum.SLOPE_MARGIN:g} = {drift_sum.NEEDED_SLOPE - drift_sum.SLOPE_MARGIN:g}"):
        assert phrase in text, phrase
