"""Lemma 2 checks: the toy table and the on-model 2×2 table (analyses.minimizers)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from synthetic_runs import write_run

from analyses.io import load_run
from analyses.minimizers import minimizer_table, toy_check
from analyses.results import NotMeasured


def test_toy_check_matches_the_review():
    toy = toy_check(alpha=0.5)
    hard, smooth = toy.rows
    assert hard.epsilon == 0.0 and hard.kl_p_py == math.inf
    assert hard.ce_py_p == pytest.approx(math.log(2))
    assert hard.g == [1.0, 0.0] and hard.m == [0.75, 0.25]
    assert hard.reverse_loss == math.inf and math.isfinite(hard.forward_loss)
    assert hard.tv_m_g == pytest.approx(0.25)
    assert math.isfinite(smooth.kl_p_py) and smooth.p_y == pytest.approx([0.95, 0.05])
    assert smooth.m == pytest.approx([0.725, 0.275])
    assert sum(smooth.g) == pytest.approx(1.0) and smooth.tv_m_g > 0
    assert toy.minimizers_differ
    assert type(toy).from_json(toy.to_json()) == toy


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("minimizers")
    fwd = [load_run(write_run(root, f"f{s}", seed=s, steps=60)).metrics for s in range(2)]
    rev = load_run(write_run(root, "r", direction="reverse", tracks="g", steps=60)).metrics
    return [("forward", f) for f in fwd] + [("reverse", rev)]


def test_two_by_two_table_and_tracking(runs):
    table = minimizer_table(runs, n_boot=200)
    assert {(c.trained, c.target) for c in table.cells} == {
        ("forward", "m"),
        ("forward", "g"),
        ("reverse", "m"),
        ("reverse", "g"),
    }
    assert table.tracking_of("forward").tracks == "m_k"
    assert table.tracking_of("reverse").tracks == "g_k"
    fm, fg = table.cell("forward", "m"), table.cell("forward", "g")
    assert fm.tv.estimate < fg.tv.estimate and fm.kl.estimate < fg.kl.estimate
    assert fm.n_runs == 2 and fm.n_steps == 2 * 15  # tail half of 30 probed steps, 2 runs
    assert len([c for c in table.per_chunk if c.trained == "forward"]) == 3


def test_equal_distances_are_undecided():
    frame = pd.DataFrame(
        {
            "step": range(20),
            **{
                f"probe/minimizer/1/{m}": [0.1 + 0.01 * (i % 3) for i in range(20)]
                for m in ("tv_m", "tv_g", "kl_m_p", "kl_p_g")
            },
        }
    )
    assert (
        minimizer_table([("forward", frame)], n_boot=50).tracking_of("forward").tracks
        == "undecided"
    )


def test_non_finite_values_are_dropped_and_counted(runs):
    direction, frame = runs[0]
    frame = frame.copy()
    frame.loc[frame.index[-1], "probe/minimizer/1/kl_p_g"] = math.inf
    frame.loc[frame.index[-2], "probe/minimizer/1/kl_p_g"] = math.inf
    table = minimizer_table([(direction, frame)], n_boot=20)
    assert table.n_nonfinite >= 1 and math.isfinite(table.cell("forward", "g").kl.estimate)


def test_no_probe_keys_is_not_measured():
    with pytest.raises(NotMeasured, match="probe/minimizer"):
        minimizer_table([("forward", pd.DataFrame({"step": [0, 1]}))])
