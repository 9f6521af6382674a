"""Lemma 2 checks: the toy table, the on-model 2×2 movement table and the claim verdict."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from synthetic_runs import laid_out, minimizer_frame, write_run

from analyses.descriptive.movement import minimizer_table, toy_check
from analyses.io import load_run
from analyses.results import NotMeasured
from zerolock_theory.records import MINIMIZER


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


def _frames(direction, n, **kw):
    return [
        (direction, minimizer_frame(seed=10 * s + (direction == "reverse"), **kw)) for s in range(n)
    ]


TOWARD_M = {"tv_m": 0.3, "tv_g": 0.05, "move_m": 1.0}  # forward: distance to m_k falls
TOWARD_G = {"tv_m": 0.3, "tv_g": 0.05, "move_g": 1.0}  # reverse: distance to g_k falls
UNTRAINED = {"tv_m": 0.5, "tv_g": 0.09}  # levels of a fresh model, no movement


def test_two_by_two_table_measures_movement(runs):
    table = minimizer_table(runs, n_boot=200)
    assert {(c.trained, c.target) for c in table.cells} == {
        ("forward", "m"),
        ("forward", "g"),
        ("reverse", "m"),
        ("reverse", "g"),
    }
    fm, fg = table.cell("forward", "m"), table.cell("forward", "g")
    rm, rg = table.cell("reverse", "m"), table.cell("reverse", "g")
    # synthetic truth: the tracked distance shrinks by 1 + 1/(1+t), the other is flat
    for moving in (fm, rg):
        assert moving.kl_reduction.low > 0 and moving.tv_reduction.estimate > 0.2
        assert moving.tv_change.high < 0 and moving.kl_head.estimate > moving.kl.estimate
    for flat in (fg, rm):
        assert flat.tv_reduction.contains(0.0) or abs(flat.tv_reduction.estimate) < 0.05
    # head = first ceil(0.2*30) = 6 probed steps, tail = last 15, of 30 probed per run
    assert fm.n_runs == 2 and fm.n_head_steps == 2 * 6 and fm.n_steps == 2 * 15
    assert rg.n_runs == 1 and rg.n_steps == 15
    assert table.tracking_of("forward").toward == "m_k"
    assert table.tracking_of("reverse").toward == "g_k"
    contrast = table.contrast_of()
    assert contrast.measure == table.primary == "kl" and contrast.toward == "m_k"
    assert contrast.did.low > 0 and contrast.m_column.low > 0 and contrast.g_column.low > 0
    assert contrast.did.estimate == pytest.approx(
        contrast.m_column.estimate + contrast.g_column.estimate
    )
    assert table.contrast_of("tv").toward == "m_k"
    assert len([c for c in table.per_chunk if c.trained == "forward"]) == 3
    assert all(c.reduction["tv_m"] > 0.1 for c in table.per_chunk if c.trained == "forward")
    assert type(table).from_json(table.to_json()) == table


def test_relative_reduction_is_head_minus_tail_over_head():
    frame = laid_out(pd.DataFrame(
        {
            "step": range(10),
            **{MINIMIZER.key(1, m): [2.0] + [1.5] * 4 + [1.0] * 5 for m in ("tv_m", "kl_m_p")},
            **{MINIMIZER.key(1, m): [1.0] * 10 for m in ("tv_g", "kl_p_g")},
        }
    ), 1)
    table = minimizer_table([("forward", frame)], n_boot=20, head=0.1, tail=0.5)
    m, g = table.cell("forward", "m"), table.cell("forward", "g")
    assert m.kl_head.estimate == 2.0 and m.kl.estimate == 1.0
    assert m.kl_change.estimate == -1.0 and m.kl_reduction.estimate == 0.5
    assert g.tv_reduction.estimate == 0.0 and g.tv_reduction.low == g.tv_reduction.high == 0.0
    assert table.contrasts == [] and table.tracking_of("forward").toward == "m_k"


def test_forward_toward_m_and_reverse_toward_g_is_refuted():
    table = minimizer_table(
        _frames("forward", 3, **TOWARD_M) + _frames("reverse", 3, **TOWARD_G), n_boot=300
    )
    contrast = table.contrast_of()
    assert contrast.toward == "m_k" and contrast.did.low > 0


def test_forward_toward_g_is_supported():
    table = minimizer_table(
        _frames("forward", 3, **TOWARD_G) + _frames("reverse", 3, **TOWARD_M), n_boot=300
    )
    contrast = table.contrast_of()
    assert contrast.did.high < 0 and contrast.g_column.high < 0 and contrast.toward == "g_k"


def test_no_movement_is_inconclusive():
    flat = {"tv_m": 0.1, "tv_g": 0.1}
    table = minimizer_table(
        _frames("forward", 2, **flat) + _frames("reverse", 2, **flat), n_boot=300
    )
    assert table.contrast_of().did.contains(0.0) and table.contrast_of().toward == "undecided"


@pytest.mark.parametrize("noise", [0.0, 0.05])
def test_untrained_levels_without_movement_are_not_supported(noise):
    """TV to m_k 0.5 and to g_k 0.09 at every step: low TV to g_k is no evidence for g_k."""
    kw = {**UNTRAINED, "noise": noise}
    both = _frames("forward", 1, **kw) + _frames("reverse", 1, **kw)
    for runs in (both, both[:1]):
        table = minimizer_table(runs, n_boot=300)
        assert table.cell("forward", "m").tv.estimate == pytest.approx(0.5, rel=0.05)
        assert table.cell("forward", "g").tv.estimate == pytest.approx(0.09, rel=0.05)
        assert table.tracking_of("forward").toward != "g_k"


def test_forward_runs_only_fall_back_to_the_within_direction_difference():
    table = minimizer_table(_frames("forward", 2, **TOWARD_M), n_boot=300)
    assert table.contrasts == [] and table.tracking_of("forward").difference.low > 0


def test_single_runs_use_the_block_bootstrap_over_steps():
    table = minimizer_table(
        _frames("forward", 1, **TOWARD_M) + _frames("reverse", 1, **TOWARD_G), n_boot=300
    )
    cell = table.cell("forward", "m")
    assert cell.n_runs == 1 and cell.kl_reduction.low < cell.kl_reduction.high
    assert table.contrast_of().toward == "m_k"


def test_short_runs_are_counted_and_windows_checked():
    one = minimizer_frame(1)
    with pytest.raises(NotMeasured, match="2 probed steps"):
        minimizer_table([("forward", one)], n_boot=10)
    table = minimizer_table([("forward", one), ("forward", minimizer_frame(20))], n_boot=10)
    assert table.n_short == 1 and table.cell("forward", "m").n_runs == 1
    for bad in ({"head": 0.0}, {"head": 1.0}, {"tail": 0.0}, {"tail": 1.5}):
        with pytest.raises(ValueError):
            minimizer_table([("forward", one)], **bad)
    full = minimizer_table([("forward", minimizer_frame(20))], n_boot=10, tail=1.0)
    assert full.cell("forward", "m").n_head_steps + full.cell("forward", "m").n_steps == 20


def test_non_finite_values_are_dropped_and_counted(runs):
    direction, frame = runs[0]
    frame = frame.copy()
    frame.loc[frame.index[-1], "probe/minimizer/1/kl_p_g"] = math.inf
    frame.loc[frame.index[-2], "probe/minimizer/1/kl_p_g"] = math.inf
    table = minimizer_table([(direction, frame)], n_boot=20)
    cell = table.cell("forward", "g")
    assert table.n_nonfinite >= 1
    assert math.isfinite(cell.kl.estimate) and math.isfinite(cell.kl_reduction.estimate)


def test_no_probe_keys_is_not_measured():
    with pytest.raises(NotMeasured, match="probe/minimizer"):
        minimizer_table([("forward", laid_out(pd.DataFrame({"step": [0, 1]}), 3))])
