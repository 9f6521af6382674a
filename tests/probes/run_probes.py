"""What the probe tests on short real runs share: a test-only probe that crashes once, and the training part
of a run's metrics records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from probes.registry import register
from zerolock_theory.training.loop import TIMING_KEYS


@register("crash_once")
@dataclass
class CrashOnce:
    """Test-only probe: raise once in ``after_step(at_step)``, as a crash or a kill would."""

    name: ClassVar[str] = "crash_once"
    at_step: int = 3

    def on_start(self, ctx) -> None:
        pass

    def after_step(self, ctx, step, metrics) -> dict[str, Any]:
        marker = ctx.run_dir / "crashed"
        if step == self.at_step and not marker.exists():
            marker.write_text("simulated")
            raise RuntimeError("simulated crash")
        return {}

    def on_checkpoint(self, ctx, step) -> None:
        pass

    def on_end(self, ctx) -> None:
        pass


def training_view(records: list[dict]) -> list[dict]:
    """``records`` without their timings and probe values: what a probe must leave unchanged."""
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS and not k.startswith("probe/")} for r in records]
