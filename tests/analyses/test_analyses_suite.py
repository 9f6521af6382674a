"""analyze_runs on synthetic run directories: grouping, verdicts, skipping, save/load."""

from __future__ import annotations

import json

import pytest
from synthetic_runs import write_run, write_suite

from analyses.claims import A5_IMPLEMENTED, A5_PAPER, BOUND_IMPLEMENTED, CLAIMS, LEMMA2
from analyses.io import RunDataError
from analyses.results import VERDICTS, load_result
from analyses.suite import analyze_runs, load_suite
from reports.wording import figure, reason


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
        "convergence_forward",
        "convergence_reverse",
        "convergence_global",
        "convergence_global_backprop",
        "convergence_backprop",
        "control_logistic",
        "diverged",
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
            ["refuted", "refuted", "refuted", "refuted", "not testable at this horizon",
             "not testable at this horizon", "not testable at this horizon",
             "not testable",  # Proposition 1: CE falls with depth at every pair, no rising pair to test
             "not testable at this horizon", "not testable at this horizon"],
            strict=True,
        )
    )
    assert all(figure(v) and reason(v) for v in suite.claims)
    evidence = {v.claim: v.evidence for v in suite.claims}
    assert evidence[LEMMA2].reason == "toy_differ" and evidence[LEMMA2].toy.tv_m_g > 0
    bound = evidence[BOUND_IMPLEMENTED]
    assert bound.reason == "bound" and bound.bound.seeds == 3 and bound.bound.horizon == 100


def test_groups_pool_seeds_and_the_primary_group_has_most_seeds(suite):
    local = suite.results["convergence_forward"]
    assert len(local.tests) == 3  # three forward lrs, three seeds each
    assert [t.seeds for t in local.tests] == [3, 3, 3] and set(local.schedules) == {"inv_sqrt"}
    assert local.primary_test().label.startswith("zerolock/forward sgd lr=0.001 ")  # tie: smaller lr
    assert suite.results["convergence_reverse"].tests[0].seeds == 3


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
    assert rows[LEMMA2].verdict == "refuted" and "closed form" in reason(rows[LEMMA2])
    assert rows[A5_PAPER].verdict == "not measured" and "probe/scaling" in reason(rows[A5_PAPER])
    assert rows[A5_PAPER].evidence.reason == "no_scaling_data" and "probe/scaling" in rows[A5_PAPER].evidence.skipped
    assert all(v.verdict in VERDICTS for v in result.claims)


def _bound_row(suite, claim=BOUND_IMPLEMENTED):
    return next(v for v in suite.claims if v.claim == claim)


def test_bound_rows_constant_schedule_slow_rate_and_controls(tmp_path):
    const = analyze_runs([write_run(tmp_path, f"c{s}", schedule="constant", steps=60, seed=s) for s in range(3)])
    row = _bound_row(const)
    assert row.verdict == "not testable" and "inv_sqrt" in reason(row)
    assert row.evidence.reason == "no_theorem_schedule" and row.evidence.bound is None
    slow = analyze_runs([write_run(tmp_path, f"s{s}", beta=0.1, steps=600, seed=s) for s in range(3)])
    row = _bound_row(slow)
    assert row.verdict == "not consistent" and figure(row).startswith("b = ")
    assert str(row.evidence.bound.slope) in figure(row) and row.evidence.bound.verdict == "not consistent"
    assert _bound_row(slow, "Control: convex logistic regression, SGD").verdict == "consistent"
    fine = analyze_runs([write_run(tmp_path, f"f{s}", beta=0.5, steps=600, seed=s) for s in range(3)])
    assert _bound_row(fine).verdict == "consistent"
    # a control that fails makes the Theorem 1 rows "test not calibrated"
    bp = [write_run(tmp_path, f"bp{s}", method="backprop", direction="", beta=0.0, steps=600, seed=s,
                    probes=False) for s in range(3)]
    broken = analyze_runs([*[tmp_path / f"f{s}" for s in range(3)], *bp])
    assert _bound_row(broken, "Control: backprop under Theorem 1's schedule").verdict == "not consistent"
    assert _bound_row(broken).verdict == "test not calibrated"
    assert _bound_row(broken).evidence.uncalibrated == ("backprop control",)
    assert reason(_bound_row(broken)).startswith("backprop control not consistent")


