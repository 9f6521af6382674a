"""analyses.results: JSON round trips, the registry, verdict values."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pytest

from analyses.convergence import RateFit
from analyses.results import Interval, Result, Verdict, load_result, register, registered_kinds


def _fit(**over) -> RateFit:
    base = dict(
        label="g",
        column="c",
        n_series=1,
        n_points=10,
        t0=10,
        t_max=100,
        block_length=5,
        n_boot=10,
        beta=Interval(0.5, 0.4, 0.6),
        log_c=1.0,
        gamma=Interval(math.inf, -math.inf, math.nan),
        gamma_log_c=0.0,
        per_series_beta=[0.5],
        holds=True,
        n_missing=0,
        curve_t=[1.0, 2.0],
        curve_a=[1.0, 0.7],
    )
    base.update(over)
    return RateFit(**base)


def test_round_trip_with_non_finite_values_is_strict_json():
    fit = _fit()
    text = fit.to_json()
    assert "Infinity" not in text and "NaN" not in text and '"nan"' not in text and "null" in text
    json.loads(text)  # strict JSON
    back = RateFit.from_json(text)
    assert back.gamma.estimate == math.inf and back.gamma.low == -math.inf
    assert math.isnan(back.gamma.high)
    assert back.beta == fit.beta and back.curve_a == fit.curve_a


def test_load_result_dispatches_on_kind(tmp_path):
    path = _fit().save(tmp_path / "sub" / "fit.json")
    loaded = load_result(path)
    assert isinstance(loaded, RateFit) and loaded.label == "g"
    assert isinstance(Result.from_json(path.read_text()), RateFit)
    import analyses.suite  # noqa: F401  (registers every result kind)

    assert {"rate_fit", "rate_set", "suite", "toy_check", "step_scaling", "proposition"} <= set(registered_kinds())


def test_unknown_kind_and_kind_mismatch():
    with pytest.raises(ValueError, match="unknown result kind"):
        load_result('{"kind": "nope"}')
    with pytest.raises(ValueError, match="expected kind"):
        RateFit.from_dict({"kind": "toy_check"})


def test_register_requires_a_kind():
    with pytest.raises(TypeError, match="kind"):

        @register
        @dataclass(frozen=True)
        class NoKind(Result):
            x: int = 0


def test_verdict_values_are_checked():
    Verdict("c", "supported", "f", "r")
    with pytest.raises(ValueError, match="verdict must be one of"):
        Verdict("c", "true", "f", "r")


def test_interval_contains_and_str():
    iv = Interval(0.5, 0.4, 0.6)
    assert iv.contains(0.4) and iv.contains(0.6) and not iv.contains(0.61)
    assert str(iv) == "0.5 [0.4, 0.6]"
