"""Config fields read from source with ``ast``: type, default and attribute docstring.

The config dataclasses document each field with an attribute docstring (the string literal
right after the field). ``field_spec("zerolock_theory.config", "TrainConfig", "optim.lr")``
follows the dotted path through nested sections (classes of the same module, or names the
module imports with ``from X import Name``) and returns the field's resolved annotation, its
literal default and its docstring, without importing the module: building ``--help`` from
``PipelineOptions`` must not import torch.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any, Literal, Union

__all__ = ["FieldSpec", "SectionRef", "class_fields", "field_spec", "resolve_annotation"]

ROOT = Path(__file__).resolve().parent.parent
"""The directory that holds the ``zerolock_theory`` package."""

_NAMES: dict[str, Any] = {"int": int, "float": float, "str": str, "bool": bool, "Any": Any,
                          "None": type(None), "list": list, "tuple": tuple, "dict": dict, "Literal": Literal}


@dataclass(frozen=True)
class SectionRef:
    """A nested config section: class ``name`` of module ``module``."""

    module: str
    name: str


@dataclass(frozen=True)
class FieldSpec:
    """One dataclass field: annotation (a typing object or ``SectionRef``), default, docstring.

    ``default`` is ``dataclasses.MISSING`` when it is not a literal (a section's factory).
    """

    name: str
    annotation: Any
    default: Any
    doc: str


@functools.cache
def _tree(module: str) -> ast.Module:
    path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _locate(module: str, name: str) -> SectionRef | None:
    """Where class ``name`` visible in ``module`` is defined (following ``from X import``)."""
    for node in _tree(module).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return SectionRef(module, name)
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if any((alias.asname or alias.name) == name for alias in node.names):
                return _locate(node.module, name)
    return None


def _alias(module: str, name: str) -> tuple[ast.expr, str] | None:
    """The value of a type alias ``name = Literal[...]`` visible in ``module`` (following
    ``from X import``), with the module that defines it."""
    for node in _tree(module).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == name):
            return node.value, module
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if any((alias.asname or alias.name) == name for alias in node.names):
                return _alias(node.module, name)
    return None


def resolve_annotation(node: ast.expr, module: str) -> Any:
    """A typing object for an annotation's ``ast`` (``int | None``, ``list[str]``, a section)."""
    if isinstance(node, ast.Constant) and node.value is None:
        return type(None)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return resolve_annotation(ast.parse(node.value, mode="eval").body, module)
    if isinstance(node, ast.Name):
        if node.id in _NAMES:
            return _NAMES[node.id]
        ref = _locate(module, node.id)
        if ref is None:
            alias = _alias(module, node.id)
            if alias is None:
                raise ValueError(f"{module}: unknown annotation {node.id!r}")
            return resolve_annotation(*alias)
        return ref
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return Union[resolve_annotation(node.left, module), resolve_annotation(node.right, module)]  # noqa: UP007
    if isinstance(node, ast.Subscript):
        origin = resolve_annotation(node.value, module)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if origin is Literal:
            return Literal[tuple(ast.literal_eval(i) for i in items)]
        args = tuple(... if isinstance(i, ast.Constant) and i.value is Ellipsis
                     else resolve_annotation(i, module) for i in items)
        return origin[args] if len(args) > 1 else origin[args[0]]
    raise ValueError(f"{module}: unsupported annotation {ast.unparse(node)!r}")


def _default(node: ast.expr | None) -> Any:
    """A field's literal default; ``field(default_factory=list)`` → []; otherwise missing."""
    if node is None:
        return MISSING
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "field":
        for kw in node.keywords:
            if kw.arg == "default":
                return _default(kw.value)
            if kw.arg == "default_factory" and isinstance(kw.value, ast.Name):
                return {"list": [], "dict": {}}.get(kw.value.id, MISSING)
        return MISSING
    try:
        return ast.literal_eval(node)
    except ValueError:
        return MISSING


@functools.cache
def class_fields(module: str, name: str) -> dict[str, FieldSpec]:
    """The annotated fields of class ``name`` in ``module``, in order, with their docstrings."""
    ref = _locate(module, name)
    if ref is None:
        raise ValueError(f"{module}: no class {name!r}")
    (cls,) = [n for n in _tree(ref.module).body if isinstance(n, ast.ClassDef) and n.name == name]
    out: dict[str, FieldSpec] = {}
    body = cls.body
    for i, node in enumerate(body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        after = body[i + 1] if i + 1 < len(body) else None
        doc = ""
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
            doc = " ".join(after.value.value.split())
        field_name = node.target.id
        out[field_name] = FieldSpec(field_name, resolve_annotation(node.annotation, ref.module),
                                    _default(node.value), doc)
    return out


def field_spec(module: str, name: str, dotted: str) -> FieldSpec:
    """The field at ``dotted`` (``"model.lora.rank"``) under class ``name`` of ``module``."""
    *sections, leaf = dotted.split(".")
    for part in sections:
        annotation = class_fields(module, name)[part].annotation
        if not isinstance(annotation, SectionRef):
            raise ValueError(f"{dotted}: {part} is not a section")
        module, name = annotation.module, annotation.name
    fields = class_fields(module, name)
    if leaf not in fields:
        raise ValueError(f"{dotted}: no field {leaf!r} in {name}")
    return fields[leaf]
