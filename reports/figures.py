"""Figures of a ``SuiteAnalysis``: matplotlib (Agg), deterministic PNG and SVG.

Each builder takes the suite and returns a ``Figure`` or ``None`` when its analysis is absent.
No pyplot and no global backend change: figures are ``matplotlib.figure.Figure`` objects
drawn with the Agg canvas under fixed rc settings. Output is byte-identical across renders:
PNG without the ``Software`` tag, SVG without ``Date``/``Creator`` and with a fixed
``svg.hashsalt``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib as mpl
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from analyses.assumption5.scaling import SCALING
from analyses.descriptive.depth import DEPTH, DepthSet
from analyses.descriptive.drift import DRIFT
from analyses.descriptive.movement import MINIMIZERS, MinimizerTable
from analyses.descriptive.outcome import OUTCOME, OutcomeComparison
from analyses.suite import SuiteAnalysis
from analyses.systems.memory import MEMORY
from analyses.systems.throughput import THROUGHPUT
from analyses.versus.tuned_versus import TUNED
from reports.style import COLORS, METADATA, RC
from reports.systems_figures import memory_split_figure, throughput_ratio_figure
from reports.theorem1 import convergence_figure
from reports.wording import drift_line
from zerolock_theory.vocab import OBJECTIVES

__all__ = ["FIGURES", "RC", "render_figure", "render_figures", "save_figure"]



def _figure(ncols: int, width: float = 4.2, height: float = 3.4) -> tuple[Figure, list]:
    fig = Figure(figsize=(width * ncols, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def palette(suite: SuiteAnalysis) -> dict[str, str]:
    """One colour per configuration (run group), the same in every figure: groups in sorted order."""
    groups = sorted({r.group for r in suite.runs})
    return {g: COLORS[i % len(COLORS)] for i, g in enumerate(groups)}


def short_labels(suite: SuiteAnalysis) -> dict[str, str]:
    """Group → a short label: its method/direction and the settings that differ between groups."""
    keys = {r.key.label: r.key for r in suite.runs}
    differ = [f for f in SHORT_FIELDS if len({_setting(k, f) for k in keys.values()}) > 1]
    return {label: " ".join([k.head] + [s for f in differ if (s := _setting(k, f)) is not None])
            for label, k in sorted(keys.items())}


SHORT_FIELDS = ("optimizer", "lr", "schedule", "chunks", "alpha", "epsilon", "model")


def _setting(key, name: str) -> str | None:
    """One setting of a group key as its label token (``lr=0.1``); None where the label has none."""
    if name in ("alpha", "epsilon") and key.method != "zerolock":
        return None
    value = getattr(key, name)
    prefix = {"lr": "lr=", "chunks": "K=", "alpha": "alpha=", "epsilon": "eps="}.get(name, "")
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return prefix + (Path(text).name if name == "model" else text)


def _group_of(suite: SuiteAnalysis) -> dict[str, str]:
    return {r.name: r.group for r in suite.runs}


def _legend_outside(ax) -> None:
    """The legend below the axes, never over the data."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.22), borderaxespad=0.0, frameon=False)


def _objective_name(obj: str) -> str:
    return "R (paper)" if obj == "paper" else "R̄ (implemented)"


