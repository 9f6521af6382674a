"""The descriptive ρ_t summary on synthetic data (analyses.descriptive.stability)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import laid_out

from analyses.descriptive.stability import stability_summary
from analyses.results import NotMeasured

KEY = "probe/stability/implemented/total"


def _sweep_frame(
    lr: float, slope: float, seed: int, n: int = 150, share_pos: float = 0.8
) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    dp = lr * 10 * np.exp(0.3 * rng.normal(size=n)) / np.sqrt(np.arange(1, n + 1))
    rho = 0.5 * dp**slope * np.exp(0.3 * rng.normal(size=n))
    pos = rng.random(n) < share_pos
    phi = np.where(pos, rho * dp**2, -0.1 * dp)
    return laid_out(pd.DataFrame(
        {
            "step": np.arange(n),
            f"{KEY}/phi": phi,
            f"{KEY}/q": dp**2,
            f"{KEY}/ratio": np.maximum(phi, 0) / dp**2,
        }
    ), 1)


def test_summary_statistics_and_undefined_counts():
    frame = laid_out(pd.DataFrame(
        {
            "step": range(5),
            f"{KEY}/phi": [1.0, -1.0, 2.0, 4.0, None],
            f"{KEY}/q": [1.0, 1.0, 1.0, 0.0, None],
            f"{KEY}/ratio": [1.0, 0.0, 2.0, None, None],
            f"{KEY}/remainder": [0.5, 0.5, 0.5, 0.5, None],
        }
    ), 1)
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
    frame = laid_out(pd.DataFrame(
        {
            "step": range(3),
            "probe/stability/paper/defined": [False] * 3,
            "probe/stability/paper/reason": ["one-hot labels"] * 3,
            "probe/stability/paper/total/phi": [None] * 3,
            "probe/stability/paper/total/q": [None] * 3,
        }
    ), 1)
    with pytest.raises(NotMeasured, match="one-hot labels"):
        stability_summary([frame], "paper")


def test_missing_keys_are_not_measured():
    with pytest.raises(NotMeasured, match="no run has"):
        stability_summary([laid_out(pd.DataFrame({"step": [0]}), 1)], "implemented")
    with pytest.raises(ValueError, match="objective"):
        stability_summary([laid_out(pd.DataFrame({"step": [0]}), 1)], "other")
