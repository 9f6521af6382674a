"""A population equals its members' single runs for the diagnosis's method controls (the frozen early
chunks, the un-detached twin with loss weights), each with Lemma 2's label-permutation null on."""

from __future__ import annotations

import pytest

from probes.registry import build_probes
from tests.training.test_population_loop import (
    METHODS,
    PROBES,
    SEEDS,
    _hooks,
    assert_same_run,
    config,
)
from zerolock_theory.training.loop import train
from zerolock_theory.training.population_loop import train_population

pytestmark = pytest.mark.slow  # a population of 2 and its single runs, 20 steps each, per case

NULL = {**PROBES, "lemma2": {"every": 10, "null": True}}  # Lemma 2 with its label-permutation null
CASES = {
    "frozen chunk 1": ({**METHODS["forward"], "frozen_chunks": [1]}, NULL),
    "un-detached twin, weights (0.5, 1)": ({**METHODS["forward"], "detach": False, "loss_weights": [0.5, 1.0]}, NULL),
}


@pytest.mark.parametrize("case", list(CASES))
def test_population_equals_single_runs(tmp_path, case):
    method, probes = CASES[case]
    configs = [config(method, s, probes) for s in SEEDS[:2]]
    outs = [tmp_path / "pop" / f"seed-{s}" for s in SEEDS[:2]]
    train_population(configs, outs, hooks=_hooks(configs))
    for c, out, s in zip(configs, outs, SEEDS, strict=False):
        train(c, tmp_path / f"single-{s}", hooks=build_probes(c.probes, c.probe_settings))
        assert assert_same_run(out, tmp_path / f"single-{s}") > 400