def stability_figure(suite: SuiteAnalysis) -> Figure | None:
    """c·ρ(c) against the step factor c (log–log), median over steps per seed: line = median over
    seeds, band = range over seeds, per group; references: flat (ρ first order, log ρ slope −1)
    and ∝ c (ρ bounded, log ρ slope 0)."""
    fits = [r for o in OBJECTIVES if (r := suite.get(SCALING[o])) is not None]
    if not fits:
        return None
    colors, names = palette(suite), short_labels(suite)
    fig, axes = _figure(len(fits), width=4.6, height=4.6)
    for ax, fit in zip(axes, fits, strict=True):
        for group in fit.groups:
            c = np.asarray(group.seeds[0].factors)
            rows = np.array([[np.nan if v is None else v for v in s.c_rho] for s in group.seeds], dtype=float)
            ok = np.isfinite(rows) & (rows > 0)
            if not ok.any():
                continue
            rows = np.where(ok, rows, np.nan)
            color = colors.get(group.group, COLORS[0])
            mid = np.nanmedian(rows, axis=0)
            ax.fill_between(c, np.nanmin(rows, axis=0), np.nanmax(rows, axis=0), color=color, alpha=0.2, lw=0)
            ax.plot(c, mid, color=color, marker="o", ms=3, lw=1.2, label=f"{names.get(group.group, group.group)} ({len(group.seeds)} seeds)")
            anchor = mid[np.isfinite(mid)][0]
            ax.plot(c, np.full_like(c, anchor), color="0.3", ls="--", lw=0.8)
            ax.plot(c, anchor * c / c[0], color="0.3", ls=":", lw=0.8)
        ax.plot([], [], color="0.3", ls="--", lw=0.8, label="flat: rho first order (log rho slope -1)")
        ax.plot([], [], color="0.3", ls=":", lw=0.8, label="∝ c: rho bounded (log rho slope 0)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"Assumption 5 by step scaling, {_objective_name(fit.objective)}", fontsize=8)
        ax.set_xlabel("step factor c (omega^t + c·Δomega_t)")
        ax.set_ylabel("c·rho(c), median over scaled steps")
        _legend_outside(ax)
    return fig


def along_figure(suite: SuiteAnalysis) -> Figure | None:
    """Assumption 5 along the run, what the row decides: each seed's block means of ρ_t against
    t + 1 (log–log; hollow: the burn-in block, left out of γ's fit), per objective's primary group,
    with the growth a positive first-order drift gives, ρ_t ∝ (t+1)^(κ/2), and no growth (flat)."""
    fits = [r for o in OBJECTIVES if (r := suite.get(SCALING[o])) is not None]
    fits = [(fit, fit.groups[0]) for fit in fits if fit.groups and fit.groups[0].along is not None]
    if not any(s.blocks for _, group in fits for s in group.along.seeds):
        return None
    fig, axes = _figure(len(fits), width=4.6, height=4.6)
    for ax, (fit, group) in zip(axes, fits, strict=True):
        along = group.along
        drawn = []
        for j, seed in enumerate(along.seeds):
            points = np.array([(t, r) for t, r in seed.blocks if r > 0 and np.isfinite(r)])
            if not len(points):
                continue
            color = COLORS[j % len(COLORS)]
            ax.plot(points[:, 0], points[:, 1], color=color, marker="o", ms=3.5, lw=1.0,
                    label=f"{seed.run} (gamma {seed.gamma:.2g})" if np.isfinite(seed.gamma) else seed.run)
            ax.plot(points[:1, 0], points[:1, 1], marker="o", ms=6, mfc="white", mec=color, ls="none")
            drawn.append(points)
        if drawn and np.isfinite(along.kappa):
            allp = np.concatenate(drawn)
            t = np.geomspace(allp[:, 0].min(), allp[:, 0].max(), 20)
            anchor = float(np.exp(np.median(np.log(allp[:, 1]))))
            middle = float(np.exp(np.log(t).mean()))
            ax.plot(t, anchor * (t / middle) ** (along.kappa / 2), color="0.3", ls=":", lw=1.0,
                    label=f"(t+1)^(kappa/2): a positive first-order drift (kappa {along.kappa:.2g})")
            ax.plot(t, np.full_like(t, anchor), color="0.3", ls="--", lw=0.8, label="flat: no growth")
        interval = "" if along.gamma is None else f"; gamma {along.gamma.estimate:.2g} [{along.gamma.low:.2g}, {along.gamma.high:.2g}]"
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"Assumption 5 along the run, {_objective_name(fit.objective)}: {along.outcome}{interval}",
                     fontsize=8)
        ax.set_xlabel("t + 1 (block geometric mean; hollow: burn-in, not fitted)")
        ax.set_ylabel("block mean of rho_t")
        _legend_outside(ax)
    return fig


