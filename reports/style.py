"""The figures' shared style: fixed rc settings, metadata left out of saved files, colours."""

from __future__ import annotations

__all__ = ["COLORS", "METADATA", "RC"]

RC = {
    "svg.hashsalt": "zerolock-theory",
    "svg.fonttype": "path",
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
}
METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")
