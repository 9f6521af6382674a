"""The records contract: every quantity's keys round-trip, sizes come from the layout, the on-disk keys stay."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyses.io import RunDataError, layout, load_run, logged_chunks
from probes.registry import build_probes
from zerolock_theory import records
from zerolock_theory.config import TrainConfig
from zerolock_theory.records import (
    CHUNK,
    GRADIENT,
    MINIMIZER,
    PROOF,
    QUANTITIES,
    SCALING,
    SCALING_DIRECTIONS,
    STABILITY,
    Layout,
    with_layout,
)
from zerolock_theory.vocab import OBJECTIVES

FACTORS = st.lists(st.sampled_from([2.0**-i for i in range(9)] + [0.3, 0.75]), min_size=2, max_size=6, unique=True)
LAYOUTS = st.builds(
    Layout,
    chunks=st.integers(1, 12),
    objectives=st.sampled_from([OBJECTIVES, OBJECTIVES[:1], OBJECTIVES[1:]]),
    factors=FACTORS,
    directions=st.sampled_from([SCALING_DIRECTIONS[:1], SCALING_DIRECTIONS[:2], SCALING_DIRECTIONS]),
)


@settings(max_examples=60, deadline=None)
@given(layout=LAYOUTS, name=st.sampled_from(sorted(QUANTITIES)), steps=st.integers(1, 4), seed=st.integers(0, 2**16),
       holes=st.floats(0.0, 0.5))
def test_read_of_write_is_the_identity_for_every_quantity(layout, name, steps, seed, holes):
    """For each quantity, field and layout: arrays over the free axes written as records, one per
    step (with missing values), read back equal, NaN where a value was missing."""
    quantity = QUANTITIES[name]
    rng = np.random.default_rng(seed)
    for field in quantity.fields:
        shape = quantity.columns(layout, field).shape
        x = rng.normal(size=(steps, *shape))
        x[rng.random(x.shape) < holes] = np.nan
        rows = [{"step": t, **quantity.write(x[t], layout, field)} for t in range(steps)]
        back = quantity.read(pd.DataFrame(rows), layout, field)
        np.testing.assert_array_equal(back, x)


@settings(max_examples=30, deadline=None)
@given(layout=LAYOUTS, seed=st.integers(0, 2**16))
def test_fixed_coordinates_select_a_slice(layout, seed):
    """Reading with an objective and a direction fixed returns that slice of the full array."""
    rng = np.random.default_rng(seed)
    full = {(o, d): rng.normal(size=len(layout.factors)) for o in layout.objectives for d in layout.directions}
    rec = {"step": 0}
    for (o, d), values in full.items():
        rec.update(SCALING.write(values, layout, "phi", objective=o, direction=d))
    frame = pd.DataFrame([rec])
    for (o, d), values in full.items():
        np.testing.assert_array_equal(SCALING.read(frame, layout, "phi", objective=o, direction=d)[0], values)
    both = SCALING.read(frame, layout, "phi", direction=layout.directions[-1])
    assert both.shape == (1, len(layout.objectives), len(layout.factors))


def test_the_keys_on_disk_are_unchanged():
    """The key text is the file format (docs/SCHEMA.md): runs written before the records module still load."""
    assert STABILITY.key("paper", 2, "phi") == "probe/stability/paper/2/phi"
    assert STABILITY.key("implemented", "total", "q") == "probe/stability/implemented/total/q"
    assert SCALING.key("paper", 0.015625, "phi") == "probe/scaling/paper/c=0.015625/phi"
    assert SCALING.key("paper", 0.5, "drift", "antithetic") == "probe/scaling/paper/antithetic/c=0.5/drift"
    assert PROOF.key("implemented", "descent") == "probe/proof/implemented/descent"
    assert PROOF.key("implemented", "descent", 3) == "probe/proof/implemented/3/descent"
    assert MINIMIZER.key(0, "ce") == "probe/minimizer/0/ce"
    assert GRADIENT.key(None, "global_sq") == "probe/gradient/global_sq"
    assert GRADIENT.key(2, "cos") == "probe/gradient/2/cos"
    assert CHUNK.key(4, "loss") == "chunk/4/loss"
    assert records.initial(records.EVAL_CHUNK.key(1, "ce")) == "eval/chunk/1/ce_initial"


def test_a_defaulted_axis_is_free_until_fixed():
    """``part`` runs over chunks 1..K unless fixed (None: the total); ``direction`` over the run's directions."""
    assert GRADIENT.columns(Layout(2), "cos").tolist() == ["probe/gradient/1/cos", "probe/gradient/2/cos"]
    assert GRADIENT.columns(Layout(2), "global_sq", part=None).tolist() == "probe/gradient/global_sq"
    layout = Layout(1, objectives=("paper",), factors=(0.5, 1.0), directions=("actual", "random"))
    assert SCALING.columns(layout, "q").tolist() == [[["probe/scaling/paper/c=1.0/q", "probe/scaling/paper/random/c=1.0/q"],
                                                      ["probe/scaling/paper/c=0.5/q", "probe/scaling/paper/random/c=0.5/q"]]]