def drift_figure(suite: SuiteAnalysis) -> Figure | None:
    """D_T = Σ φ_t⁺ (solid), Σ q_t (dashed) and signed Σ φ_t (dotted) against T, per run."""
    checks = [r for o in OBJECTIVES if (r := suite.get(DRIFT[o])) is not None]
    if not checks:
        return None
    colors, groups, names = palette(suite), _group_of(suite), short_labels(suite)
    fig, axes = _figure(len(checks), width=4.6, height=4.6)
    for ax, check in zip(axes, checks, strict=True):
        for run in check.runs:
            color = colors.get(groups.get(run.run, ""), COLORS[0])
            ax.plot(run.steps, run.d, color=color, lw=1.1)
            ax.plot(run.steps, run.q, color=color, lw=1.0, ls="--")
            ax.plot(run.steps, run.s, color=color, lw=0.8, ls=":")
        ax.plot([], [], color=colors.get(check.group, COLORS[0]), label=names.get(check.group, check.group))
        for ls, what in (("-", "D_T = sum max(phi_t, 0)"), ("--", "sum q_t"), (":", "signed sum phi_t")):
            ax.plot([], [], color="0.3", ls=ls, label=what)
        ax.set_xlabel("step T")
        ax.set_ylabel("cumulative sum over probed steps")
        ax.set_title(f"Drift check, {_objective_name(check.objective)}\n{drift_line(len(check.runs), check.d_exponent, check.q_exponent)}", fontsize=7)
        _legend_outside(ax)
    return fig


def depth_figure(suite: SuiteAnalysis) -> Figure | None:
    """Final task CE by chunk for every run, and CE_k over training for the first run."""
    depth = suite.get(DEPTH)
    if not isinstance(depth, DepthSet):
        return None
    colors, groups, names = palette(suite), _group_of(suite), short_labels(suite)
    fig, (left, right) = _figure(2, width=4.6, height=4.4)
    seen: set[str] = set()
    for prof in depth.profiles:
        group = groups.get(prof.run, prof.run)
        left.plot(prof.chunks, prof.final_ce, marker="o", lw=1, color=colors.get(group, COLORS[0]),
                  label=None if group in seen else names.get(group, group))
        seen.add(group)
    left.set_xticks(sorted({k for p in depth.profiles for k in p.chunks}))
    left.set_xlabel("chunk k")
    left.set_ylabel("CE(e_y, p_k), final")
    left.set_title(f"Proposition 1: final CE by chunk, all {len(depth.profiles)} runs", fontsize=8)
    _legend_outside(left)
    first = depth.profiles[0]
    for j, (k, values) in enumerate(zip(first.chunks, first.ce, strict=True)):
        right.plot(first.ce_steps, values, color=COLORS[j % len(COLORS)], lw=1, label=f"k={k}")
    right.set_xlabel("step")
    right.set_ylabel("CE(e_y, p_k)")
    right.set_title(f"CE by chunk over training ({first.run})", fontsize=8)
    _legend_outside(right)
    return fig


def outcome_figure(suite: SuiteAnalysis) -> Figure | None:
    """Mean held-out CE of the final chunk over training, ZeroLock (solid) and backprop (dashed)."""
    outcome = suite.get(OUTCOME)
    if not isinstance(outcome, OutcomeComparison):
        return None
    colors = palette(suite)
    fig, (ax,) = _figure(1, width=6.0, height=4.4)
    for group in outcome.groups:
        ls = "--" if group.method == "backprop" else "-"
        ax.plot(
            group.steps,
            group.mean_ce,
            ls=ls,
            lw=1.2,
            color=colors.get(group.group, COLORS[0]),
            label=short_labels(suite).get(group.group, group.group),
        )
    ax.set_xlabel("step")
    ax.set_ylabel("held-out CE(e_y, p_K)")
    ax.set_title("Outcome: eval/ce, ZeroLock vs backprop")
    _legend_outside(ax)
    return fig


def _tuned_curves(suite: SuiteAnalysis):
    """The tuned comparison's curves as a frame, or None without a tuned comparison."""
    import pandas as pd

    from analyses.versus.tuned_versus import TunedVersus

    tuned = suite.get(TUNED)
    return pd.DataFrame(list(tuned.curves)) if isinstance(tuned, TunedVersus) and tuned.curves else None


