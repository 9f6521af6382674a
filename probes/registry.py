"""Hook names → factories. The run config's ``[probes]`` table selects and configures them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zerolock_theory.training.hooks import Hook

__all__ = ["PROBES", "build_probes", "register"]

PROBES: dict[str, Callable[..., Hook]] = {}


def register(name: str) -> Callable[[Callable[..., Hook]], Callable[..., Hook]]:
    """Class decorator: make a probe available under ``name``."""

    def wrap(factory: Callable[..., Hook]) -> Callable[..., Hook]:
        PROBES[name] = factory
        return factory

    return wrap


def build_probes(table: dict[str, dict[str, Any]], shared: Any = None) -> list[Hook]:
    """Instantiate the probes named in ``table`` (``enabled = false`` skips one).

    ``shared`` (``config.ProbeSettings``, or None for the probes' own defaults) gives every
    probe that has the field its n_positions, seed and epsilon.
    """
    _load_builtin()
    out = []
    for name, options in table.items():
        options = dict(options)
        if shared is not None and name in PROBES:
            fields = getattr(PROBES[name], "__dataclass_fields__", {})
            for key in ("n_positions", "seed", "epsilon"):
                if key in fields and key not in options:
                    options[key] = getattr(shared, key)
        if not options.pop("enabled", True):
            continue
        if name not in PROBES:
            raise ValueError(f"unknown probe {name!r}; available: {sorted(PROBES)}")
        try:
            out.append(PROBES[name](**options))
        except TypeError as exc:
            raise ValueError(f"probe {name!r}: {exc}") from exc
    return out


def _load_builtin() -> None:
    """Import the modules that register the built-in probes."""
    import importlib

    for module in BUILTIN_MODULES:
        importlib.import_module(module)


BUILTIN_MODULES: tuple[str, ...] = (
    "probes.readout_probe", "probes.stability", "probes.minimizers", "probes.gradients", "probes.scaling",
    "probes.proof", "probes.lemma2", "probes.gradient_batch",
)