@pytest.mark.parametrize(("args", "error"), [
    (("paper", 1, "nope"), ValueError), (("other", 1, "phi"), ValueError), (("paper", -1, "phi"), ValueError),
    (("paper", True, "phi"), ValueError), (("paper", 1), TypeError), (("paper", 1, "phi", "x"), TypeError),
])
def test_a_key_outside_the_declaration_is_refused(args, error):
    with pytest.raises(error):
        STABILITY.key(*args)


def test_sizes_come_from_the_layout_not_the_columns():
    """A frame with columns for chunks 1..5 read under K = 3 gives 3 chunks; a missing chunk is
    NaN, and the quantity is then not present (a probe that ran writes every chunk)."""
    rec = {"step": 0, **{CHUNK.key(k, "ce"): float(k) for k in range(1, 6)}}
    frame = with_layout(pd.DataFrame([rec]), Layout(3))
    assert CHUNK.read(frame, layout(frame), "ce").tolist() == [[1.0, 2.0, 3.0]]
    assert logged_chunks(frame, CHUNK, "ce") == [1, 2, 3]
    wide = with_layout(frame.copy(), Layout(7))
    assert math.isnan(CHUNK.read(wide, layout(wide), "ce")[0, 6]) and logged_chunks(wide, CHUNK, "ce") == []


@pytest.mark.parametrize("options", [{}, {"factors": [0.25, 1.0]}, {"antithetic": False}, {"random_baseline": False},
                                     {"factors": [1.0, 0.5, 0.125], "random_baseline": False, "antithetic": True}])
def test_the_configs_layout_is_the_scaling_probes_own(options):
    """The config layer's axes (read by the analyses) are those the probe that writes them has."""
    config = TrainConfig.from_dict({"model": {"path": "embedded", "chunks": 3}, "probes": {"scaling": dict(options)}})
    (probe,) = build_probes(config.probes, config.probe_settings)
    assert config.layout() == Layout(3, factors=probe.factors, directions=probe.directions)


def test_a_frame_without_its_layout_is_an_error_naming_the_remedy():
    with pytest.raises(RunDataError, match="load_run"):
        layout(pd.DataFrame({"step": [0]}))


def test_the_layout_follows_the_typed_config(tmp_path):
    """K from model.chunks and the scaling probe's own factors (sorted) and directions."""
    config = TrainConfig.from_dict({"model": {"path": "embedded", "chunks": 5},
                                    "probes": {"scaling": {"factors": [0.25, 1.0], "antithetic": False}}})
    assert config.layout() == Layout(5, factors=(1.0, 0.25), directions=("actual", "random"))
    assert TrainConfig.from_dict({"model": {"path": "embedded", "chunks": 2}}).layout() == Layout(2)
    retired = {"model": {"path": "embedded", "chunks": 2}, "probes": {"retired_probe": {}, "scaling": {"enabled": False}}}
    assert TrainConfig.from_dict(retired).layout() == Layout(2)  # a probe this version lacks adds no axis
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text('{"model": {"path": "embedded", "chunks": 3}}')
    (run / "metrics.jsonl").write_text('{"step": 0, "chunk/3/ce": 1.0}\n')
    assert layout(load_run(run).metrics.iloc[:1].copy()) == Layout(3)  # kept through selections
    (run / "config.json").write_text('{"model": {"path": "embedded", "chunks": 0}}')
    with pytest.raises(RunDataError, match="config.json gives no layout"):
        layout(load_run(run).metrics)
