"""Flags generated from config fields: every field documented, help = docstring, typed values."""

from __future__ import annotations

import argparse
import dataclasses
import math

import pytest

from zerolock_theory.app.cli import build_parser
from zerolock_theory.app.cli.flags import (
    PIPELINE_OPTIONS,
    TRAIN_CONFIG,
    add_field_flags,
    flag_values,
)
from zerolock_theory.app.cli.pipeline import OPTION_FLAGS
from zerolock_theory.app.cli.train import FLAGS, config_from_args
from zerolock_theory.config import (
    LoraSettings,
    MethodConfig,
    ModelConfig,
    OptimConfig,
    ProbeSettings,
    RunConfig,
    TrainConfig,
)
from zerolock_theory.config_fields import SectionRef, class_fields, field_spec
from zerolock_theory.data_config import DataConfig
from zerolock_theory.pipeline.options import PipelineOptions

CLASSES = [(LoraSettings, "zerolock_theory.config"), (ModelConfig, "zerolock_theory.config"),
           (MethodConfig, "zerolock_theory.config"), (OptimConfig, "zerolock_theory.config"),
           (RunConfig, "zerolock_theory.config"), (TrainConfig, "zerolock_theory.config"),
           (ProbeSettings, "zerolock_theory.probe_config"), (DataConfig, "zerolock_theory.data_config"), (PipelineOptions, "zerolock_theory.pipeline.options")]


@pytest.mark.parametrize(("cls", "module"), CLASSES, ids=[c.__name__ for c, _ in CLASSES])
def test_every_field_has_a_docstring_and_the_ast_view_matches_the_class(cls, module):
    specs = class_fields(module, cls.__name__)
    fields = dataclasses.fields(cls)
    assert list(specs) == [f.name for f in fields]
    for f in fields:
        assert specs[f.name].doc, f"{cls.__name__}.{f.name} has no docstring"
        if f.default is not dataclasses.MISSING:
            assert specs[f.name].default == f.default, f.name
        elif not isinstance(specs[f.name].annotation, SectionRef):
            assert specs[f.name].default == f.default_factory(), f.name


def test_sections_are_followed_across_modules():
    assert field_spec(*TRAIN_CONFIG, "data.seq_len").default == DataConfig().seq_len
    assert field_spec(*TRAIN_CONFIG, "model.lora.rank").annotation is int
    with pytest.raises(ValueError, match="no field"):
        field_spec(*TRAIN_CONFIG, "run.bogus")


def _subparser(name: str) -> argparse.ArgumentParser:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


@pytest.mark.parametrize(("command", "root", "flags"), [("train", TRAIN_CONFIG, FLAGS),
                                                        ("pipeline", PIPELINE_OPTIONS, OPTION_FLAGS)])
def test_help_is_the_field_docstring(command, root, flags):
    helps = {a.dest: a.help for a in _subparser(command)._actions}
    for flag, path in flags.items():
        doc = field_spec(*root, path).doc.replace("``", "")
        assert helps[flag].startswith(doc.split(":mod:")[0]), flag
        assert f"[{path}, default: " in helps[flag]


def test_values_are_parsed_once_to_the_field_types(tmp_path):
    argv = ["train", "--out", str(tmp_path), "--steps", "7", "--lr", "0.25", "--autocast", "none",
            "--report-to", "tensorboard, wandb", "--data-seed", "3", "--set", "run.steps=9"]
    args = build_parser().parse_args(argv)
    assert flag_values(args, FLAGS) == {"run.steps": 7, "optim.lr": 0.25, "model.autocast": None,
                                        "run.report_to": ["tensorboard", "wandb"], "data.seed": 3}
    config = config_from_args(args)
    assert config.run.steps == 9 and config.optim.lr == 0.25 and config.data.seed == 3  # --set wins
    assert config.run.report_to == ["tensorboard", "wandb"] and config.model.autocast is None


@pytest.mark.parametrize(("argv", "message"), [(["--steps", "2.5"], "invalid int value: '2.5'"),
                                               (["--lr", "nan"], "invalid float value: 'nan'"),
                                               (["--lr", "x"], "invalid float value: 'x'")])
def test_bad_values_fail_at_the_edge(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["train", "--out", "r", *argv])
    assert info.value.code == 2 and message in capsys.readouterr().err


def test_pipeline_option_flags():
    parser = argparse.ArgumentParser()
    add_field_flags(parser, PIPELINE_OPTIONS, OPTION_FLAGS)
    args = parser.parse_args(["--comm-timeout", "5", "--fail-stage", "2", "--micro-batches", "4"])
    values = flag_values(args, OPTION_FLAGS)
    assert values == {"comm_timeout_s": 5.0, "fail_stage": 2, "micro_batches": 4}
    assert isinstance(values["comm_timeout_s"], float) and not math.isnan(values["comm_timeout_s"])
    assert PipelineOptions.from_dict({**values, "fail_at_step": 1}).comm_timeout_s == 5.0
