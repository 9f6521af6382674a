"""A result name is one result: a claim's analysis name taken by a built-in analysis or by another
claim's analysis is refused, an analysis shared by rows runs once, and a rule reading a result of
another type is an error, not missing data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest
from synthetic_runs import write_run

import analyses.registry as registry
from analyses.assumption5.scaling import StepScaling
from analyses.registry import (
    BUILTIN_PREFIXES,
    BUILTIN_RESULTS,
    Claim,
    ClaimInputs,
    Outcome,
    SuiteInputs,
    claim,
    claims,
    register,
    unregister,
)
from analyses.results import Result
from analyses.results import register as register_result
from analyses.suite import analyze_runs
from analyses.verdict import Evidence, Verdict

CALLS: list[int] = []


@register_result
@dataclass(frozen=True)
class Calls(Result):
    """How many times the shared analysis ran before this call."""

    kind: ClassVar[str] = "test_calls"
    before: int


def _shared(inputs: SuiteInputs) -> Calls:
    CALLS.append(1)
    return Calls(len(CALLS) - 1)


def _row(key: str, analyses: dict) -> Claim:
    return Claim(key=key, title=key, paper="-", question="-", primary="-",
                 outcomes={"not measured": Outcome("no data", "none")},
                 rule=lambda inputs: Verdict(key, "not measured", Evidence("skipped")),
                 measured=lambda ev: "-", reason=lambda ev: "-", analyses=analyses)


@pytest.fixture
def rows():
    """Register test rows by key; unregister them afterwards."""
    keys: list[str] = []

    def add(key: str, analyses: dict) -> Claim:
        keys.append(key)
        return register(_row(key, analyses))

    yield add
    for key in keys:
        unregister(key)


def test_a_name_of_another_claims_analysis_is_refused_naming_both(rows):
    with pytest.raises(ValueError, match="'test_thief'.*'rate_reverse'.*'theorem1_rate_reverse'"):
        rows("test_thief", {"rate_reverse": _shared})
    assert "test_thief" not in {c.key for c in claims()}


@pytest.mark.parametrize("name", ["depth", "scaling_paper", "control_logistic", "versus_tuned", "fixed_point_chunk2"])
def test_a_built_in_name_is_refused(rows, name):
    with pytest.raises(ValueError, match=f"'test_thief'.*'{name}'.*built-in"):
        rows("test_thief", {name: _shared})


def test_the_suite_refuses_a_built_in_name_the_tuple_misses(rows, tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "BUILTIN_RESULTS", tuple(n for n in BUILTIN_RESULTS if n != "depth"))
    rows("test_thief", {"depth": _shared})
    runs = [write_run(tmp_path, f"z{s}", seed=s, steps=20) for s in range(2)]
    with pytest.raises(ValueError, match="'test_thief'.*'depth'.*built-in"):
        analyze_runs(runs, n_boot=10)


def test_rows_share_one_analysis_run_once_and_the_suite_writes_only_reserved_names(rows, tmp_path):
    assert claim("theorem1_rate_reverse").analyses["rate_controls"] is \
        claim("theorem1_rate_forward").analyses["rate_controls"]
    rows("test_a", {"test_shared": _shared})
    rows("test_b", {"test_shared": _shared})
    CALLS.clear()
    suite = analyze_runs([write_run(tmp_path, f"z{s}", seed=s, steps=20) for s in range(2)], n_boot=10)
    assert suite.get("test_shared") == Calls(0) and len(CALLS) == 1
    owned = {name for row in claims() for name in row.analyses}
    for name in (*suite.results, *suite.skipped):
        assert name in owned or name in BUILTIN_RESULTS or name.startswith(BUILTIN_PREFIXES), \
            f"{name!r}: written by analyses.suite but not in BUILTIN_RESULTS"


def test_a_result_of_another_type_is_an_error_not_missing_data():
    inputs = ClaimInputs({"test_shared": Calls(0)}, {"skipped_one": "why"})
    assert inputs.get("test_shared", Calls) == Calls(0)
    assert inputs.get("skipped_one", Calls) is None and inputs.get("absent", Calls) is None
    with pytest.raises(TypeError, match="'test_shared' is a Calls, not a StepScaling"):
        inputs.get("test_shared", StepScaling)
