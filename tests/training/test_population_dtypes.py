"""A population in low precision equals its members' single runs (CPU, embedded model).

Two members against two separate runs, 4 steps, LoRA dropout on, the proof and stability probes:
with bfloat16 parameters (``model.dtype``) and with bfloat16 autocast over float32 parameters
(``model.autocast``: the stacked LoRA product's backward casts as the autocast forward did).
Every record value but the timings is held to 1e-5 relative (on our CPUs they are equal bit for
bit)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from probes.registry import build_probes
from tests.training.test_population_loop import METHODS, config
from zerolock_theory.records import STEP_TIME_S, TOKENS_PER_S
from zerolock_theory.training.logger import read_records
from zerolock_theory.training.loop import train
from zerolock_theory.training.population_loop import train_population

SEEDS = (0, 1)
PROBES = {"n_positions": 16, "epsilon": 0.1, "proof": {"every": 1}, "stability": {"every": 2}}


def _configs(method: str, **model):
    out = []
    for s in SEEDS:
        c = config(METHODS[method], s, PROBES, steps=4)
        out.append(dataclasses.replace(c, model=dataclasses.replace(c.model, **model)))
    return out


@pytest.mark.parametrize(("method", "model"), [
    ("forward", {"autocast": "bfloat16"}),
    pytest.param("backprop", {"autocast": "bfloat16"}, marks=pytest.mark.slow),
    pytest.param("forward", {"dtype": "bfloat16"}, marks=pytest.mark.slow),
])
def test_low_precision_population_equals_single_runs(tmp_path, method, model):
    configs = _configs(method, **model)
    outs = [tmp_path / f"member-{s}" for s in SEEDS]
    train_population(configs, outs, hooks=[build_probes(c.probes, c.probe_settings) for c in configs])
    compared = 0
    for c, out, s in zip(configs, outs, SEEDS, strict=True):
        single = tmp_path / f"single-{s}"
        train(c, single, hooks=build_probes(c.probes, c.probe_settings))
        for x, y in zip(read_records(out / "metrics.jsonl"), read_records(single / "metrics.jsonl"), strict=True):
            assert x.keys() == y.keys()
            for key in x.keys() - {STEP_TIME_S, TOKENS_PER_S}:
                if isinstance(x[key], float) and isinstance(y[key], float):
                    assert math.isclose(x[key], y[key], rel_tol=1e-5, abs_tol=1e-9), (x["step"], key, x[key], y[key])
                    compared += 1
                else:
                    assert x[key] == y[key], (x["step"], key)
    assert compared > 150
