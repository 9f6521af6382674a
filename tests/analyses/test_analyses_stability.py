"""Assumption 5 analyses on synthetic ρ_t with known scaling (analyses.stability)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analyses.results import Interval, NotMeasured
from analyses.stability import scaling_verdict, stability_scaling, stability_summary

KEY = "probe/stability/implemented/total"


def _sweep_frame(
    lr: float, slope: float, seed: int, n: int = 150, share_pos: float = 0.8
) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    dp = lr * 10 * np.exp(0.3 * rng.normal(size=n)) / np.sqrt(np.arange(1, n + 1))
    rho = 0.5 * dp**slope * np.exp(0.3 * rng.normal(size=n))
    pos = rng.random(n) < share_pos
    phi = np.where(pos, rho * dp**2, -0.1 * dp)
    return pd.DataFrame(
        {
            "step": np.arange(n),
            f"{KEY}/phi": phi,
            f"{KEY}/q": dp**2,
            f"{KEY}/ratio": np.maximum(phi, 0) / dp**2,
        }
    )


@pytest.mark.parametrize(
    ("slope", "verdict"), [(-1.0, "unbounded"), (0.0, "bounded"), (-0.5, "unbounded")]
)
def test_known_slope_is_recovered(slope, verdict):
    lrs = [1e-3, 3e-3, 1e-2]
    frames = [_sweep_frame(lr, slope, i) for i, lr in enumerate(lrs)]
    fit = stability_scaling(frames, lrs, "implemented", n_boot=300)
    assert fit.slope.contains(slope)
    assert abs(fit.slope.estimate - slope) < 0.05
    assert fit.verdict == verdict
    assert fit.first_order == fit.slope.contains(-1.0)
    assert fit.lrs == lrs and fit.n_runs == 3
    assert sum(p.n_positive for p in fit.points) == fit.n_points


@pytest.mark.parametrize(
    ("interval", "verdict"),
    [
        ((-1.0, -1.2, -0.8), "unbounded"),
        ((-0.1, -0.3, 0.2), "bounded"),
        ((0.4, 0.1, 0.7), "bounded"),
        ((-0.3, -0.9, 0.2), "inconclusive"),
        ((-0.4, -0.45, -0.01), "unbounded"),
    ],
)
def test_scaling_verdict_rule(interval, verdict):
    assert scaling_verdict(Interval(*interval)) == verdict


def test_single_learning_rate_is_not_a_sweep():
    with pytest.raises(NotMeasured, match="learning-rate sweep"):
        stability_scaling(
            [_sweep_frame(1e-3, -1, 0), _sweep_frame(1e-3, -1, 1)], [1e-3, 1e-3], "implemented"
        )


def test_nonpositive_phi_everywhere_is_bounded():
    frames = [_sweep_frame(lr, -1.0, i, share_pos=0.0) for i, lr in enumerate([1e-3, 1e-2])]
    fit = stability_scaling(frames, [1e-3, 1e-2], "implemented", n_boot=10)
    assert fit.verdict == "bounded" and math.isnan(fit.slope.estimate) and fit.n_points == 0


def test_summary_statistics_and_undefined_counts():
    frame = pd.DataFrame(
        {
            "step": range(5),
            f"{KEY}/phi": [1.0, -1.0, 2.0, 4.0, None],
            f"{KEY}/q": [1.0, 1.0, 1.0, 0.0, None],
            f"{KEY}/ratio": [1.0, 0.0, 2.0, None, None],
            f"{KEY}/remainder": [0.5, 0.5, 0.5, 0.5, None],
        }
    )
    total = stability_summary([frame], "implemented").total()
    assert (total.n_probe, total.n_defined, total.n_undefined) == (4, 3, 1)
    assert total.median == 1.0 and total.max == 2.0
    assert total.p95 == pytest.approx(np.percentile([1.0, 0.0, 2.0], 95))
    assert total.share_phi_positive == 0.75
    assert total.remainder_ratio_median == 0.5


def test_ratio_is_recomputed_when_absent():
    frame = _sweep_frame(1e-3, -1.0, 0).drop(columns=[f"{KEY}/ratio"])
    ref = _sweep_frame(1e-3, -1.0, 0)
    assert stability_summary([frame], "implemented").total().median == pytest.approx(
        stability_summary([ref], "implemented").total().median
    )


def test_undefined_paper_objective_gives_the_probe_reason():
    frame = pd.DataFrame(
        {
            "step": range(3),
            "probe/stability/paper/defined": [False] * 3,
            "probe/stability/paper/reason": ["one-hot labels"] * 3,
            "probe/stability/paper/total/phi": [None] * 3,
            "probe/stability/paper/total/q": [None] * 3,
        }
    )
    with pytest.raises(NotMeasured, match="one-hot labels"):
        stability_summary([frame], "paper")
    with pytest.raises(NotMeasured, match="one-hot labels"):
        stability_scaling([frame, frame], [1e-3, 1e-2], "paper")


def test_missing_keys_are_not_measured():
    with pytest.raises(NotMeasured, match="no run has"):
        stability_summary([pd.DataFrame({"step": [0]})], "implemented")
    with pytest.raises(ValueError, match="objective"):
        stability_summary([pd.DataFrame({"step": [0]})], "other")
