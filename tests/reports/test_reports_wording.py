"""The verdict table's sentences are written from each row's structured evidence."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from analyses.claims import A5_IMPLEMENTED, BOUND_IMPLEMENTED, CLAIMS, GLOBAL_VS_BACKPROP
from analyses.results import Interval
from analyses.suite import analyze_runs, load_suite
from analyses.suite_result import SuiteAnalysis
from analyses.verdict import (
    REASONS,
    BoundFigures,
    DriftFigures,
    Evidence,
    GroupFigures,
    RhoFigures,
    ToyFigures,
    Verdict,
)
from reports.wording import FIGURE_TEXT, REASON_TEXT, figure, reason

sys.path.insert(0, str(Path(__file__).parents[1] / "analyses"))
from synthetic_runs import write_run  # noqa: E402

BOUND = BoundFigures("zerolock/forward sgd lr=0.1", "consistent", "b's interval lies below 0",
                     Interval(-0.25, -0.4, -0.1), Interval(0.5, 0.45, 0.55), 3, 800)


def test_every_reason_code_has_a_figure_and_a_reason():
    assert set(FIGURE_TEXT) == set(REASONS) == set(REASON_TEXT)


def test_a_bound_row_renders_its_interval_seeds_horizon_and_exclusions():
    row = Verdict(BOUND_IMPLEMENTED, "consistent", Evidence("bound", excluded=("d3",), bound=BOUND))
    assert figure(row) == "b = -0.25 [-0.4, -0.1] (3 seeds, T = 800)"
    assert reason(row) == ("zerolock/forward sgd lr=0.1: b's interval lies below 0; beta = 0.5 [0.45, 0.55] "
                           "(descriptive); excluded as diverged: d3")
    missing = BoundFigures("g", "not testable", "too short", None, None, 2, 50)
    row = Verdict(BOUND_IMPLEMENTED, "not testable", Evidence("bound", bound=missing))
    assert figure(row) == "b not estimable (2 seed(s), T = 50)" and reason(row).endswith("beta not estimable")


def test_uncalibrated_and_backprop_beside():
    row = Verdict(GLOBAL_VS_BACKPROP, "test not calibrated",
                  Evidence("uncalibrated", bound=BOUND, backprop=BOUND, uncalibrated=("logistic control",)))
    assert figure(row) == "ZeroLock b = -0.25 [-0.4, -0.1] (3 seeds, T = 800); backprop b = -0.25 [-0.4, -0.1] " \
                          "(3 seeds, T = 800)"
    assert reason(row).startswith("not covered by Theorem 1; logistic control not consistent: the rule rejects")
    assert reason(row).endswith("; backprop: consistent")


def test_an_assumption5_row_renders_the_primary_group_drift_and_rho():
    group = GroupFigures("zerolock/forward", "forward", "bounded", 3, "slope", Interval(0.1, -0.2, 0.4),
                         "consistent: rho stays bounded")
    evidence = Evidence("scaling", preregistered="forward", groups=(group,),
                        drift=DriftFigures(3, Interval(0.5, 0.4, 0.6), None), rho=RhoFigures(1.5, math.inf, 40))
    row = Verdict(A5_IMPLEMENTED, "supported", evidence)
    assert figure(row) == ("consistent: rho stays bounded (3 seed(s), zerolock/forward); drift: D_T ~ T^0.5 "
                           "[0.4, 0.6], sum q_t ~ T^n/a; along training: median rho 1.5, max inf over 40 steps")
    assert reason(row).startswith("the slope interval of log rho(c) on log c lies above -0.5")
    alone = Verdict(A5_IMPLEMENTED, "not measured", Evidence("no_scaling_data", skipped="no probe/scaling"))
    assert figure(alone) == "-" and reason(alone) == "no step-scaling data: no probe/scaling"


def test_the_toy_row_renders_the_exact_figures():
    toy = ToyFigures(0.5, 0.1, 0.3, 1.2, (0.75, 0.25), (0.6, 0.4), 0.15)
    row = Verdict(CLAIMS[0], "refuted", Evidence("toy_differ", toy=toy))
    assert figure(row) == ("two-token toy (alpha=0.5, eps=0.1): KL(p||p_y) = 0.3, CE(p_y, p) = 1.2; "
                           "m_k = (0.75, 0.25), g_k = (0.6, 0.4), TV(m_k, g_k) = 0.15")
    assert "closed form" in reason(row)


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("wording")
    return analyze_runs([write_run(root, f"z{s}", seed=s, steps=60) for s in range(3)], n_boot=20)


def test_the_json_carries_the_evidence_and_the_cli_dicts_render_alike(suite, tmp_path):
    index = json.loads(suite.save(tmp_path).read_text())
    rows = {row["claim"]: row for row in index["claims"]}
    assert set(rows) == set(CLAIMS) and all(set(r) == {"claim", "verdict", "evidence"} for r in rows.values())
    bound = rows[BOUND_IMPLEMENTED]["evidence"]["bound"]
    assert bound["seeds"] == 3 and bound["horizon"] == 60 and set(bound["slope"]) == {"estimate", "low", "high",
                                                                                        "level"}
    loaded = load_suite(tmp_path)
    for before, after in zip(suite.claims, loaded.claims, strict=True):
        assert (figure(after), reason(after)) == (figure(before), reason(before))
        copied = Verdict.from_dict(asdict(before))  # the dicts ``zerolock verify`` prints
        assert (copied.verdict, figure(copied)) == (before.verdict, figure(before))


def test_undefined_numbers_are_null_and_infinities_inf_in_json():
    row = Verdict(A5_IMPLEMENTED, "not testable", Evidence("no_scaling_data", rho=RhoFigures(math.nan, math.inf, 0)))
    text = SuiteAnalysis([], {}, [row], {}).to_json()
    assert '"median": null' in text and '"max": "inf"' in text and "NaN" not in text
    rho = Verdict.from_dict(json.loads(text)["claims"][0]).evidence.rho
    assert math.isnan(rho.median) and rho.max == math.inf


def test_an_index_written_before_evidence_gets_its_verdicts_decided_again(suite, tmp_path):
    path = suite.save(tmp_path)
    index = json.loads(path.read_text())
    index["claims"] = [{"claim": r["claim"], "verdict": r["verdict"], "figure": "f", "reason": "r"}
                       for r in index["claims"]]
    path.write_text(json.dumps(index))
    loaded = load_suite(tmp_path)
    assert [(v.claim, v.verdict, figure(v)) for v in loaded.claims] == [
        (v.claim, v.verdict, figure(v)) for v in suite.claims]
