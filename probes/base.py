"""The defaults every probe shares: the hook protocol's optional calls as no-ops.

A probe (``zerolock_theory.training.hooks.Hook``) subclasses ``Probe`` and writes only what
it needs: ``after_step`` always, ``on_start`` / ``on_end`` when it keeps something across
steps, ``on_checkpoint`` when what it wrote must be durable at a checkpoint, ``before_step`` when it
must see ω^t before the update (it is left undefined here: the loop calls it only on hooks
that define it).
"""

from __future__ import annotations

from typing import Any

from zerolock_theory.training.hooks import HookContext

__all__ = ["AtIterateProbe", "Probe"]


class Probe:
    """Default no-op hooks; a resumed probe recomputes what it needs in ``on_start``."""

    def on_start(self, ctx: HookContext) -> None:
        """Nothing to prepare."""

    def on_checkpoint(self, ctx: HookContext, step: int) -> None:
        """Nothing to make durable."""

    def on_end(self, ctx: HookContext) -> None:
        """Nothing to release."""


class AtIterateProbe(Probe):
    """A probe that measures at ω^t every ``every`` steps and logs the values with step t, as
    ``train/grad_norm_sq`` does: measured in ``after_step(t-1)`` (``on_start`` for the first
    record, recomputed on resume) and returned by ``after_step(t)``. Subclasses set ``every`` and
    define ``_measure(ctx, t)``."""

    every: int
    pending: dict[str, Any]
    total_steps: int

    def _due(self, t: int) -> bool:
        return t < self.total_steps and t % self.every == 0

    def _measure(self, ctx: HookContext, t: int) -> dict[str, Any]:
        raise NotImplementedError

    def on_start(self, ctx: HookContext) -> None:
        """Measure at ω^{start} for the first record (recomputed on resume)."""
        self.total_steps = ctx.config.run.steps
        start = ctx.start_step
        self.pending = self._measure(ctx, start) if self._due(start) else {}

    def after_step(self, ctx: HookContext, step: int, metrics: dict[str, Any]) -> dict[str, Any]:
        """Log the values at ω^t; measure at ω^{t+1} when due for the next record."""
        out, self.pending = self.pending, {}
        if self._due(step + 1):
            self.pending = self._measure(ctx, step + 1)
        return dict(out)

    def on_end(self, ctx: HookContext) -> None:
        """Drop a pending measurement."""
        self.pending = {}