def versus_figure(suite: SuiteAnalysis) -> Figure | None:
    """The versus row's figure: test CE against steps and seconds of each method at its own best η_0
    (``reports.tuned_figures.curves_figure``); the suite's untuned outcome curves without a tune."""
    from reports.tuned_figures import curves_figure

    curves = _tuned_curves(suite)
    return outcome_figure(suite) if curves is None else curves_figure(curves)


def tuned_chunks_figure(suite: SuiteAnalysis) -> Figure | None:
    """Every chunk's test CE over the run, each method at its own best η_0 (``chunk_figure``)."""
    from reports.tuned_figures import chunk_figure

    curves = _tuned_curves(suite)
    return None if curves is None else chunk_figure(curves)


def minimizers_figure(suite: SuiteAnalysis) -> Figure | None:
    """The 2×2 table as bars: relative reduction to m_k and g_k per trained direction."""
    table = suite.get(MINIMIZERS)
    if not isinstance(table, MinimizerTable):
        return None
    fig, axes = _figure(2)
    directions = sorted({c.trained for c in table.cells})
    x = np.arange(len(directions))
    for ax, metric in zip(axes, ("kl", "tv"), strict=True):
        for j, target in enumerate(("m", "g")):
            cells = [table.cell(d, target) for d in directions]
            ivs = [c.reduction(metric) for c in cells]
            vals = np.array([iv.estimate for iv in ivs])
            err = np.array([[v - iv.low, iv.high - v] for v, iv in zip(vals, ivs, strict=True)]).T
            ax.bar(
                x + (j - 0.5) * 0.38,
                vals,
                0.36,
                yerr=np.clip(np.nan_to_num(err), 0.0, None),
                capsize=3,
                color=COLORS[j],
                label=f"to {target}_k",
            )
        ax.axhline(0.0, color="0.3", lw=0.8)
        ax.set_xticks(x, [f"trained {d}" for d in directions])
        ax.set_ylabel("relative reduction of " + ("KL (m‖p or p‖g)" if metric == "kl" else "TV"))
        contrast = table.contrast_of(metric)
        extra = f"\nDiD {contrast.did}" if contrast is not None else ""
        ax.set_title(f"Lemma 2: {metric.upper()} (head - tail)/head{extra}", fontsize=8)
        ax.legend(fontsize=7)
    return fig


FIGURES: dict[str, Callable[[SuiteAnalysis], Figure | None]] = {
    "convergence": convergence_figure,
    "stability": stability_figure,
    "along": along_figure,
    "drift": drift_figure,
    "depth": depth_figure,
    "outcome": outcome_figure,
    "versus": versus_figure,
    "tuned_chunks": tuned_chunks_figure,
    "minimizers": minimizers_figure,
    # the systems rows: the memory split and the modelled throughput ratio over (K, m)
    "systems_memory": lambda suite: memory_split_figure(suite.get(MEMORY)),
    "systems_throughput": lambda suite: throughput_ratio_figure(suite.get(THROUGHPUT)),
}


def save_figure(fig: Figure, path: Path, fmt: str) -> Path:
    """Save ``fig`` as ``fmt`` ("png" or "svg") without dates or software versions."""
    with mpl.rc_context(RC):
        fig.savefig(path, format=fmt, metadata=METADATA[fmt])
    return path


def render_figure(name: str, suite: SuiteAnalysis) -> Figure | None:
    """Build one figure of ``FIGURES`` under the fixed rc settings."""
    with mpl.rc_context(RC):
        return FIGURES[name](suite)


def render_figures(
    suite: SuiteAnalysis, out_dir: str | Path, formats: Sequence[str] = ("png", "svg")
) -> dict[str, dict[str, Path]]:
    """Write every available figure as ``out_dir/NAME.FMT``; return ``{name: {fmt: path}}``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, dict[str, Path]] = {}
    for name in FIGURES:
        fig = render_figure(name, suite)
        if fig is None:
            continue
        written[name] = {fmt: save_figure(fig, out / f"{name}.{fmt}", fmt) for fmt in formats}
    return written
