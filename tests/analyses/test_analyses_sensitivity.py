"""The sensitivity map: one cell per claim x setting, tones from the registry, flipped outcomes named."""

from __future__ import annotations

import pytest

from analyses.registry import claim, claims
from analyses.results import load_result
from analyses.sensitivity import OUTCOMES, SensitivityMap, SettingVerdicts, sensitivity_map
from analyses.verdict import Evidence, Verdict

FLIP = "theorem1_proof_reverse"
FIRST = "not within Σ η_t² along the run"
WITHIN = "within Σ η_t² along the run"


def _verdicts(**outcomes: str) -> list[Verdict]:
    """One verdict per registered claim: its last outcome word unless ``outcomes`` names one."""
    return [Verdict(c.key, outcomes.get(c.key, list(c.outcomes)[-1]), Evidence("x")) for c in claims()]


def _settings(flip: str | None = None) -> list[SettingVerdicts]:
    changed = {FLIP: FIRST} if flip else {}
    return [SettingVerdicts("default", "default", _verdicts(**{FLIP: WITHIN}), 6),
            SettingVerdicts("alpha-0.1", "method.alpha=0.1", _verdicts(**{FLIP: WITHIN}), 6),
            SettingVerdicts("p0-uniform", "method.p0=uniform", _verdicts(**({FLIP: WITHIN} | changed)), 6)]


def test_one_cell_per_claim_and_setting_with_the_registry_tone():
    found = sensitivity_map(_settings())
    keys = [c.key for c in claims()]
    assert found.claims == tuple(keys) and found.settings == ("default", "alpha-0.1", "p0-uniform")
    assert len(found.cells) == len(keys) * 3
    assert {(c.claim, c.setting) for c in found.cells} == {(k, s) for k in keys for s in found.settings}
    for cell in found.cells:
        assert cell.tone == claim(cell.claim).outcomes[cell.outcome].tone
    assert found.cell(FLIP, "alpha-0.1").tone == "holds"
    assert found.outcome == "stable" and found.sensitive == () and found.outcome in OUTCOMES


def test_a_flipped_outcome_is_named_and_nothing_else():
    found = sensitivity_map(_settings(flip="p0-uniform"))
    assert found.outcome == "sensitive" and found.sensitive == (FLIP,)
    assert found.outcomes_of(FLIP) == {"default": WITHIN, "alpha-0.1": WITHIN, "p0-uniform": FIRST}
    assert found.cell(FLIP, "p0-uniform").tone == "mixed"


def test_round_trips_through_json():
    found = sensitivity_map(_settings(flip="p0-uniform"))
    again = load_result(found.to_json())
    assert isinstance(again, SensitivityMap) and again == found


def test_restricted_to_given_claims():
    found = sensitivity_map(_settings(flip="p0-uniform"), keys=["proposition1", FLIP])
    assert found.claims == ("proposition1", FLIP) and len(found.cells) == 6 and found.sensitive == (FLIP,)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least one setting"):
        sensitivity_map([])
    twice = _settings()
    with pytest.raises(ValueError, match="must differ"):
        sensitivity_map([twice[0], twice[0]])
    short = SettingVerdicts("k2", "model.chunks=2", _verdicts()[1:])
    with pytest.raises(ValueError, match="0 verdicts for claim"):
        sensitivity_map([twice[0], short])