def test_diverged_runs_are_flagged_and_excluded(tmp_path):
    runs = [write_run(tmp_path, f"d{s}", beta=0.5, steps=600, seed=s) for s in range(4)]
    import json as _json

    lines = (runs[3] / "metrics.jsonl").read_text().splitlines()
    last = _json.loads(lines[-1])
    last["eval/ce"] = 9.0  # held-out CE rose far above its start
    lines[-1] = _json.dumps(last)
    (runs[3] / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    suite = analyze_runs(runs)
    assert list(suite.results["diverged"].runs) == ["d3"]
    test = suite.results["convergence_forward"].primary_test()
    assert test.seeds == 3 and test.excluded == ["d3"]
    assert "d3" in reason(_bound_row(suite)) and _bound_row(suite).evidence.excluded == ("d3",)


def test_a_diverged_primary_group_is_not_swapped_for_another(tmp_path):
    import json as _json

    runs = [write_run(tmp_path, f"p{s}", lr=0.1, beta=0.5, steps=600, seed=s) for s in range(3)]
    for run in runs:
        lines = (run / "metrics.jsonl").read_text().splitlines()
        last = _json.loads(lines[-1])
        last["eval/ce"] = 9.0
        lines[-1] = _json.dumps(last)
        (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    other = write_run(tmp_path, "small", lr=0.01, beta=0.5, steps=600, seed=0)
    suite = analyze_runs([*runs, other])
    test = suite.results["convergence_forward"].primary_test()
    assert test.label.startswith("zerolock/forward sgd lr=0.1 ") and test.seeds == 0
    row = _bound_row(suite)
    assert row.verdict == "not testable" and "no usable seed" in reason(row) and "diverged" in reason(row)


def test_reanalysis_with_another_bootstrap_seed_gives_the_same_verdicts(suite_dirs):
    a = analyze_runs(suite_dirs, n_boot=50, seed=1)
    b = analyze_runs(suite_dirs, n_boot=50, seed=2)
    assert [v.verdict for v in a.claims] == [v.verdict for v in b.claims]
    assert a.results["convergence_forward"] == b.results["convergence_forward"]


def test_one_seed_is_not_testable_for_assumption5(tmp_path):
    result = analyze_runs([write_run(tmp_path, "a", steps=60)], n_boot=20)
    row = next(v for v in result.claims if v.claim == A5_IMPLEMENTED)
    assert row.verdict == "not testable" and "3 needed" in figure(row) and "rho" in figure(row)
    assert row.evidence.groups[0].seeds == 1 and row.evidence.groups[0].interval is None


def test_bounded_scaling_is_supported_and_diverged_runs_are_excluded(tmp_path):
    runs = [write_run(tmp_path, f"b{s}", seed=s, steps=60, scaling="bounded") for s in range(3)]
    runs.append(write_run(tmp_path, "bad", seed=9, steps=60, scaling="first", final_ce_drop=-3.0))
    result = analyze_runs(runs, n_boot=20)
    row = next(v for v in result.claims if v.claim == A5_IMPLEMENTED)
    assert row.verdict == "supported" and figure(row).startswith("consistent: rho stays bounded")
    assert "excluded as diverged: bad" in reason(row) and row.evidence.excluded == ("bad",)
    assert row.evidence.reason == "scaling" and row.evidence.groups[0].outcome == "bounded"
    assert [s.run for s in result.results["scaling_implemented"].primary.seeds] == ["b0", "b1", "b2"]
    assert "bad" in result.skipped["diverged runs"]
    paper = next(v for v in result.claims if v.claim == A5_PAPER)  # R belongs to reverse training
    assert paper.verdict == "not testable" and "pre-registered" in reason(paper) and "descriptive" in figure(paper)
    assert paper.evidence.reason == "no_scaling_group" and paper.evidence.preregistered == "reverse"


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
