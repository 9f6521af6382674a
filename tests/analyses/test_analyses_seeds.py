"""Seed-level intervals and the diverged-run rule (analyses/seeds.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analyses.seeds import DIVERGENCE_MARGIN, diverged, seed_interval


def test_seed_interval_covers_at_nominal_level():
    rng = np.random.default_rng(0)
    reps, hits = 2000, 0
    for _ in range(reps):
        iv = seed_interval(rng.normal(0.3, 0.2, size=3))
        hits += iv.low <= 0.3 <= iv.high
    assert 0.93 <= hits / reps <= 0.97


def test_seed_interval_not_testable_below_min_seeds():
    assert seed_interval([1.0, 2.0]) is None
    assert seed_interval([1.0, 2.0, float("nan")]) is None
    iv = seed_interval([1.0, 1.0, 1.0])
    assert (iv.estimate, iv.low, iv.high) == (1.0, 1.0, 1.0)


def test_diverged_flags_nonfinite_loss_and_risen_ce():
    ok = pd.DataFrame({"step": [0, 1], "train/loss": [2.0, 1.9], "eval/ce": [5.0, 5.0 + DIVERGENCE_MARGIN]})
    assert diverged(ok) is None
    nan = ok.assign(**{"train/loss": [2.0, math.nan]})
    assert "non-finite" in diverged(nan.assign(**{"train/loss": [2.0, math.inf]})).reason
    risen = ok.assign(**{"eval/ce": [5.0, 5.6]})
    flag = diverged(risen)
    assert flag is not None and flag.start_ce == 5.0 and flag.end_ce == 5.6


def test_share_interval_is_clipped_to_the_unit_interval():
    from analyses.seeds import share_interval

    iv = share_interval([0.9, 1.0, 0.6])
    assert 0.0 <= iv.low < iv.estimate < iv.high == 1.0
    assert share_interval([0.0, 0.0, 0.0]).high == 0.0 and share_interval([0.5, 0.5]) is None
