"""Every run and side run of every packaged suite follows ``--device`` and the dtype flags.

No GPU is needed: the configs are built as ``zerolock verify`` builds them and inspected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from zerolock_theory.app.cli import build_parser
from zerolock_theory.app.cli.verify import _suite
from zerolock_theory.app.workflows.sensitivity import setting_points, settings_of
from zerolock_theory.app.workflows.side_runs import fixed_point_settings, memory_settings
from zerolock_theory.app.workflows.suite_spec import PRIMARY, suite_base, suite_points
from zerolock_theory.app.workflows.systems import METHODS, memory_backend, memory_config
from zerolock_theory.app.workflows.verify import pilot_points
from zerolock_theory.config import TrainConfig
from zerolock_theory.config_overrides import apply_values
from zerolock_theory.recipes import list_recipes

SUITES = [name for name in list_recipes() if name.startswith("verify_")]


def _strings(node: Any, path: str = "") -> list[tuple[str, str]]:
    """Every string value of nested plain data, with its dotted path."""
    if isinstance(node, dict):
        return [x for k, v in node.items() for x in _strings(v, f"{path}.{k}" if path else str(k))]
    if isinstance(node, (list, tuple)):
        return [x for i, v in enumerate(node) for x in _strings(v, f"{path}[{i}]")]
    return [(path, node)] if isinstance(node, str) else []


def _suite_configs(argv: list[str]) -> tuple[list[dict[str, Any]], list[Any]]:
    """The run configs (as plain data) and the side-run settings ``zerolock verify argv`` would build."""
    args = build_parser().parse_args(["verify", "--out", "unused", *argv])
    spec, tables = _suite(args)
    device = str(tables.get("model", {}).get("device", "auto"))
    plans = []
    if spec.variants:
        for setting in settings_of(spec):
            plans.append((setting.spec, setting_points(setting)))
    else:
        pilots = [pilot_points(spec, lr, label) for label in PRIMARY for lr in spec.lr_grid]
        plans.append((spec, [*pilots, *suite_points(spec)]))
    runs, sides = [], []
    for sub, points in plans:
        base = suite_base(sub, "embedded", "embedded", device, "float32", None, tables)
        runs += [TrainConfig.from_dict(apply_values(base, dict(p.overrides))).to_dict() for p in points]
        for chunk in sub.fixed_point_chunks:
            fixed = fixed_point_settings(sub, base, chunk)
            sides.append(fixed)
            runs.append(fixed.config(fixed.first_seed).to_dict())
        if sub.memory_stages:
            memory = memory_settings(sub, base)
            sides.append(memory)
            runs += [memory_config(memory, m, K).to_dict() for m in METHODS for K in memory.stages]
    return runs, sides


@pytest.mark.parametrize("suite", SUITES)
def test_every_run_and_side_run_of_a_suite_follows_device_cuda(suite: str):
    runs, sides = _suite_configs(["--config", suite, "--device", "cuda"])
    assert runs
    for config in runs:
        assert config["model"]["device"] == "cuda"
        left = [(path, value) for path, value in _strings(config) if value == "cpu"]
        assert not left, f"{suite}: {left}"
    for settings in sides:
        assert settings.device == "cuda", settings


@pytest.mark.parametrize("suite", SUITES)
def test_the_dtype_flags_reach_every_run_and_side_run(suite: str):
    runs, sides = _suite_configs(["--config", suite, "--dtype", "bfloat16", "--autocast", "float16"])
    for config in runs:
        assert (config["model"]["dtype"], config["model"]["autocast"]) == ("bfloat16", "float16")
    for settings in sides:
        assert (settings.dtype, settings.autocast) == ("bfloat16", "float16")


def test_auto_stays_auto_for_the_side_runs():
    """``auto`` reaches the side runs as ``auto`` and resolves where they run, as for the runs."""
    _, sides = _suite_configs(["--quick"])
    assert sides and all(s.device == "auto" for s in sides)


def test_memory_runs_share_one_gpu_through_gloo():
    """NCCL refuses two ranks on one device: stages without a GPU of their own use gloo."""
    assert memory_backend("cpu", 2) == "gloo"
    assert memory_backend("cuda", 64) == "gloo"  # never 64 GPUs here


def test_no_command_defaults_to_cpu():
    """Every ``--device`` flag of every command defaults to auto (or to the recipe's value, whose
    default is auto)."""
    import argparse

    parser = build_parser()
    found = []
    for action in parser._subparsers._group_actions[0].choices.values():
        stack = [action]
        while stack:
            p = stack.pop()
            for a in p._actions:
                if "--device" in a.option_strings:
                    found.append(a.default)
                if a.__class__.__name__ == "_SubParsersAction":
                    stack += list(a.choices.values())
    assert found and all(d in (None, "auto", argparse.SUPPRESS) for d in found), found


def test_benchmarks_default_to_auto():
    """The benchmarks' ``--device`` flags default to auto, never to cpu."""
    root = Path(__file__).resolve().parents[2] / "benchmarks"
    for script in root.glob("*.py"):
        text = script.read_text()
        assert 'add_argument("--device", default="cpu")' not in text, script.name


def _commands():
    """(name, parser) of every command and sub-command."""
    import argparse

    stack = [("zerolock", build_parser())]
    while stack:
        name, parser = stack.pop()
        yield name, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack += [(f"{name} {sub}", p) for sub, p in action.choices.items()]


def test_one_dtype_vocabulary_in_every_command():
    """--dtype is the parameter dtype and --autocast the autocast dtype wherever they appear."""
    seen = set()
    for name, parser in _commands():
        for action in parser._actions:
            if "--dtype" in action.option_strings:
                seen.add(name)
                assert "arameter dtype" in action.help, (name, action.help)
                assert "autocast" not in action.help.lower(), (name, action.help)
            if "--autocast" in action.option_strings:
                assert "utocast dtype" in action.help, (name, action.help)
    assert {"zerolock train", "zerolock verify", "zerolock probe fixed-point"} <= seen


def test_verify_dtype_is_the_parameter_dtype():
    """``verify --dtype bfloat16`` means bf16 parameters, as in ``train``; ``--autocast`` the compute dtype."""
    runs, _ = _suite_configs(["--quick", "--dtype", "bfloat16"])
    assert {(r["model"]["dtype"], r["model"]["autocast"]) for r in runs} == {("bfloat16", None)}
    runs, _ = _suite_configs(["--quick", "--autocast", "bfloat16"])
    assert {(r["model"]["dtype"], r["model"]["autocast"]) for r in runs} == {("float32", "bfloat16")}
