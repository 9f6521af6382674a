"""Figures of the systems claims: the modelled throughput ratio over (K, m), the memory split.

Same conventions as ``reports/figures.py``: ``matplotlib.figure.Figure`` on the Agg canvas,
no pyplot state, built under the fixed rc settings (``render``), deterministic output when
saved with ``reports.figures.save_figure``. Each builder takes its analysis result and returns
``None`` when there is nothing to draw.
"""

from __future__ import annotations

from collections.abc import Callable

import matplotlib as mpl
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from analyses.systems.memory import SPLIT_PARTS, MemoryClaim
from analyses.systems.throughput import CLAIMED_THROUGHPUT_RATIO, ThroughputPrediction
from reports.style import COLORS, RC

__all__ = ["SYSTEMS_FIGURES", "memory_split_figure", "render", "throughput_ratio_figure"]


def _figure(ncols: int, width: float = 4.2, height: float = 3.6) -> tuple[Figure, list]:
    fig = Figure(figsize=(width * ncols, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, list(fig.subplots(1, ncols, squeeze=False)[0])


def throughput_ratio_figure(result: ThroughputPrediction | None) -> Figure | None:
    """One panel per model shape: ZeroLock ÷ 1F1B over (K, m), the contour of 1 and of the
    paper's 1.049 (hatched where the ratio reaches it), and the assumed setting marked."""
    if result is None or not result.cells:
        return None
    models = list(dict.fromkeys(c.model for c in result.cells))
    fig, axes = _figure(len(models))
    norm = TwoSlopeNorm(vcenter=1.0, vmin=min(0.5, min(c.ratio for c in result.cells)),
                        vmax=max(1.5, max(c.ratio for c in result.cells)))
    image = None
    for ax, model in zip(axes, models, strict=True):
        cells = [c for c in result.cells if c.model == model]
        Ks, ms = sorted({c.chunks for c in cells}), sorted({c.micro_batches for c in cells})
        grid = np.full((len(Ks), len(ms)), np.nan)
        for c in cells:
            grid[Ks.index(c.chunks), ms.index(c.micro_batches)] = c.ratio
        image = ax.pcolormesh(np.arange(len(ms) + 1), np.arange(len(Ks) + 1), grid, cmap="RdBu", norm=norm)
        centres = (np.arange(len(ms)) + 0.5, np.arange(len(Ks)) + 0.5)
        if np.nanmax(grid) >= CLAIMED_THROUGHPUT_RATIO and len(Ks) > 1 and len(ms) > 1:
            ax.contourf(*centres, grid, levels=[CLAIMED_THROUGHPUT_RATIO, np.inf], colors="none", hatches=["//"])
            ax.contour(*centres, grid, levels=[CLAIMED_THROUGHPUT_RATIO], colors="k", linewidths=1.0)
        if len(Ks) > 1 and len(ms) > 1 and np.nanmin(grid) < 1.0 < np.nanmax(grid):
            ax.contour(*centres, grid, levels=[1.0], colors="k", linewidths=0.8, linestyles="--")
        at = result.at_setting
        if at is not None and at.model == model:
            ax.plot(ms.index(at.micro_batches) + 0.5, Ks.index(at.chunks) + 0.5, marker="*", color="gold",
                    markeredgecolor="k", markersize=12, label=f"assumed setting: {at.ratio:.3f}")
            ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
        ax.set_xticks(centres[0], [str(m) for m in ms])
        ax.set_yticks(centres[1], [str(k) for k in Ks])
        ax.set_xlabel("micro-batches m")
        ax.set_ylabel("stages K")
        ax.set_title(model, fontsize=9)
        ax.grid(False)
    fig.colorbar(image, ax=axes, label="modelled throughput ZeroLock ÷ 1F1B")
    fig.suptitle(f"Schedule model ({result.variant}); solid: paper's {CLAIMED_THROUGHPUT_RATIO}, hatched above; "
                 "dashed: 1", fontsize=8)
    return fig


def memory_split_figure(result: MemoryClaim | None) -> Figure | None:
    """Stacked bars per K: the peak stage's memory by component, ZeroLock beside 1F1B (MiB)."""
    if result is None or not result.rows:
        return None
    fig, (ax,) = _figure(1, width=1.6 + 1.4 * len(result.rows))
    mib = 2.0 ** 20
    for i, row in enumerate(result.rows):
        for j, (label, split) in enumerate((("ZeroLock", row.zerolock_split), ("1F1B", row.baseline_split))):
            bottom = 0.0
            for n, part in enumerate(SPLIT_PARTS):
                value = split.get(part, 0.0) / mib
                ax.bar(2.5 * i + j, value, bottom=bottom, width=0.8, color=COLORS[n],
                       label=part if i == 0 and j == 0 else None)
                bottom += value
            ax.text(2.5 * i + j, bottom, label, ha="center", va="bottom", fontsize=6)
    ax.set_xticks([2.5 * i + 0.5 for i in range(len(result.rows))], [f"K = {r.chunks}" for r in result.rows])
    ax.set_ylabel("peak stage memory (MiB)")
    ax.set_title(f"ZeroLock ÷ 1F1B total {result.rows[-1].total.estimate:.3f} (paper {result.claimed_ratio:.3f})",
                 fontsize=8)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=3, frameon=False)
    return fig


SYSTEMS_FIGURES: dict[str, Callable] = {
    "systems_throughput": throughput_ratio_figure,
    "systems_memory": memory_split_figure,
}


def render(name: str, result: ThroughputPrediction | MemoryClaim | None) -> Figure | None:
    """Build one figure of ``SYSTEMS_FIGURES`` under the fixed rc settings."""
    with mpl.rc_context(RC):
        return SYSTEMS_FIGURES[name](result)
