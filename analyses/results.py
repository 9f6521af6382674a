"""Result objects: frozen dataclasses that round-trip through JSON.

Every analysis returns a subclass of ``Result`` registered with ``@register``. ``to_json``
writes strict JSON in the package's one convention (``zerolock_theory.jsonio``): an undefined
value (NaN) is ``null`` and reads back as NaN where the field is a float; ``±inf`` are the
strings ``"inf"``/``"-inf"`` and read back exactly where the field is a float.
``load_result`` reloads a result from its ``kind`` field; the kinds are those of the imported
analysis modules (``analyses.suite`` imports them all).

A result the suite saves is named by a ``ResultKey``: its file name (``analysis/NAME.json``)
and its type, declared once by the family that computes it (``declare``). Rules and reports
fetch a result by its key and get that type back, never by a string; a ``ResultFamily`` names
results computed once per chunk (the fixed-point experiment).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from zerolock_theory.jsonio import dumps, from_json_float, loads, to_json_value

__all__ = [
    "VERDICTS",
    "Interval",
    "NotMeasured",
    "Result",
    "ResultFamily",
    "ResultKey",
    "declare",
    "declare_family",
    "declared_keys",
    "decode",
    "load_result",
    "register",
    "registered_kinds",
]

VERDICTS: tuple[str, ...] = ("supported", "refuted", "inconclusive", "not testable", "not measured")
# Theorem 1's bound test and its controls (analyses.theorem1.convergence, analyses.registry):
VERDICTS += ("consistent", "not consistent", "not testable at this horizon", "test not calibrated")
# (a row of the verdict table, ``Verdict``, is in analyses.verdict)

R = TypeVar("R", bound="Result")
_REGISTRY: dict[str, type[Result]] = {}


class NotMeasured(Exception):
    """The data an analysis needs is absent or undefined; ``str(exc)`` is the reason."""


@dataclass(frozen=True)
class ResultKey(Generic[R]):
    """A saved result's name and type (module docstring); ``builtin``: written by the suite itself,
    before the rows' own analyses, so no row may register an analysis under its name."""

    name: str
    kind: type[R]
    builtin: bool = False

    def check(self, found: object) -> R | None:
        """``found`` as this key's type (None stays None); ``TypeError`` for another type (a rule
        reading the wrong key: a programming error, not missing data)."""
        if found is not None and not isinstance(found, self.kind):
            raise TypeError(f"result {self.name!r} is a {type(found).__name__}, not a {self.kind.__name__}")
        return found


@dataclass(frozen=True)
class ResultFamily(Generic[R]):
    """Results of one type computed once per chunk, named ``PREFIX{k}``."""

    prefix: str
    kind: type[R]

    def of(self, chunk: int) -> ResultKey[R]:
        """The key of chunk ``chunk``'s result."""
        return ResultKey(f"{self.prefix}{chunk}", self.kind, builtin=True)

    def owns(self, name: str) -> bool:
        """Whether ``name`` is one chunk's result of this family."""
        return name.startswith(self.prefix) and name[len(self.prefix):].isdigit()


_KEYS: dict[str, ResultKey | ResultFamily] = {}


def declare(name: str, kind: type[R], *, builtin: bool = False) -> ResultKey[R]:
    """Declare the result ``name`` of type ``kind`` (once per name; ``TypeError`` for a name declared
    with another type)."""
    key = ResultKey(name, kind, builtin)
    if _KEYS.get(name, key) != key:
        raise TypeError(f"result {name!r} is already declared as {_KEYS[name]}")
    _KEYS[name] = key
    return key


def declare_family(prefix: str, kind: type[R]) -> ResultFamily[R]:
    """Declare a per-chunk family of results (``ResultFamily``)."""
    family = ResultFamily(prefix, kind)
    if _KEYS.get(prefix, family) != family:
        raise TypeError(f"result family {prefix!r} is already declared as {_KEYS[prefix]}")
    _KEYS[prefix] = family
    return family


def declared_keys() -> tuple[ResultKey | ResultFamily, ...]:
    """Every declared key and family of the imported analysis modules, by name."""
    return tuple(_KEYS[name] for name in sorted(_KEYS))


