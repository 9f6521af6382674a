"""ZeroLock against backprop: rate exponents, held-out CE difference, steps to the same CE."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analyses.results import load_result
from analyses.theorem1.families import rate_series
from analyses.versus.pilot import (
    CE_COLUMN,
    GLOBAL_COLUMN,
    Versus,
    difference_interval,
    steps_to_ce,
    versus,
)

EVAL = np.arange(0, 1000, 125).tolist() + [999]


def _run(family: str, ce_end: float, rng, seed_shift: float) -> pd.DataFrame:
    t, g = rate_series(family, 1000, rng, 0.1)
    frame = pd.DataFrame({"step": t - 1, GLOBAL_COLUMN: g})
    ce = np.full(t.size, np.nan)
    for s in EVAL:  # CE falls linearly from 5.5 to ce_end (plus a per-seed shift)
        ce[s] = 5.5 + (ce_end - 5.5) * s / 999 + seed_shift
    frame[CE_COLUMN] = ce
    return frame


def _groups(rng, names_b=None):
    shifts = rng.normal(0, 0.05, size=5)  # shared by both methods of a seed: pairing removes it
    zl = [(f"seed={i}", _run("T^-0.2", 5.4, rng, shifts[i])) for i in range(5)]
    bp = [(n, _run("1/sqrt(T)", 5.0, rng, shifts[i])) for i, n in enumerate(names_b or [f"seed={i}" for i in range(5)])]
    return zl, bp


def test_paired_difference_steps_to_equal_ce_and_round_trip():
    result = versus(*_groups(np.random.default_rng(0)))
    assert result.ce_pairing == "paired by seed" and result.beta_pairing == "paired by seed"
    assert result.ce_difference.estimate == pytest.approx(0.4, abs=1e-9)  # the shifts cancel exactly
    assert result.outcome == "zerolock worse"
    assert result.beta_difference.contains(0.2 - 0.5) and result.beta_difference.high < 0
    # backprop's mean curve 5.5 - 0.5 s/999 + mean shift reaches ZeroLock's final mean CE (5.4 + shift)
    # at s >= 0.2*999 = 199.8: the first eval step is 250; ZeroLock reaches it at its horizon 999.
    assert (result.steps_backprop, result.steps_zerolock) == (250, 999)
    again = load_result(result.to_json())
    assert isinstance(again, Versus) and again.ce_difference == result.ce_difference


def test_welch_when_seeds_do_not_pair_and_not_testable_with_two_seeds():
    zl, bp = _groups(np.random.default_rng(1), names_b=[f"other={i}" for i in range(5)])
    result = versus(zl, bp)
    assert result.ce_pairing == "Welch" and result.ce_difference.contains(0.4)
    two = versus(zl[:2], bp[:2])
    assert two.outcome == "not testable" and two.ce_difference is None and two.ce_pairing == "none"


def test_difference_interval_and_steps_to_ce_by_hand():
    iv, how = difference_interval({"a": 1.0, "b": 2.0, "c": 4.0}, {"a": 0.0, "b": 1.0, "c": 2.0})
    assert how == "paired by seed" and iv.estimate == pytest.approx(4 / 3)
    curve = pd.Series([3.0, 2.0, 2.5, 1.0], index=[0, 10, 20, 30])
    assert steps_to_ce(curve, 2.0) == 10 and steps_to_ce(curve, 0.5) is None


def test_missing_global_column_is_a_note_not_a_crash():
    zl, bp = _groups(np.random.default_rng(2))
    zl = [(n, f.drop(columns=[GLOBAL_COLUMN])) for n, f in zl]
    result = versus(zl, bp)
    assert result.rate_zerolock is None and result.beta_difference is None
    assert any("missing column" in note for note in result.notes) and result.outcome == "zerolock worse"
