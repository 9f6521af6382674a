"""The defaults every probe shares: the hook protocol's optional calls as no-ops.

A probe (``zerolock_theory.training.hooks.Hook``) subclasses ``Probe`` and writes only what
it needs: ``after_step`` always, ``on_start`` / ``on_end`` when it keeps something across
steps, ``on_checkpoint`` when it has state a resume cannot recompute, ``before_step`` when it
must see ω^t before the update (it is left undefined here: the loop calls it only on hooks
that define it).
"""

from __future__ import annotations

from typing import Any

from zerolock_theory.training.hooks import HookContext

__all__ = ["Probe"]


class Probe:
    """Default no-op hooks; ``on_checkpoint`` saves nothing (``on_start`` recomputes on resume)."""

    def on_start(self, ctx: HookContext) -> None:
        """Nothing to prepare."""

    def on_checkpoint(self, ctx: HookContext, step: int) -> dict[str, Any]:
        """Nothing to save: a resumed run recomputes what it needs in ``on_start``."""
        return {}

    def on_end(self, ctx: HookContext) -> None:
        """Nothing to release."""
