"""analyze_runs on synthetic run directories: grouping, verdicts, skipping, save/load."""

from __future__ import annotations

import json

import pytest
from synthetic_runs import write_run, write_suite

from analyses.claims import A5_IMPLEMENTED, A5_PAPER, CLAIMS, LEMMA2, RATE_LOCAL
from analyses.io import RunDataError
from analyses.results import VERDICTS, load_result
from analyses.suite import analyze_runs, load_suite


@pytest.fixture(scope="module")
def suite_dirs(tmp_path_factory):
    return write_suite(tmp_path_factory.mktemp("suite"), steps=100, seeds=(0, 1, 2))


@pytest.fixture(scope="module")
def suite(suite_dirs):
    return analyze_runs(suite_dirs, n_boot=100)


def test_every_analysis_runs_on_complete_data(suite):
    assert suite.skipped == {}
    assert set(suite.results) == {
        "toy_check",
        "minimizers",
        "tracking",
        "stability_paper",
        "stability_implemented",
        "scaling_paper",
        "scaling_implemented",
        "drift_paper",
        "drift_implemented",
        "convergence_local",
        "convergence_global",
        "convergence_backprop",
        "depth",
        "proposition",
        "outcome",
        "systems",
    }
    assert len(suite.runs) == 13


def test_verdict_rows_follow_the_synthetic_truth(suite):
    assert [v.claim for v in suite.claims] == list(CLAIMS)
    got = {v.claim: v.verdict for v in suite.claims}
    assert got == dict(
        zip(
            CLAIMS,
            ["refuted", "refuted", "refuted", "refuted", "supported", "supported", "supported"],
            strict=True,
        )
    )
    assert all(v.figure and v.reason for v in suite.claims)


def test_groups_pool_seeds(suite):
    local = suite.results["convergence_local"]
    assert len(local.fits) == 4  # three forward lrs and one reverse run
    assert sorted(f.n_series for f in local.fits) == [3, 3, 3, 3]
    assert set(local.schedules) == {"inv_sqrt"}


def test_save_and_load_round_trip(suite, tmp_path):
    index = suite.save(tmp_path)
    data = json.loads(index.read_text())
    assert data["kind"] == "suite" and data["results"]["depth"] == "depth.json"
    for name in suite.results:
        assert load_result(tmp_path / f"{name}.json") == suite.results[name]
    assert load_suite(tmp_path) == suite
    for path in tmp_path.glob("*.json"):  # undefined values are null, never {"__float__": "nan"}
        assert '"nan"' not in path.read_text()
    assert suite.get("proposition") is suite.proposition and suite.get("nope") is None


def test_missing_probes_are_skipped_with_reasons(tmp_path):
    runs = [
        write_run(tmp_path, f"r{i}", lr=lr, probes=False, steps=60)
        for i, lr in enumerate([1e-3, 1e-2])
    ]
    result = analyze_runs(runs, n_boot=20)
    for name in (
        "minimizers",
        "stability_paper",
        "scaling_implemented",
        "convergence_backprop",
        "systems",
    ):
        assert result.skipped[name]
    rows = {v.claim: v for v in result.claims}
    assert rows[LEMMA2].verdict == "refuted" and "closed form" in rows[LEMMA2].reason
    assert rows[A5_PAPER].verdict == "not measured" and "probe/scaling" in rows[A5_PAPER].reason
    assert all(v.verdict in VERDICTS for v in result.claims)


def test_constant_schedule_and_slow_rate(tmp_path):
    const = analyze_runs([write_run(tmp_path, "c", schedule="constant", steps=60)], n_boot=20)
    row = next(v for v in const.claims if v.claim == RATE_LOCAL)
    assert row.verdict == "inconclusive" and "inv_sqrt" in row.reason
    slow = analyze_runs([write_run(tmp_path, "s", beta=0.1, steps=400)], n_boot=100)
    assert next(v for v in slow.claims if v.claim == RATE_LOCAL).verdict == "refuted"


def test_one_seed_is_not_testable_for_assumption5(tmp_path):
    result = analyze_runs([write_run(tmp_path, "a", steps=60)], n_boot=20)
    row = next(v for v in result.claims if v.claim == A5_IMPLEMENTED)
    assert row.verdict == "not testable" and "3 needed" in row.figure and "rho" in row.figure


def test_bounded_scaling_is_supported_and_diverged_runs_are_excluded(tmp_path):
    runs = [write_run(tmp_path, f"b{s}", seed=s, steps=60, scaling="bounded") for s in range(3)]
    runs.append(write_run(tmp_path, "bad", seed=9, steps=60, scaling="first", final_ce_drop=-3.0))
    result = analyze_runs(runs, n_boot=20)
    row = next(v for v in result.claims if v.claim == A5_IMPLEMENTED)
    assert row.verdict == "supported" and row.figure.startswith("consistent: rho stays bounded")
    assert "excluded as diverged: bad" in row.reason
    assert [s.run for s in result.results["scaling_implemented"].primary.seeds] == ["b0", "b1", "b2"]
    assert "bad" in result.skipped["diverged runs"]
    paper = next(v for v in result.claims if v.claim == A5_PAPER)  # R belongs to reverse training
    assert paper.verdict == "not testable" and "pre-registered" in paper.reason and "descriptive" in paper.figure


def test_paper_objective_undefined_without_smoothing(tmp_path):
    runs = [
        write_run(tmp_path, f"e{i}", lr=lr, epsilon=0.0, steps=60)
        for i, lr in enumerate([1e-3, 1e-2])
    ]
    result = analyze_runs(runs, n_boot=20)
    assert "one-hot" in result.skipped["stability_paper"]
    assert next(v for v in result.claims if v.claim == A5_PAPER).verdict == "not measured"


def test_unreadable_run_is_an_error(tmp_path):
    with pytest.raises(RunDataError, match="no such run directory"):
        analyze_runs([tmp_path / "missing"])
