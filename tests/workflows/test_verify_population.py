"""``zerolock verify`` trains each group's seeds as one population: the same runs, the same verdicts.

A tiny suite (embedded model, 5 steps, 3 seeds per primary group, every probe of the suite on,
η_0 fixed) is trained twice: as populations (the default) and run by run (``population=False``,
``--no-population``). Every member's ``metrics.jsonl`` must equal its separate run's to 1e-5
relative (timings aside), every verdict row must read the same outcome, and ``--reanalyze`` of
both directories (the analysis reading the member directories as single runs) must give the same
outcomes again.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from zerolock_theory.app.workflows.suite_spec import QUICK
from zerolock_theory.app.workflows.verify import reanalyze, verify
from zerolock_theory.jsonio import read_records

pytestmark = pytest.mark.slow  # two tiny suites and four analyses: minutes on one core

TINY = dataclasses.replace(QUICK, steps=5, seeds=(0, 1, 2), lr=0.1, probe_positions=16, scaled_steps=5,
                           readout_records=5, eval_every=5, fixed_point_chunks=(), memory_stages=(), tune=None)
TIMING = ("time", "per_s", "seconds")


def _close(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= 1e-5 * max(abs(a), abs(b), 1e-8)
    return a == b


def _outcomes(out) -> dict[str, str]:
    analysis = json.loads((out / "analysis" / "analysis.json").read_text())
    return {row["claim"]: row["outcome"] for row in analysis["claims"]}


@pytest.fixture(scope="module")
def suites(tmp_path_factory):
    root = tmp_path_factory.mktemp("verify-population")
    logs: dict[str, list[str]] = {"population": [], "separate": []}
    for name in logs:
        verify(TINY, root / name, device="cpu", jobs=1, population=name == "population", log=logs[name].append)
    return root, logs


def test_the_log_says_how_each_group_is_trained(suites):
    _, logs = suites
    lines = [x for x in logs["population"] if "population of" in x]
    assert len(lines) == 3 and all("one population of 3 seeds" in x for x in lines)
    assert {x.split(": ", 1)[1].split("_")[0] for x in lines} == {"zerolock-forward", "zerolock-reverse", "backprop"}
    assert any("separate runs (populations switched off): 9 runs" in x for x in logs["separate"])
    assert not any("population of" in x for x in logs["separate"])


def test_members_equal_separate_runs_to_1e5(suites):
    root, _ = suites
    runs = sorted(p.name for p in (root / "separate" / "runs").iterdir() if (p / "metrics.jsonl").is_file())
    assert len(runs) == 9
    assert sorted(p.name for p in (root / "population" / "runs").iterdir()
                  if (p / "metrics.jsonl").is_file()) == runs
    for name in runs:
        pop = read_records(root / "population" / "runs" / name / "metrics.jsonl")
        sep = read_records(root / "separate" / "runs" / name / "metrics.jsonl")
        assert [r["step"] for r in pop] == [r["step"] for r in sep] == list(range(TINY.steps))
        for a, b in zip(pop, sep, strict=True):
            assert set(a) == set(b), name
            for key in a:
                if not any(t in key for t in TIMING):
                    assert _close(a[key], b[key]), (name, a["step"], key, a[key], b[key])


def test_same_outcomes_and_reanalysis_reads_members_as_single_runs(suites):
    root, _ = suites
    first = {name: _outcomes(root / name) for name in ("population", "separate")}
    assert first["population"] == first["separate"]
    for name in ("population", "separate"):
        reanalyze(root / name, log=lambda *_: None)
        assert _outcomes(root / name) == first[name]
