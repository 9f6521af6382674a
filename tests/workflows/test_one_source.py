"""One source for every setting a side run shares with the runs (issue 50, item 4).

The fixed-point experiment, the memory runs and the tune read each shared setting from the runs'
own merged config (``side_runs.run_config``), so a ``--set`` of that key reaches them all. Each case
sets one key to a value other than its default and compares each side run's typed config with the
suite's reverse run's.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from zerolock_theory.app.workflows.side_runs import (
    SUITE_TUNE_KEYS,
    fixed_point_settings,
    memory_settings,
    run_config,
    tune_recipe,
)
from zerolock_theory.app.workflows.suite_spec import QUICK, suite_base
from zerolock_theory.app.workflows.systems import memory_config
from zerolock_theory.app.workflows.tune import grid_points, split_recipe
from zerolock_theory.app.workflows.verify_config import load_suite
from zerolock_theory.config import TrainConfig
from zerolock_theory.config_overrides import apply_values

CASES = [  # (--set key, value, how to read it from a TrainConfig, the side runs that use it)
    ("method.alpha", 0.9, lambda c: c.method.alpha, ("fixed_point", "tune")),
    ("suite.epsilon_reverse", 0.2, lambda c: c.method.epsilon, ("fixed_point", "tune")),
    ("model.chunks", 2, lambda c: c.model.chunks, ("fixed_point", "tune")),
    ("model.lora.rank", 4, lambda c: c.model.lora.rank, ("fixed_point", "memory", "tune")),
    ("data.seq_len", 48, lambda c: c.data.seq_len, ("fixed_point", "memory", "tune")),
    ("data.batch_size", 6, lambda c: c.data.batch_size, ("fixed_point", "tune")),
    ("model.dtype", "float64", lambda c: c.model.dtype, ("fixed_point", "memory", "tune")),
    ("data.text_field", "body", lambda c: c.data.text_field, ("fixed_point", "memory", "tune")),
    ("data.eval_fraction", 0.2, lambda c: c.data.eval_fraction, ("fixed_point", "memory")),
    ("data.seed", 3, lambda c: c.data.seed, ("fixed_point", "memory")),
    ("data.eval_batches", 2, lambda c: c.data.eval_batches, ("fixed_point",)),
]
"""The memory runs take the suite's batch (its micro-batches divide it) and no α or ε (a memory
accounting); the tune keeps its own splits (validation and test) and batches of held-out data."""


def _suite(key: str, value):
    spec, tables = load_suite("verify_quick", [f"{key}={value}"])
    dtype = tables.get("model", {}).get("dtype", "float32")
    return replace(spec, tune="tune_embedded"), suite_base(spec, "embedded", "embedded", "cpu", dtype, None, tables)


def _tune_reverse_config(spec, base) -> TrainConfig:
    tune_base, tune = split_recipe(tune_recipe(spec, base))
    point = next(p for p in grid_points(tune) if p.name.startswith("zerolock-reverse"))
    return TrainConfig.from_dict(apply_values(tune_base, dict(point.overrides)))


@pytest.mark.parametrize(("key", "value", "read", "users"), CASES, ids=[c[0] for c in CASES])
def test_a_set_key_reaches_every_side_run(key, value, read, users):
    spec, base = _suite(key, value)
    assert read(run_config(spec, base)) == value, f"the runs themselves do not take {key}"
    configs = {"fixed_point": fixed_point_settings(spec, base, 1).config(0),
               "memory": memory_config(memory_settings(spec, base), "zerolock", 2),
               "tune": _tune_reverse_config(spec, base)}
    for user in users:
        assert read(configs[user]) == value, f"{user} does not take {key}={value!r} from the runs"


def test_every_tune_key_is_checked():
    unchecked = {".".join(k) for k in SUITE_TUNE_KEYS} - {key for key, *_ in CASES}
    assert unchecked == {"model.path", "model.device", "model.autocast", "data.source", "run.steps", "model.lora"}


def test_the_fixed_point_runs_at_the_runs_alpha():
    """``--set method.alpha=0.9`` trains the runs at 0.9 and the fixed point at 0.9 (it read the suite's 0.5)."""
    spec, base = _suite("method.alpha", 0.9)
    assert spec.alpha == QUICK.alpha == 0.5  # the suite's own copy is unchanged, and no longer read
    settings = fixed_point_settings(spec, base, 1)
    assert settings.alpha == 0.9 and settings.config(0).method.alpha == 0.9
