"""The scope line: what the verdicts are about, printed above them (report, CLI, README).

Model and size, data, steps, seeds, device, suite, interval level (``suite.settings`` may carry
``suite`` and ``model_size``, which ``zerolock verify`` fills in).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from reports.wording import fmt

__all__ = ["scope_line"]


def scope_line(suite) -> str:
    """One line: what the verdicts are about (module docstring)."""
    runs = suite.runs
    settings = suite.settings
    models = sorted({Path(r.model).name or "?" for r in runs}) or ["?"]
    size = settings.get("model_size")
    data = sorted({str(r.config.get("data", {}).get("source", "?")) for r in runs}) or ["?"]
    steps = Counter(r.last_step + 1 for r in runs).most_common(1)[0][0] if runs else 0
    seeds = len({r.seed for r in runs})
    devices = sorted({str(r.manifest.get("gpu") or r.manifest.get("device", "?")) for r in runs}) or ["?"]
    level = float(settings.get("level", 0.95))
    return (
        f"Scope: model {', '.join(models)}" + (f" ({size})" if size else "")
        + f"; data {', '.join(data)}; {steps} steps per run; {seeds} seed(s); device {', '.join(devices)}; "
        + f"suite {settings.get('suite', 'custom (zerolock analyze)')}; intervals {fmt(100 * level)}% "
        + "seed-level t-intervals (one statistic per seed)."
    )
