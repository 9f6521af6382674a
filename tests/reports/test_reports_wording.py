"""The verdict table's sentences are written from each row's structured evidence."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from analyses.lemma2.targets import Lemma2Stated
from analyses.registry import claim, claims
from analyses.results import Interval
from analyses.suite import analyze_runs, load_suite
from analyses.suite_result import SuiteAnalysis
from analyses.text import (
    BOUND_REASON_TEXT,
    bound_reason,
    bound_summary,
    group_statement,
)
from analyses.theorem1.bound_set import CONTROL_LOGISTIC, CONVERGENCE
from analyses.verdict import (
    BOUND_REASONS,
    BoundFigures,
    Evidence,
    GroupFigures,
    Verdict,
)
from reports.wording import figure, reason

A5_IMPLEMENTED = "assumption5_implemented"
CLAIMS = tuple(c.key for c in claims())

sys.path.insert(0, str(Path(__file__).parents[1] / "analyses"))
from synthetic_runs import write_run  # noqa: E402

BOUND = BoundFigures("zerolock/forward sgd lr=0.1", "consistent", "not_growing",
                     Interval(-0.25, -0.4, -0.1), Interval(0.5, 0.45, 0.55), 3, 800, 500, 3, 0)


def test_every_outcome_of_every_claim_has_its_wording():
    for row in claims():
        assert row.title and row.paper and row.question and row.primary, row.key
        assert row.outcomes and all(o.meaning for o in row.outcomes.values()), row.key


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("wording")
    return analyze_runs([write_run(root, f"z{s}", seed=s, steps=60) for s in range(3)], n_boot=20)


def test_the_json_carries_the_evidence_and_rows_reload_alike(suite, tmp_path):
    index = json.loads(suite.save(tmp_path).read_text())
    rows = {row["claim"]: row for row in index["claims"]}
    assert set(rows) == set(CLAIMS) and all(set(r) == {"claim", "outcome", "evidence", "correction"} for r in rows.values())
    rate = rows["theorem1_rate_forward"]["evidence"]["result"]
    assert rate["kind"] == "group_rate" and rate["rate"]["seeds"] == 3 and rate["rate"]["horizon"] == 60
    loaded = load_suite(tmp_path)
    for before, after in zip(suite.claims, loaded.claims, strict=True):
        assert (figure(after), reason(after)) == (figure(before), reason(before))
        assert (after.claim, after.outcome) == (before.claim, before.outcome)


def test_undefined_numbers_are_null_and_infinities_inf_in_json():
    stated = Lemma2Stated("holds (exact)", 3, 8, math.nan, math.inf, [0.5], [0.1], [4])
    row = Verdict("lemma2_stated", "holds (exact)", Evidence("computed", result=stated))
    text = SuiteAnalysis([], {}, [row], {}).to_json()
    assert '"max_residual": null' in text and '"min_excess": "inf"' in text and "NaN" not in text
    back = Verdict.from_dict(json.loads(text)["claims"][0]).evidence.result
    assert isinstance(back, Lemma2Stated) and math.isnan(back.max_residual) and back.min_excess == math.inf


def test_an_index_written_before_evidence_gets_its_verdicts_decided_again(suite, tmp_path):
    path = suite.save(tmp_path)
    index = json.loads(path.read_text())
    index["claims"] = [{"claim": claim(r["claim"]).title, "verdict": r["outcome"], "figure": "f", "reason": "r"}
                       for r in index["claims"]]
    path.write_text(json.dumps(index))
    loaded = load_suite(tmp_path)
    assert [(v.claim, v.outcome, figure(v)) for v in loaded.claims] == [
        (v.claim, v.outcome, figure(v)) for v in suite.claims]


IV = Interval(0.2, 0.1, 0.3)


def _group(analysis: str, outcome: str, **figures) -> GroupFigures:
    return GroupFigures("zerolock/forward", "forward", analysis, outcome, 3, "headline", IV, **figures)


@pytest.mark.parametrize(("outcome", "figures", "text"), [
    ("m_k", {"measurable": 3}, "forward-trained chunks move toward m_k more than g_k: r(m) - r(g) = 0.2 [0.1, 0.3] "
     "(TV, relative to the untrained model)"),
    ("g_k", {"measurable": 3, "exact": False}, "forward-trained chunks move toward g_k more than m_k: r(m) - r(g) = "
     "0.2 [0.1, 0.3] (TV, relative to the untrained model); from top-k readouts (approximate TV)"),
    ("undecided", {"measurable": 3}, "forward-trained chunks move without a detectable preference: r(m) - r(g) = "
     "0.2 [0.1, 0.3] (TV, relative to the untrained model)"),
    ("not testable", {"measurable": 2}, "not testable: 2 measurable forward-trained seed(s), 3 needed"),
    ("not measurable", {}, "not measurable: readouts moved less than TV 0.01 in every forward-trained run"),
])
def test_a_tracking_group_is_stated_from_its_figures(outcome, figures, text):
    assert group_statement(_group("tracking", outcome, **figures)) == text


@pytest.mark.parametrize(("code", "text"), [
    ("no_seed", "no usable seed"),
    ("short_horizon", "horizon T = 40 < 500 steps (too short to test a bound)"),
    ("few_seeds", "2 usable seed(s) < 3"),
    ("few_fitted", "only 1 seed(s) with enough points where A_T > 0 in the last half"),
    ("growing", "b interval above 0: B_T still grows at T = 40"),
    ("not_growing", "b interval reaches 0 or below: B_T does not grow at the end"),
])
def test_each_bound_reason_is_stated_with_its_numbers(code, text):
    bound = BoundFigures("g", "not testable", code, None, None, 2, 40, 500, 1, 0)
    assert bound_reason(bound) == text
    assert bound_reason(replace(bound, diverged=2)) == text + " (2 diverged run(s) excluded)"


def test_every_bound_reason_has_a_text_and_an_unknown_code_is_refused():
    assert set(BOUND_REASON_TEXT) == set(BOUND_REASONS)
    with pytest.raises(ValueError, match="bound reason must be one of"):
        BoundFigures("g", "consistent", "b's interval lies below 0", None, None, 3, 800, 500, 3, 0)


def test_the_bound_summary_is_one_line():
    assert bound_summary(BOUND) == ("zerolock/forward sgd lr=0.1: consistent — b = -0.25 [-0.4, -0.1] (3 seeds, "
                                    "T = 800); beta = 0.5 [0.45, 0.55] (descriptive); b interval reaches 0 or below: "
                                    "B_T does not grow at the end")
    assert bound_summary(replace(BOUND, beta=None, slope=None)) == (
        "zerolock/forward sgd lr=0.1: consistent — b not estimable (3 seed(s), T = 800); b interval reaches 0 or "
        "below: B_T does not grow at the end")


def _as_written_before(evidence: dict) -> None:
    """Rewrite a saved row's evidence as 1b087f5 wrote it: a group's statement, a bound's reason sentence."""
    for group in evidence["groups"]:
        for name in ("analysis", "measurable", "exact", "share", "pairs", "violations", "margin", "slack"):
            group.pop(name, None)
        group["statement"] = "a sentence"
    for key in ("bound", "backprop"):
        if evidence.get(key) is not None:
            for name in ("min_horizon", "fitted", "diverged"):
                evidence[key].pop(name)
            evidence[key]["reason"] = "a sentence"


def test_an_index_with_sentences_in_its_evidence_gets_its_verdicts_decided_again(suite, tmp_path):
    path = suite.save(tmp_path)
    index = json.loads(path.read_text())
    for row in index["claims"]:
        _as_written_before(row["evidence"])
    path.write_text(json.dumps(index))
    for name in ("convergence_forward", "control_logistic"):  # a bound test saved with its reason as a sentence
        saved = json.loads((tmp_path / f"{name}.json").read_text())
        for test in saved.get("tests", [saved]):
            test["reason"] = "b interval reaches 0 or below"
        (tmp_path / f"{name}.json").write_text(json.dumps(saved))
    loaded = load_suite(tmp_path)
    assert [(v.claim, v.outcome, figure(v), reason(v)) for v in loaded.claims] == [
        (v.claim, v.outcome, figure(v), reason(v)) for v in suite.claims]
    assert loaded.get(CONVERGENCE["forward"]) == suite.get(CONVERGENCE["forward"])
    assert loaded.get(CONTROL_LOGISTIC) == suite.get(CONTROL_LOGISTIC)
