"""Outcome numbers of held-out CE (analyses.descriptive.outcome)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analyses.descriptive.outcome import compare_outcomes, outcome_run
from analyses.results import NotMeasured


def _frame(ce, initial=None, every=2):
    n = len(ce) * every
    col = [np.nan] * n
    for i, v in enumerate(ce):
        col[i * every + every - 1] = v
    frame = pd.DataFrame({"step": range(n), "eval/ce": col})
    if initial is not None:
        frame["eval/ce_initial"] = [initial] + [np.nan] * (n - 1)
    return frame


def test_start_end_best_and_relative_improvement():
    run = outcome_run(_frame([3.5, 3.0, 3.2], initial=4.0))
    assert (run.start, run.end, run.best) == (4.0, 3.2, 3.0)
    assert run.relative_improvement == pytest.approx(0.2)
    assert run.steps == [1, 3, 5]


def test_without_initial_the_first_eval_is_the_start():
    run = outcome_run(_frame([3.5, 3.0, 3.2]))
    assert run.start == 3.5 and run.relative_improvement == pytest.approx((3.5 - 3.2) / 3.5)


def test_groups_side_by_side():
    result = compare_outcomes(
        {
            "zl": ("zerolock", [("a", _frame([3.0, 2.0], 4.0)), ("b", _frame([3.0, 2.4], 4.0))]),
            "bp": ("backprop", [("c", _frame([2.5, 1.8], 4.0))]),
            "none": ("backprop", [("d", pd.DataFrame({"step": [0]}))]),
        }
    )
    zl, bp = result.groups
    assert zl.end == pytest.approx(2.2) and zl.best == pytest.approx(2.2) and zl.start == 4.0
    assert zl.mean_ce == pytest.approx([3.0, 2.2]) and zl.steps == [1, 3]
    assert bp.relative_improvement == pytest.approx(0.55)
    assert result.best_end("backprop") is bp and len(result.groups) == 2


def test_no_eval_is_not_measured():
    with pytest.raises(NotMeasured):
        compare_outcomes({"x": ("zerolock", [("a", pd.DataFrame({"step": [0]}))])})
