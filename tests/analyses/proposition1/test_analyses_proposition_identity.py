"""The Proposition 1 row is analytic: the same outcome whatever the runs (``analyses.proposition1.identity``)."""

from __future__ import annotations

from analyses.descriptive.proposition_pairs import proposition_group
from analyses.proposition1.identity import (
    IDENTITY_OUTCOMES,
    Proposition1Identity,
    proposition1_identity,
)
from analyses.registry import ClaimInputs, claim
from analyses.results import load_result
from tests.analyses.descriptive.test_analyses_proposition import _frame


def test_the_row_is_analytic_and_fooled_by_no_run():
    found = proposition1_identity()
    assert found.outcome == IDENTITY_OUTCOMES[0]
    assert found.forward.holds and found.reverse.holds and found.transcription.false
    assert found.forward.at_optimum > 0 and found.reverse.at_optimum > 0  # exact optima (delta_k = 0) included
    row = claim("proposition1")
    verdict = row.decide(ClaimInputs({"proposition1_identity": found}, {}))
    assert verdict.outcome == IDENTITY_OUTCOMES[0] and verdict.evidence.p_value is None  # no statistical decision
    assert row.outcomes[verdict.outcome].tone == "mixed"
    # a run whose rising pairs all exceed the unscaled gap changes nothing: the row reads no run
    rising = proposition_group([(f"s{i}", _frame(i, d_ce=0.1, gap=0.01)) for i in range(3)])
    assert rising.pairs.n_violations > 0
    again = row.decide(ClaimInputs({"proposition1_identity": found, "proposition": rising}, {}))
    assert again.outcome == verdict.outcome
    assert row.decide(ClaimInputs({}, {"proposition1_identity": "x"})).outcome == "not measured"


def test_the_result_round_trips_and_is_deterministic():
    found = proposition1_identity(seed=3)
    assert isinstance(load_result(found.to_json()), Proposition1Identity)
    assert load_result(found.to_json()) == found == proposition1_identity(seed=3)
