"""Type-check plain config data against a dataclass's annotations, before construction.

TOML, YAML, JSON and ``--set`` overrides all produce plain values; ``check_section`` compares
each against its field's annotation (``int``, ``float``, ``bool``, ``str``, ``Literal``,
``X | None``, ``list[X]``, ``tuple[X, Y]``, ``tuple[X, ...]``, ``dict``, nested dataclasses) and raises a
one-line ``ValueError`` naming the key, the value and the expected type, e.g.
``run.steps=2.5: expected an integer``. Integers are accepted where a float is expected
(and converted); booleans are never numbers; floats must be finite.

``parse_text`` is the command line's edge: it turns a flag's text into a value of the field's
annotation (``"3"`` → 3, ``"none"`` → None for ``X | None``, ``"a,b"`` → ["a", "b"] for a list)
and checks it with ``check_value``, once.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from typing import Any, Literal, Union

__all__ = ["check_section", "check_value", "parse_text", "show_value"]

_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
_PLURAL = {int: "integers", float: "numbers", bool: "booleans", str: "strings"}


def show_value(value: Any) -> str:
    """A value as the user would type it (JSON where possible)."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _describe(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation in _NAMES:
        return _NAMES[annotation]
    if origin is Literal:
        return "one of " + ", ".join(show_value(a) for a in args)
    if origin in (Union, types.UnionType):
        parts = [_describe(a) for a in args if a is not type(None)]
        return " or ".join(parts) + (" or null" if type(None) in args else "")
    if origin is list:
        return f"a list of {_PLURAL.get(args[0], 'values')}" if args else "a list"
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return f"a list of {_PLURAL.get(args[0], 'values')}"
    if origin is tuple:
        return f"a list of {len(args)} numbers" if args else "a list"
    if origin is dict or annotation is dict:
        return "a table"
    if dataclasses.is_dataclass(annotation):
        return "a table of settings"
    return str(annotation)


class _Mismatch(Exception):
    """A value does not fit its annotation (turned into one line by ``check_value``)."""


def _convert(value: Any, annotation: Any, key: str) -> Any:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for option in (a for a in args if a is not type(None)):
            try:
                return _convert(value, option, key)
            except _Mismatch:
                continue
        raise _Mismatch
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise _Mismatch
    if annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _Mismatch
    if annotation is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
        raise _Mismatch
    if annotation is str:
        if isinstance(value, str):
            return value
        raise _Mismatch
    if origin is Literal:
        if value in args and type(value) in {type(a) for a in args}:
            return value
        raise _Mismatch
    if origin is list:
        if not isinstance(value, (list, tuple)):
            raise _Mismatch
        return [_convert(v, args[0], key) for v in value] if args else list(value)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:  # tuple[X, ...]: any length
        if not isinstance(value, (list, tuple)):
            raise _Mismatch
        return tuple(_convert(v, args[0], key) for v in value)
    if origin is tuple:
        if not isinstance(value, (list, tuple)) or (args and len(value) != len(args)):
            raise _Mismatch
        return tuple(_convert(v, a, key) for v, a in zip(value, args, strict=True)) if args else tuple(value)
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise _Mismatch
        return value
    if dataclasses.is_dataclass(annotation):
        if not isinstance(value, dict):
            raise _Mismatch
        return check_section(annotation, value, key)
    return value  # an annotation this checker does not know: left to __post_init__


def check_value(value: Any, annotation: Any, key: str) -> Any:
    """``value`` converted to ``annotation`` (ints to floats, lists to tuples), or ``ValueError``."""
    try:
        return _convert(value, annotation, key)
    except _Mismatch:
        raise ValueError(f"{key}={show_value(value)}: expected {_describe(annotation)}") from None


def check_section(cls: type, values: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Check every key of ``values`` against the fields of dataclass ``cls``; unknown keys raise."""
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    bad = sorted(set(values) - set(names))
    if bad:
        raise ValueError(f"unknown key(s) in [{prefix}]: {bad}; valid: {sorted(names)}")
    return {k: check_value(v, hints[k], f"{prefix}.{k}") for k, v in values.items()}


_BOOLS = {"true": True, "false": False}
_NULLS = ("none", "null")


def _from_text(text: str, annotation: Any) -> Any:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (Union, types.UnionType):
        if type(None) in args and text.strip().lower() in _NULLS:
            return None
        options = [a for a in args if a is not type(None)]
        for inner in options[:-1]:  # e.g. float | list[float]: "0.5" is a number, "0.5,1" a list
            try:
                return _from_text(text, inner)
            except ValueError:
                continue
        return _from_text(text, options[-1])
    if annotation in (int, float):
        return annotation(text)
    if annotation is bool:
        if text.strip().lower() not in _BOOLS:
            raise ValueError(f"expected true or false, got {text!r}")
        return _BOOLS[text.strip().lower()]
    if origin in (list, tuple):
        item = args[0] if args else str
        return [_from_text(part.strip(), item) for part in text.split(",") if part.strip()]
    return text


def parse_text(text: str, annotation: Any, key: str) -> Any:
    """A command-line string as a checked value of ``annotation`` (``ValueError`` otherwise)."""
    return check_value(_from_text(text, annotation), annotation, key)
