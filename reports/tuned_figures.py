"""Figures of a ``zerolock tune`` directory (docs/TUNED.md): what a reader looks at first.

* ``tuned_curves.png``: test-split CE against steps (left) and against measured training
  seconds (right) for each method at its chosen η_0: the mean over seeds, the band from the
  lowest to the highest seed, and backprop's mean CE at the budget as a dotted line;
* ``tuned_chunks.png``: every chunk's test-split CE over the run (readout of chunk k through the
  frozen final norm and head), one panel per method at its chosen η_0, mean over seeds: does
  ZeroLock improve the intermediate readouts while the final one gets worse?

``write_tuned_figures(out)`` reads the directory through ``analyses.versus.tuned.curves_table`` and
writes both PNGs into ``out/figures`` (created; the two files are replaced, nothing else).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from analyses.versus.tuned import curves_table
from analyses.versus.tuning import load_tuned

__all__ = ["chunk_figure", "curves_figure", "write_tuned_figures"]

COLORS = {"zerolock-forward": "#1f77b4", "zerolock-reverse": "#d62728", "backprop": "#2ca02c"}


def _band(frame: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    return frame.groupby("steps").agg(x=(x, "mean"), mean=(y, "mean"), low=(y, "min"), high=(y, "max")).reset_index()


def curves_figure(curves: pd.DataFrame) -> Figure:
    """Test CE against steps and against training seconds (module docstring)."""
    fig = Figure(figsize=(9.6, 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2, sharey=True)
    budget = curves["steps"].max()
    target = curves[(curves.method == "backprop") & (curves.steps == budget)]["test_ce"].mean()
    start = curves[curves.steps == curves["steps"].min()]["test_ce"].max()
    bottom = curves["test_ce"].min()
    top = start + 2.0 * max(start - bottom, 0.05)  # a method far above its start would hide the others
    for method, group in curves.groupby("method", sort=False):
        lr = group["lr"].iloc[0]
        seeds = group["seed"].nunique()
        peak = group["test_ce"].max()
        above = f"; above the axis at times, up to {peak:.3g}" if peak > top else ""
        for ax, x in zip(axes, ("steps", "train_seconds"), strict=True):
            band = _band(group, x, "test_ce")
            xs = band["steps"] if x == "steps" else band["x"]
            color = COLORS.get(method, "0.3")
            ax.fill_between(xs, band["low"], band["high"], color=color, alpha=0.2, lw=0)
            ax.plot(xs, band["mean"], color=color, lw=1.4,
                    label=f"{method}, eta_0 {lr:g} ({seeds} seed{'s' if seeds != 1 else ''}{above})")
    if curves["test_ce"].max() > top:
        axes[0].set_ylim(bottom - 0.05 * (top - bottom), top)
    for ax, label in zip(axes, ("steps", "measured training seconds (evaluation excluded)"), strict=True):
        if pd.notna(target):
            ax.axhline(target, color="#2ca02c", ls=":", lw=1, label="backprop's CE at the budget")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("held-out CE, test split (nats)")
    axes[0].legend(fontsize=7)
    fig.suptitle("Each method at its own best eta_0 (chosen on the validation split); band: range over seeds",
                 fontsize=9)
    return fig


def chunk_figure(curves: pd.DataFrame) -> Figure:
    """Every chunk's test CE over the run, one panel per method (module docstring)."""
    chunks = sorted((c for c in curves.columns if c.startswith("chunk_")), key=lambda c: int(c.split("_")[1]))
    methods = list(dict.fromkeys(curves["method"]))
    fig = Figure(figsize=(3.4 * len(methods), 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(methods), squeeze=False)[0]  # each its own range: one method may leave the others
    for ax, method in zip(axes, methods, strict=True):
        group = curves[curves.method == method]
        means = group.groupby("steps")[chunks].mean()
        for i, chunk in enumerate(chunks):
            shade = 0.25 + 0.75 * (i + 1) / len(chunks)
            ax.plot(means.index, means[chunk], color=(0.1, 0.2, 0.6, shade), lw=1.2,
                    label=f"chunk {chunk.split('_')[1]}" + (" (output)" if i == len(chunks) - 1 else ""))
        ax.set_title(f"{method}, eta_0 {group['lr'].iloc[0]:g}", fontsize=9)
        ax.set_xlabel("steps")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("held-out CE of each chunk's readout (nats)")
    axes[0].legend(fontsize=7)
    fig.suptitle("Every chunk's readout through the frozen head, test split, mean over seeds", fontsize=9)
    return fig


def write_tuned_figures(out: str | Path) -> list[Path]:
    """Both figures of a tune directory into ``out/figures``; raises ``ValueError`` without finished runs."""
    runs = load_tuned(out)
    if not runs:
        raise ValueError(f"{out}: no finished run yet")
    curves = curves_table(runs)
    if curves.empty:
        raise ValueError(f"{out}: no curves (no method has a finished grid yet)")
    folder = Path(out) / "figures"
    folder.mkdir(exist_ok=True)
    paths = []
    for name, fig in (("tuned_curves.png", curves_figure(curves)), ("tuned_chunks.png", chunk_figure(curves))):
        paths.append(folder / name)
        fig.savefig(paths[-1], dpi=130)
    return paths
