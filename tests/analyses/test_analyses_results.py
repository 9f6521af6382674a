"""analyses.results: JSON round trips, the registry, verdict values."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace

import pytest

from analyses.results import Interval, Result, load_result, register, registered_kinds
from analyses.theorem1.convergence import BoundTest, SeedFit
from analyses.verdict import Evidence, Verdict


def _fit(**over) -> BoundTest:
    base = dict(
        label="g",
        column="c",
        verdict="consistent",
        reason="not_growing",
        horizon=1000,
        min_horizon=500,
        seeds=3,
        slope=Interval(-0.1, -0.3, 0.1),
        beta=Interval(math.inf, -math.inf, math.nan),
        fit_on="last half",
        per_seed=[SeedFit("s0", 1000, math.nan, 0.5, 500, 100, [1.0, 2.0], [1.0, 0.7])],
        excluded=[],
    )
    base.update(over)
    return BoundTest(**base)


def test_round_trip_with_non_finite_values_is_strict_json():
    fit = _fit()
    text = fit.to_json()
    assert "Infinity" not in text and "NaN" not in text and '"nan"' not in text and "null" in text
    json.loads(text)  # strict JSON
    back = BoundTest.from_json(text)
    assert back.beta.estimate == math.inf and back.beta.low == -math.inf
    assert math.isnan(back.beta.high) and math.isnan(back.per_seed[0].b)
    assert back.slope == fit.slope and back.per_seed[0].curve_b == [1.0, 0.7]


def test_load_result_dispatches_on_kind(tmp_path):
    path = _fit().save(tmp_path / "sub" / "fit.json")
    loaded = load_result(path)
    assert isinstance(loaded, BoundTest) and loaded.label == "g"
    assert isinstance(Result.from_json(path.read_text()), BoundTest)
    import analyses.suite  # noqa: F401  (registers every result kind)

    assert {"bound_test", "bound_set", "diverged_runs", "suite", "toy_check", "step_scaling", "proposition"} <= set(
        registered_kinds()
    )


def test_unknown_kind_and_kind_mismatch():
    with pytest.raises(ValueError, match="unknown result kind"):
        load_result('{"kind": "nope"}')
    with pytest.raises(ValueError, match="expected kind"):
        BoundTest.from_dict({"kind": "toy_check"})


def test_register_requires_a_kind():
    with pytest.raises(TypeError, match="kind"):

        @register
        @dataclass(frozen=True)
        class NoKind(Result):
            x: int = 0


def test_verdict_outcomes_are_checked_against_their_claim():
    from analyses.registry import ClaimInputs, claim

    toy = claim("lemma2_stated")
    assert toy.decide(ClaimInputs({}, {})).outcome == "not measured"
    odd = replace(toy, rule=lambda inputs: Verdict(toy.key, "true", Evidence("skipped")))
    with pytest.raises(ValueError, match="is not one of"):
        odd.decide(ClaimInputs({}, {}))
    other = replace(toy, rule=lambda inputs: Verdict("another", "refuted", Evidence("skipped")))
    with pytest.raises(ValueError, match="returned a verdict for"):
        other.decide(ClaimInputs({}, {}))


def test_interval_contains_and_str():
    iv = Interval(0.5, 0.4, 0.6)
    assert iv.contains(0.4) and iv.contains(0.6) and not iv.contains(0.61)
    assert str(iv) == "0.5 [0.4, 0.6]"