def register(cls: type[R]) -> type[R]:
    """Class decorator: make ``cls`` reloadable by ``load_result`` under ``cls.kind``."""
    kind = cls.__dict__.get("kind")
    if not isinstance(kind, str) or not kind:
        raise TypeError(f"{cls.__name__} must define a class attribute 'kind'")
    if kind in _REGISTRY and _REGISTRY[kind] is not cls:
        raise TypeError(f"result kind {kind!r} is already registered")
    _REGISTRY[kind] = cls
    return cls


def _lookup(kind: object) -> type[Result] | None:
    """The class registered under ``kind`` (by an imported analysis module), else ``None``."""
    return _REGISTRY.get(kind) if isinstance(kind, str) else None


def registered_kinds() -> tuple[str, ...]:
    """Kinds known to ``load_result`` (the result classes of the imported modules), sorted."""
    return tuple(sorted(_REGISTRY))


def _encode(value: Any) -> Any:
    if isinstance(value, Result):
        out = {"kind": value.kind}
        out.update({f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)})
        return out
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    value = to_json_value(value)
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise TypeError(f"cannot encode {type(value).__name__} as JSON")
    return value


def decode(tp: Any, value: Any) -> Any:
    """A value of type ``tp`` rebuilt from its plain (JSON or ``dataclasses.asdict``) form."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return decode(inner, value)
    if origin in (list, tuple):
        args = typing.get_args(tp)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return tuple(decode(a, v) for a, v in zip(args, value, strict=True))
        items = [decode(args[0] if args else Any, v) for v in value]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        kt, vt = typing.get_args(tp)
        key = kt if kt in (int, float) else (lambda k: k)  # JSON keys are text: numbers come back as numbers
        return {key(k): decode(vt, v) for k, v in value.items()}
    if tp is float:
        return from_json_float(value)
    if isinstance(tp, type) and issubclass(tp, Result):
        cls = _lookup(value.get("kind")) if tp is Result else tp
        if cls is None:
            raise ValueError(f"unknown result kind {value.get('kind')!r}")
        return cls.from_dict(value)
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        fields = {f.name for f in dataclasses.fields(tp)}
        return tp(**{k: decode(hints[k], v) for k, v in value.items() if k in fields})
    return value


@dataclass(frozen=True)
class Result:
    """Base of every analysis result: ``to_json`` / ``from_json`` / ``save`` / ``load_result``."""

    kind: ClassVar[str] = "result"

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-safe dict with a ``kind`` field."""
        return _encode(self)

    def to_json(self, indent: int | None = 2) -> str:
        """Strict JSON text (no NaN / Infinity tokens)."""
        return dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls: type[R], data: dict[str, Any]) -> R:
        """Rebuild from ``to_dict`` output; the base class dispatches on ``kind``."""
        target = (_lookup(data.get("kind")) or cls) if cls is Result else cls
        if target is Result:
            raise ValueError(f"unknown result kind {data.get('kind')!r}")
        if data.get("kind") != target.kind:
            raise ValueError(f"expected kind {target.kind!r}, got {data.get('kind')!r}")
        hints = typing.get_type_hints(target)
        names = {f.name for f in dataclasses.fields(target)}
        return target(**{k: decode(hints[k], v) for k, v in data.items() if k in names})

    @classmethod
    def from_json(cls: type[R], text: str) -> R:
        """Inverse of ``to_json``."""
        return cls.from_dict(loads(text))

    def save(self, path: str | Path) -> Path:
        """Write ``to_json()`` to ``path`` (parents created); return the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path


def load_result(path_or_text: str | Path) -> Result:
    """Reload any registered result from a JSON file path or JSON text."""
    text = str(path_or_text)
    if not text.lstrip().startswith("{"):
        text = Path(path_or_text).read_text(encoding="utf-8")
    data = loads(text)
    kind = data.get("kind") if isinstance(data, dict) else None
    cls = _lookup(kind)
    if cls is None:
        raise ValueError(f"unknown result kind {kind!r} (known: {', '.join(registered_kinds())})")
    return cls.from_dict(data)


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided interval ``[low, high]`` at ``level``."""

    estimate: float
    low: float
    high: float
    level: float = 0.95

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def __str__(self) -> str:
        return f"{self.estimate:.3g} [{self.low:.3g}, {self.high:.3g}]"
