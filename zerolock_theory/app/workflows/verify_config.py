"""Verify recipes: a ``[suite]`` table of ``SuiteSpec`` sizes plus run-config tables.

A verify recipe (``verify_quick.toml``, ``verify_full.toml`` or a file of yours) holds

* ``[suite]``: the fields of ``SuiteSpec`` (steps, seq_len, batch_size, seeds, lr_grid,
  lr_factors, pilot_steps, sweep_steps, ...). They build the base config of every run
  (``base_config``: data.seq_len = suite.seq_len, run.steps = suite.steps, the probe cadences, ...).
* any run-config table (``[model]``, ``[data]``, ``[method]``, ``[optim]``, ``[run]``,
  ``[probes]``): merged key by key **on top of** that base config, so ``[data] seq_len = 64``
  or ``--set data.seq_len=64`` changes the runs' sequence length while ``suite.seq_len`` only
  sets the default. Each run's own settings (method, seed, η_0, the pilot's and sweep's steps)
  are applied last.

``--set suite.KEY=VALUE`` changes a suite field; any other ``--set`` a run-config key.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

from zerolock_theory.app.workflows.suite_spec import PRIMARY, SuiteSpec

__all__ = ["SUITE_KEYS", "load_suite", "spec_from_table"]

# ``probes`` is set through the [probes] table of the recipe, not inside [suite]
SUITE_KEYS = tuple(f.name for f in dataclasses.fields(SuiteSpec) if f.name != "probes")
_REQUIRED = tuple(f.name for f in dataclasses.fields(SuiteSpec)
                  if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)


def spec_from_table(table: Any, source: str = "[suite]") -> SuiteSpec:
    """A ``SuiteSpec`` from a ``[suite]`` table, type-checked, with one-line ``ValueError``s."""
    from zerolock_theory.config_types import check_value

    if not isinstance(table, dict):
        raise ValueError(f"{source} must be a table of suite settings")
    unknown = sorted(set(table) - set(SUITE_KEYS))
    if unknown:
        raise ValueError(f"unknown key(s) in [suite]: {unknown}; valid: {sorted(SUITE_KEYS)}")
    missing = [k for k in _REQUIRED if k not in table]
    if missing:
        raise ValueError(f"[suite] misses {missing} (start from 'zerolock recipes verify_full --out my.toml')")
    hints = typing.get_type_hints(SuiteSpec)
    values = {k: check_value(v, hints[k], f"suite.{k}") for k, v in table.items()}
    _check_sizes(values)
    return SuiteSpec(**values)


def _check_sizes(values: dict[str, Any]) -> None:
    """Ranges the type checker cannot see (one line each)."""
    positive = ("steps", "seq_len", "batch_size", "pilot_steps", "sweep_steps", "chunks", "eval_every",
                "probe_positions", "gradient_every", "stability_every", "minimizer_every", "readout_records")
    for key in positive:
        if values.get(key) is not None and values[key] < 1:
            raise ValueError(f"suite.{key}={values[key]}: must be >= 1")
    if not values["seeds"]:
        raise ValueError("suite.seeds=[]: needs at least one seed (a verdict needs >= 3)")
    if len(set(values["seeds"])) != len(values["seeds"]):
        raise ValueError(f"suite.seeds={list(values['seeds'])}: seeds must differ")
    if not values["lr_grid"] or any(lr <= 0 for lr in values["lr_grid"]):
        raise ValueError(f"suite.lr_grid={list(values['lr_grid'])}: needs at least one eta_0, all > 0")
    if any(f <= 0 for f in values["lr_factors"]):
        raise ValueError(f"suite.lr_factors={list(values['lr_factors'])}: factors must be > 0")
    if values.get("pilot_backoff") is not None and not 0 < values["pilot_backoff"] <= 1:
        raise ValueError(f"suite.pilot_backoff={values['pilot_backoff']}: must lie in (0, 1]")
    unknown = sorted(set(values.get("scaling_groups", ())) - set(PRIMARY))
    if unknown:
        raise ValueError(f"suite.scaling_groups: unknown group(s) {unknown}; valid: {list(PRIMARY)}")
    stages, micro = tuple(values.get("memory_stages", ())), values.get("memory_micro_batches", 4)
    if stages and (micro < max(stages) or values["batch_size"] % micro):
        raise ValueError(f"suite.memory_micro_batches={micro}: the memory runs need >= max(memory_stages) "
                         f"= {max(stages)} micro-batches (1F1B) that divide suite.batch_size={values['batch_size']}")
    if values.get("max_seeds", 20) < 3:
        raise ValueError(f"suite.max_seeds={values['max_seeds']}: must be >= 3 (a verdict needs 3 seeds)")
    if values.get("power_pilot_seeds", 3) < 2:
        raise ValueError(f"suite.power_pilot_seeds={values['power_pilot_seeds']}: must be >= 2 (the pilot's noise "
                         "is a median over its seeds)")
    if values.get("seeds_by_power") and max(values["seeds"]) + values.get("max_seeds", 20) >= 1000:
        raise ValueError(f"suite.seeds up to {max(values['seeds'])} with suite.max_seeds={values.get('max_seeds', 20)}"
                         ": the chosen seeds would reach the power pilot's seeds (1000 and up)")
    if values.get("lr") is not None and not values["lr"] > 0:
        raise ValueError(f"suite.lr={values['lr']}: must be > 0")


def load_suite(config: str | Path, overrides: list[str] | None = None, *, values: dict[str, Any] | None = None
               ) -> tuple[SuiteSpec, dict[str, Any]]:
    """The suite and the run-config tables of a verify recipe after ``values`` (typed, by dotted key:
    the command's shorthand flags), then ``overrides`` (``section.key=value`` text: ``--set``).

    Returns ``(spec, tables)``; ``tables`` go on top of ``base_config(spec, ...)`` (see
    ``verify(..., tables=...)``). Raises a one-line ``ValueError`` on bad input.
    """
    from zerolock_theory.config import read_recipe
    from zerolock_theory.config_overrides import apply_overrides, apply_values

    raw = apply_overrides(apply_values(read_recipe(config), dict(values or {})), list(overrides or []))
    if "suite" not in raw:
        raise ValueError(f"{config} has no [suite] table: not a verify recipe (try verify_quick or verify_full)")
    table = raw.pop("suite")
    return spec_from_table(table), raw
