"""The claim registry: a row registered from a test module alone reaches the verdict table, the
report and the JSON; every registered claim has its wording and its calibration tests; runs of
different tokenizers are refused."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from synthetic_runs import write_run

import zerolock_theory.app.cli as cli
from analyses.registry import (
    TONES,
    Claim,
    ClaimInputs,
    Outcome,
    SuiteInputs,
    claims,
    register,
    unregister,
)
from analyses.results import Result, declare
from analyses.results import register as register_result
from analyses.suite import analyze_runs, load_suite
from analyses.verdict import Evidence, Verdict
from reports.page import write_report

ROOT = Path(__file__).resolve().parents[2]


@register_result
@dataclass(frozen=True)
class RunCount(Result):
    """A new analysis of the test's claim: how many runs it saw."""

    kind: ClassVar[str] = "test_run_count"
    runs: int


COUNT = declare("test_run_count", RunCount)


def _count(inputs: SuiteInputs) -> RunCount:
    return RunCount(len(inputs.table))


def _rule(inputs: ClaimInputs) -> Verdict:
    found = inputs.get(COUNT)
    if found is None:
        return Verdict("test_many_runs", "not measured", Evidence("skipped"))
    return Verdict("test_many_runs", "many" if found.runs >= 2 else "few", Evidence(f"counted {found.runs}"))


NEW = Claim(
    key="test_many_runs", title="Test row: at least two runs", paper="A quoted statement.",
    question="Were at least two runs analysed?", primary="every run",
    outcomes={"many": Outcome("two or more runs", "holds"), "few": Outcome("one run", "fails"),
              "not measured": Outcome("no count", "none")},
    rule=_rule, measured=lambda ev: f"runs: {ev.reason.split()[-1]}", reason=lambda ev: ev.reason,
    analyses={COUNT: _count},
)


@pytest.fixture
def new_claim():
    register(NEW)
    yield NEW
    unregister(NEW.key)


def test_a_claim_registered_from_a_test_reaches_the_table_the_report_and_the_json(new_claim, tmp_path):
    runs = [write_run(tmp_path / "runs", f"z{s}", seed=s, steps=40) for s in range(2)]
    suite = analyze_runs(runs, n_boot=10)
    row = suite.claims[-1]
    assert (row.claim, row.outcome) == ("test_many_runs", "many") and suite.get(COUNT) == RunCount(2)
    index = json.loads(suite.save(tmp_path / "analysis").read_text())
    assert index["claims"][-1]["claim"] == "test_many_runs" and index["results"]["test_run_count"]
    assert load_suite(tmp_path / "analysis").to_json() == suite.to_json()  # NaN != NaN: compare the JSON
    files = write_report(suite, tmp_path / "report")
    page = files.html.read_text(encoding="utf-8")
    assert "Test row: at least two runs" in page and 'href="#claim-test_many_runs"' in page and "runs: 2" in page
    assert "| Test row: at least two runs | many | runs: 2 |" in (tmp_path / "report" / "verdicts.md").read_text()
    assert "Test row: at least two runs" in files.markdown.read_text(encoding="utf-8")


def test_the_rows_are_in_registration_order_and_each_outcome_has_wording():
    keys = [c.key for c in claims()]
    assert len(keys) == len(set(keys)) and keys[0] == "lemma2_stated"
    for row in claims():
        assert row.title and row.paper and row.question and row.primary, row.key
        assert row.outcomes and all(o.meaning and o.tone in TONES for o in row.outcomes.values()), row.key
        assert "not measured" in row.outcomes, f"{row.key}: an analysis can always be skipped"


def _test_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def test_every_claim_names_calibration_or_control_tests_that_exist():
    for row in claims():
        assert row.tests, f"{row.key}: no calibration or control test"
        for node in row.tests:
            path, _, name = node.partition("::")
            assert (ROOT / path).is_file(), f"{row.key}: {path} does not exist"
            assert name in _test_functions(ROOT / path), f"{row.key}: {node} does not exist"


def test_an_outcome_outside_the_closed_set_is_refused(new_claim):
    odd = Claim(**{**NEW.__dict__, "key": "test_odd", "rule": lambda i: Verdict("test_odd", "maybe", Evidence("x"))})
    with pytest.raises(ValueError, match="not one of"):
        odd.decide(ClaimInputs({}, {}))
    with pytest.raises(ValueError, match="already registered"):
        register(Claim(**{**NEW.__dict__, "title": "another"}))


def _tokenizer(run: Path, digest: str) -> None:
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["tokenizer"] = {"name": "tok", "size": 64, "sha256": digest}
    (run / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("command", ["analyze", "report"])
def test_runs_of_different_tokenizers_exit_2_with_one_line(tmp_path, capsys, command):
    a, b = (write_run(tmp_path / "runs", f"z{s}", seed=s, steps=20) for s in range(2))
    _tokenizer(a, "a" * 64)
    _tokenizer(b, "b" * 64)
    code = cli.main([command, str(a), str(b), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and re.search(r"runs differ in tokenizer: .*aaaaaaaaaaaa.*bbbbbbbbbbbb", err[0])
    assert not (tmp_path / "out").exists()


def test_the_same_tokenizer_is_comparable(tmp_path):
    runs = [write_run(tmp_path / "runs", f"z{s}", seed=s, steps=20) for s in range(2)]
    for run in runs:
        _tokenizer(run, "c" * 64)
    assert len(analyze_runs(runs, n_boot=10).runs) == 2
