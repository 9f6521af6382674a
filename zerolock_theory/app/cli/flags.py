"""Command-line flags generated from config fields: one source for name, type, help and default.

A command declares ``{flag: dotted field path}``; ``add_field_flags`` reads each field's
annotation, literal default and attribute docstring from the config's source
(``zerolock_theory.config_fields``, with ``ast``: nothing heavy is imported to build
``--help``) and adds ``--flag`` whose help is the docstring. Each value is parsed once, here
at the edge, by ``config_types.parse_text`` (``"3"`` → 3, ``"none"`` → None, ``"a,b"`` → a
list), and ``flag_values`` hands the typed values on, keyed by field path.
"""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Mapping
from typing import Any

from zerolock_theory.config_fields import field_spec
from zerolock_theory.config_types import parse_text

__all__ = ["PIPELINE_OPTIONS", "TRAIN_CONFIG", "FieldType", "add_field_flags", "field_type", "flag_values"]

TRAIN_CONFIG = ("zerolock_theory.config", "TrainConfig")
"""Module and class of the run config, the root of the dotted paths of ``zerolock train``."""
PIPELINE_OPTIONS = ("zerolock_theory.pipeline.options", "PipelineOptions")
"""Module and class of the pipeline options."""


class FieldType:
    """``argparse`` ``type=`` for one field; named after the field's type, so that a bad value
    reads ``invalid int value: '2.5'``."""

    def __init__(self, annotation: Any, key: str) -> None:
        self.annotation, self.key = annotation, key
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        base = inner[0] if typing.get_origin(annotation) in (typing.Union, types.UnionType) and inner else annotation
        self.__name__ = getattr(typing.get_origin(base) or base, "__name__", "value")

    def __call__(self, text: str) -> Any:
        return parse_text(text, self.annotation, self.key)


def field_type(root: tuple[str, str], path: str) -> FieldType:
    """The ``FieldType`` of the field at ``path`` under ``root`` (module, class)."""
    return FieldType(field_spec(*root, path).annotation, path)


def _show(value: Any) -> str:
    if value is None or value == []:
        return "none"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def add_field_flags(parser: argparse.ArgumentParser, root: tuple[str, str], flags: Mapping[str, str]) -> None:
    """``--flag`` for every ``flag: path`` (dest ``flag``; absent from the namespace unless given,
    so that ``--autocast none`` can set a field to null)."""
    for flag, path in flags.items():
        spec = field_spec(*root, path)
        kind: dict[str, Any] = {"type": FieldType(spec.annotation, path)}
        if typing.get_origin(spec.annotation) is typing.Literal:  # a closed vocabulary: argparse lists it
            kind = {"choices": typing.get_args(spec.annotation)}
        parser.add_argument(f"--{flag.replace('_', '-')}", dest=flag, default=argparse.SUPPRESS,
                            help=f"{spec.doc} [{path}, default: {_show(spec.default)}]", **kind)


def flag_values(args: argparse.Namespace, flags: Mapping[str, str]) -> dict[str, Any]:
    """``{path: value}`` for the flags given on the command line (already typed)."""
    return {path: getattr(args, flag) for flag, path in flags.items() if hasattr(args, flag)}
