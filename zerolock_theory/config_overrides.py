"""Dotted keys and tables on plain config data, before it is typed.

A recipe, a ``--set section.key=value`` and a suite's own settings are all nested plain data
(dicts of dicts) until ``TrainConfig.from_dict`` types them. ``apply_overrides`` sets
``section.key=value`` strings (values parsed as JSON by ``parse_value``), ``apply_values`` sets
dotted keys to typed values, and ``merge_tables`` merges one set of tables on top of another.
Each returns a new dict and leaves its input alone.
"""

from __future__ import annotations

import json
from typing import Any

from zerolock_theory.probe_config import RETIRED_PROBE_KEYS

__all__ = ["apply_overrides", "apply_values", "merge_tables", "parse_value"]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def parse_value(text: str) -> Any:
    """Parse an override value: JSON when it parses (numbers, true, null, lists), else a string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _set_dotted(node: dict[str, Any], key: str, value: Any, what: str) -> None:
    """``node[a][b] = value`` for ``key = "a.b"`` (sections created as needed)."""
    _require("." in key, f"{what} must look like section.key=value")
    *path, leaf = key.split(".")
    for part in path:
        node = node.setdefault(part, {})
        _require(isinstance(node, dict), f"{what}: {part} is not a section")
    node[leaf] = value


def apply_values(raw: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """Set dotted keys (``"optim.lr"``) to typed values in a copy of nested plain data."""
    out = json.loads(json.dumps(raw))
    for key, value in values.items():
        _set_dotted(out, key, value, key)
    return out


def apply_overrides(raw: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``section.key=value`` overrides (values parsed as JSON) to nested plain data (returns a new dict)."""
    out = json.loads(json.dumps(raw))
    for item in overrides:
        key, sep, value = item.partition("=")
        _require(bool(sep), f"override {item!r} must look like section.key=value")
        retired = key.split(".")[-1] if key.startswith("probes.") else None
        _require(retired not in RETIRED_PROBE_KEYS,
                 f"override {item!r}: {key} is a retired setting: {RETIRED_PROBE_KEYS.get(retired or '')}; drop it")
        _set_dotted(out, key, parse_value(value), f"override {item!r}")
    return out


def merge_tables(base: dict[str, Any], tables: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``tables`` merged in key by key (nested tables merged, values replaced); a new dict."""
    out = dict(base)
    for key, value in tables.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_tables(out[key], value)
        else:
            out[key] = value
    return out
