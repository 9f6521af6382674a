"""Holm's correction over the verdict table (``analyses.stats.multiplicity``): known answers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from analyses.registry import corrected
from analyses.stats.multiplicity import holm, multiplicity, t_test_p
from analyses.stats.seeds import seed_interval
from analyses.verdict import Evidence, Verdict


def test_holm_known_answer_in_input_order():
    # sorted 0.01, 0.02, 0.03, 0.04 with m = 4: 0.04, 0.06, 0.06 (monotone), 0.06
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert holm([]) == []
    assert holm([0.5]) == [0.5]
    with pytest.raises(ValueError, match="p-values must lie"):
        holm([1.5])


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12))
def test_holm_is_between_p_and_bonferroni_and_keeps_the_order(p):
    adjusted = np.array(holm(p))
    raw = np.array(p)
    assert np.all(adjusted >= raw - 1e-15) and np.all(adjusted <= np.minimum(1.0, len(p) * raw) + 1e-15)
    order = np.argsort(raw, kind="stable")
    assert np.all(np.diff(adjusted[order]) >= -1e-15)


def test_the_issue_table_rank_five_and_six_survive_holm_but_not_bonferroni():
    # nine interval-decided rows; two at p = 0.008 sit at ranks 5-6 behind four tiny ones
    p = [1e-6, 2e-6, 3e-6, 4e-6, 0.008, 0.0081, 0.3, 0.5, 0.9]
    rows = multiplicity(p)
    assert [r.survives for r in rows[:6]] == [True] * 6  # Holm: 5 x 0.008 = 0.040, 4 x 0.0081 -> 0.040
    assert 9 * 0.008 > 0.05  # Bonferroni would drop them
    assert [r.survives for r in rows[6:]] == [None, None, None]  # nothing rejected, nothing to correct


def test_a_decision_that_does_not_survive_is_not_counted():
    verdicts = corrected([Verdict("a", "x", Evidence("r", p_value=0.04)), Verdict("b", "y", Evidence("r", p_value=0.03)),
                          Verdict("c", "z", Evidence("r"))])
    assert verdicts[0].correction.survives is False and not verdicts[0].counted  # 0.04 x 1 after 0.03 x 2 = 0.06
    assert verdicts[1].correction.survives is False and verdicts[1].correction.adjusted == pytest.approx(0.06)
    assert verdicts[2].correction is None and verdicts[2].counted
    assert "does not survive (p = 0.04, Holm 0.06 of 2)" == verdicts[0].correction.label


@given(st.lists(st.floats(-2, 2, allow_nan=False), min_size=3, max_size=10), st.floats(-1, 1))
def test_t_test_p_matches_the_seed_interval(values, null):
    p = t_test_p(values, null)
    interval = seed_interval(values)
    if np.std(values, ddof=1) < 1e-9 or abs(p - 0.05) < 1e-6 or interval is None:
        return
    assert (p < 0.05) == (not interval.contains(null))
    assert p == pytest.approx(stats.ttest_1samp(values, null).pvalue, rel=1e-9, abs=1e-12)


def test_t_test_p_degenerate_cases():
    assert t_test_p([1.0]) is None
    assert t_test_p([0.3, 0.3, 0.3]) == 0.0 and t_test_p([0.0, 0.0, 0.0]) == 1.0
