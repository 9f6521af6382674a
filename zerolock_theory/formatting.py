"""Numbers in human-readable output: 4 significant digits."""

from __future__ import annotations

import math

__all__ = ["human"]


def human(value: float | None, digits: int = 4) -> str:
    """``5.260634899`` → ``5.261``; ``None`` → ``n/a``; infinities and NaN spelled out."""
    if value is None:
        return "n/a"
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}g}"
