"""Lemma 2 on the model (analyses.descriptive.tracking) on synthetic readout stores with a known target."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from analyses.descriptive.tracking import MOVE_FLOOR, direction_tracking, run_tracking
from analyses.results import NotMeasured
from analyses.text import group_statement
from zerolock_theory.readout_store import ReadoutWriter

ALPHA, EPS, V, N, K = 0.5, 0.1, 5, 8, 2


def _targets(prev: np.ndarray, p_y: np.ndarray):
    m = ALPHA * p_y + (1 - ALPHA) * prev
    g = p_y**ALPHA * prev ** (1 - ALPHA)
    return m, g / g.sum(-1, keepdims=True)


def _write(root, seed: int, toward: str, amount: float = 0.5):
    """Step 0: random readouts, p_k near p_{k-1}; step 10: each p_k moved ``amount`` of the way to its m_k or g_k."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, V, N)
    p_y = np.full((N, V), EPS / V)
    p_y[np.arange(N), labels] += 1 - EPS
    start = rng.dirichlet(np.ones(V), size=(K + 1, N))
    for k in range(1, K + 1):  # as in a residual stream, p_k starts close to p_{k-1}
        start[k] = 0.9 * start[k - 1] + 0.1 * start[k]
    end = start.copy()
    for k in range(1, K + 1):
        m, g = _targets(end[k - 1], p_y)
        end[k] = (1 - amount) * start[k] + amount * (m if toward == "m" else g)
    root.mkdir(parents=True)
    meta = {"format": "zerolock-readouts", "version": 1, "rows": K + 1, "n_positions": N, "vocab_size": V,
            "mode": "full", "dtype": "float32"}
    writer = ReadoutWriter(root / "readouts", meta)
    writer.append(0, {"probs": start.astype(np.float32)})
    writer.append(10, {"probs": end.astype(np.float32)})
    writer.close()
    (root / "probe_batch.json").write_text(json.dumps({"labels": labels.tolist(), "n_positions": N}))
    return root


@pytest.mark.parametrize(("toward", "expected"), [("m", "m_k"), ("g", "g_k")])
def test_known_target_is_found_with_the_same_epsilon(tmp_path, toward, expected):
    """Trained chunks reach their target exactly: r(target) = 1, the other's r < 1."""
    runs = [run_tracking(_write(tmp_path / f"s{s}", s, toward, amount=1.0), ALPHA, 0.0, f"s{s}") for s in range(3)]
    assert all(r.epsilon == EPS and r.measurable and r.step == 10 for r in runs)
    for r in runs:
        reached, other = (r.r_m, r.r_g) if toward == "m" else (r.r_g, r.r_m)
        assert reached == pytest.approx(1.0, abs=1e-6) and other < 1.0
    result = direction_tracking(runs, "forward")
    assert result.toward == expected and f"toward {expected} more than" in group_statement(result.figures())


def test_unmoved_readouts_are_not_measurable(tmp_path):
    runs = [run_tracking(_write(tmp_path / f"s{s}", s, "m", amount=1e-3), ALPHA, 0.1, f"s{s}") for s in range(3)]
    assert all(r.movement < MOVE_FLOOR and not r.measurable for r in runs)
    assert direction_tracking(runs, "forward").toward == "not measurable"
    assert direction_tracking(runs[:0], "reverse").toward == "not measurable"


def test_two_seeds_are_not_testable_and_missing_store_is_not_measured(tmp_path):
    runs = [run_tracking(_write(tmp_path / f"s{s}", s, "m"), ALPHA, 0.1, f"s{s}") for s in range(2)]
    assert direction_tracking(runs, "forward").toward == "not testable"
    with pytest.raises(NotMeasured, match="readouts"):
        run_tracking(tmp_path, ALPHA, 0.1)


def test_mixed_seeds_are_undecided(tmp_path):
    base = run_tracking(_write(tmp_path / "s", 0, "m"), ALPHA, 0.1)
    runs = [replace(base, run=f"s{i}", difference=d) for i, d in enumerate((-0.1, 0.12, 0.01))]
    result = direction_tracking(runs, "forward")
    assert result.toward == "undecided" and "without a detectable preference" in group_statement(result.figures())
