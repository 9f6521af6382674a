"""Proposition 1: monotonicity of task CE in k (analyses.descriptive.depth)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import laid_out

from analyses.descriptive.depth import depth_profile, depth_set, depth_verdict
from analyses.results import NotMeasured
from zerolock_theory.records import MINIMIZER


def _frame(ce_rows, source="chunk/{k}/ce", gap=None):
    data = {"step": list(range(len(ce_rows)))}
    for k in range(1, len(ce_rows[0]) + 1):
        data[source.format(k=k)] = [row[k - 1] for row in ce_rows]
    if gap is not None:
        for k in range(1, len(gap[0]) + 1):
            data[MINIMIZER.key(k, "gap")] = [row[k - 1] for row in gap]
    return laid_out(pd.DataFrame(data), len(ce_rows[0]))


def test_monotone_run_holds_everywhere():
    prof = depth_profile(_frame([[3.0, 2.5, 2.0]] * 10))
    assert prof.share_holds == 1.0 and prof.final_holds and prof.final_ce == [3.0, 2.5, 2.0]
    assert prof.pair_share == [1.0, 1.0] and prof.n_evaluated == 10


def test_violations_are_detected_per_step_and_pair():
    rows = [[3.0, 2.5, 2.0]] * 6 + [[3.0, 3.2, 2.0]] * 4  # pair (1,2) violated at 4 steps
    prof = depth_profile(_frame(rows))
    assert prof.n_holds == 6 and prof.share_holds == 0.6 and not prof.final_holds
    assert prof.pair_share == [0.6, 1.0]


def test_tolerance():
    prof = depth_profile(_frame([[3.0, 3.001]] * 3), tol=0.01)
    assert prof.share_holds == 1.0


def test_held_out_ce_is_preferred_and_null_rows_skipped():
    frame = _frame([[3.0, 2.0]] * 6)
    frame["eval/chunk/1/ce"] = [np.nan, 2.0, np.nan, 2.0, np.nan, 2.0]
    frame["eval/chunk/2/ce"] = [np.nan, 2.5, np.nan, 2.5, np.nan, 2.5]
    prof = depth_profile(frame)
    assert prof.source == "eval/chunk/{k}/ce" and prof.n_evaluated == 3 and prof.share_holds == 0.0
    assert prof.ce_steps == [1, 3, 5]


def test_gap_trajectories():
    prof = depth_profile(
        _frame([[3.0, 2.0]] * 4, gap=[[0.4, 0.2], [0.3, 0.1], [0.2, 0.1], [0.1, 0.05]])
    )
    assert prof.gap_final == [0.1, 0.05] and prof.gap_median == [0.25, 0.1]
    assert len(prof.gap) == 2 and len(prof.gap[0]) == 4


@pytest.mark.parametrize(
    ("share", "final", "verdict"),
    [
        (0.95, True, "supported"),
        (0.95, False, "inconclusive"),
        (0.7, True, "inconclusive"),
        (0.3, True, "refuted"),
    ],
)
def test_verdict_rule(share, final, verdict):
    assert depth_verdict(share, final) == verdict


def test_depth_set_pools_runs_and_skips_those_without_data():
    good = _frame([[3.0, 2.0]] * 10)
    bad = _frame([[2.0, 3.0]] * 10)
    result = depth_set([good, bad, laid_out(pd.DataFrame({"step": [0]}), 3)], ["good", "bad", "none"])
    assert [p.run for p in result.profiles] == ["good", "bad"]
    assert result.share_holds == 0.5 and result.verdict == "inconclusive"
    assert depth_set([bad]).verdict == "refuted"
    with pytest.raises(NotMeasured):
        depth_set([laid_out(pd.DataFrame({"step": [0]}), 3)])
