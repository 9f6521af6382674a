"""A result key is one result: a claim's analysis key taken by a built-in analysis or by another
claim's analysis is refused, an analysis shared by rows runs once, a rule reading a result of
another type is an error, not missing data, and no rule or report fetches a result by a string."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from synthetic_runs import write_run

from analyses.assumption5.scaling import SCALING, StepScaling
from analyses.descriptive.depth import DEPTH
from analyses.lemma2.fixed_point import FIXED_POINT
from analyses.registry import (
    Claim,
    ClaimInputs,
    Outcome,
    SuiteInputs,
    claim,
    claims,
    register,
    unregister,
)
from analyses.results import Result, ResultFamily, ResultKey, declare, declared_keys
from analyses.results import register as register_result
from analyses.suite import DIVERGED_RUNS, analyze_runs
from analyses.theorem1.bound_set import CONTROL_LOGISTIC
from analyses.theorem1.claim_rate import RATE
from analyses.theorem1.controls import RATE_CONTROLS
from analyses.verdict import Evidence, Verdict
from analyses.versus.tuned_versus import TUNED

CALLS: list[int] = []


@register_result
@dataclass(frozen=True)
class Calls(Result):
    """How many times the shared analysis ran before this call."""

    kind: ClassVar[str] = "test_calls"
    before: int


SHARED = declare("test_shared", Calls)


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
        rows("test_thief", {RATE["reverse"]: _shared})
    assert "test_thief" not in {c.key for c in claims()}


@pytest.mark.parametrize("key", [DEPTH, SCALING["paper"], CONTROL_LOGISTIC, TUNED, FIXED_POINT.of(2)])
def test_a_built_in_key_is_refused(rows, key):
    with pytest.raises(ValueError, match=f"'test_thief'.*'{key.name}'.*built-in"):
        rows("test_thief", {key: _shared})


def test_the_suite_refuses_a_built_in_name_under_a_key_not_marked_built_in(rows, tmp_path):
    rows("test_thief", {ResultKey(DEPTH.name, Calls): _shared})
    runs = [write_run(tmp_path, f"z{s}", seed=s, steps=20) for s in range(2)]
    with pytest.raises(ValueError, match="'test_thief'.*'depth'.*built-in"):
        analyze_runs(runs, n_boot=10)


def test_a_name_declared_with_another_type_is_refused():
    assert declare("test_shared", Calls) == SHARED
    with pytest.raises(TypeError, match="'test_shared' is already declared"):
        declare("test_shared", StepScaling)


def test_rows_share_one_analysis_run_once_and_the_suite_writes_only_declared_keys(rows, tmp_path):
    assert claim("theorem1_rate_reverse").analyses[RATE_CONTROLS] is \
        claim("theorem1_rate_forward").analyses[RATE_CONTROLS]
    rows("test_a", {SHARED: _shared})
    rows("test_b", {SHARED: _shared})
    CALLS.clear()
    suite = analyze_runs([write_run(tmp_path, f"z{s}", seed=s, steps=20) for s in range(2)], n_boot=10)
    assert suite.get(SHARED) == Calls(0) and len(CALLS) == 1
    owned = {key.name for row in claims() for key in row.analyses}
    builtin = {k.name for k in declared_keys() if isinstance(k, ResultKey) and k.builtin}
    families = [k for k in declared_keys() if isinstance(k, ResultFamily)]
    for name in (*suite.results, *suite.skipped):
        assert name in owned or name in builtin or name == DIVERGED_RUNS or any(f.owns(name) for f in families), \
            f"{name!r}: written by analyses.suite but declared by no key"


def test_a_result_of_another_type_is_an_error_not_missing_data():
    inputs = ClaimInputs({"test_shared": Calls(0)}, {"skipped_one": "why"})
    assert inputs.get(SHARED) == Calls(0)
    assert inputs.get(ResultKey("skipped_one", Calls)) is None and inputs.get(ResultKey("absent", Calls)) is None
    with pytest.raises(TypeError, match="'test_shared' is a Calls, not a StepScaling"):
        inputs.get(ResultKey("test_shared", StepScaling))


ROOT = Path(__file__).resolve().parents[2]


def string_fetches(source: str) -> list[int]:
    """Lines where ``get``, ``why`` or ``each`` is called with a string (literal or f-string) as its first argument."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("get", "why", "each") and node.args \
                and isinstance(node.args[0], (ast.JoinedStr, ast.Constant)) and isinstance(node.func.value, ast.Name) \
                and node.func.value.id in ("inputs", "suite", "default_suite", "loaded"):
            found.append(node.lineno)
    return found


def test_no_rule_or_report_fetches_a_result_by_a_string():
    sources = [p for d in ("analyses", "reports", "zerolock_theory") for p in sorted((ROOT / d).rglob("*.py"))]
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in sources for n in string_fetches(p.read_text())]
    assert hits == []
    assert string_fetches('inputs.get("depth")\nsuite.why(f"scaling_{o}")\nsuite.get(DEPTH)\n') == [1, 2]
