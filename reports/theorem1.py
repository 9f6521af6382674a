"""Theorem 1 in the report: the bound-test section and the convergence figure.

* ``convergence_blocks(suite)``: one table row per group and quantity (verdict, b with its
  seed-level interval, descriptive β, seeds, horizon), the controls and the diverged runs.
* ``convergence_figure(suite)``: B_T = Ā_T·√T/log(T+1) against T, each quantity's primary group
  and the logistic control normalised by its mean B_T over the last half, a band over seeds,
  and the references: the bound (flat, b = 0), a true 1/√T rate (∝ 1/log(T+1)) and a noise
  floor (∝ √T/log(T+1)).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from analyses.results import ResultKey
from analyses.theorem1.bound_set import (
    CONTROL_LOGISTIC,
    CONVERGENCE,
    DIVERGED,
    BoundSet,
    DivergedRuns,
)
from analyses.theorem1.claim_proof import DRIFT_BUDGET, GroupDrift
from analyses.theorem1.claim_rate import RATE, GroupRate
from analyses.theorem1.controls import RATE_CONTROLS, RateControls
from analyses.theorem1.convergence import BoundTest
from reports.blocks import Block

__all__ = ["CAPTION", "QUANTITIES", "convergence_blocks", "convergence_figure"]

CAPTION = (
    "Descriptive: Theorem 1's bound statistic B_T = A_T sqrt(T)/log(T+1) (A_T the running mean of the unbiased "
    "estimate G-hat_t), each primary group normalised by its mean over the last half; bands: range "
    "over seeds; grey: the bound (flat), a true 1/sqrt(T) rate and a noise floor."
)
QUANTITIES = (
    (CONVERGENCE["reverse"], "ZeroLock reverse (R)"),
    (CONVERGENCE["forward"], "ZeroLock forward (R-bar)"),
    (CONVERGENCE["backprop"], "backprop (control)"),
    (CONTROL_LOGISTIC, "logistic regression (control)"),
    (CONVERGENCE["global"], "global ||grad L||^2, ZeroLock forward (not Theorem 1)"),
    (CONVERGENCE["global_backprop"], "global ||grad L||^2, backprop (not Theorem 1)"),
)
LOCAL = (CONVERGENCE["reverse"], CONVERGENCE["forward"], CONVERGENCE["backprop"], CONTROL_LOGISTIC)
"""The bound tests of Theorem 1's local quantities and its control (the global ones are not Theorem 1's)."""
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


def _tests(suite) -> list[tuple[ResultKey, str, BoundTest, bool]]:
    """``(key, quantity, test, primary)`` for every bound test of the suite."""
    out = []
    for name, quantity in QUANTITIES:
        found = suite.get(name)
        if isinstance(found, BoundTest):
            out.append((name, quantity, found, True))
        elif isinstance(found, BoundSet):
            out.extend((name, quantity, t, i == found.primary) for i, t in enumerate(found.tests))
    return out


def _iv(x: Any) -> str:
    return "-" if x is None else str(x)


def _rate_rows(suite) -> list[list[str]]:
    """One row per rate description: ZeroLock's local G-hat_t by direction, and its shuffled control."""
    rows = []
    for direction, label in (("reverse", "local, reverse (R)"), ("forward", "local, forward (R-bar)")):
        found = suite.get(RATE[direction])
        if isinstance(found, GroupRate):
            for series, rate in (("as run", found.rate), ("shuffled (control)", found.shuffled)):
                noise = "-" if rate.noise is None else f"{rate.noise:.2g}"
                rows.append([label, found.group, series, rate.sentence, _iv(rate.decline_early),
                             _iv(rate.decline_late), _iv(rate.beta), _iv(rate.b), _iv(rate.bend),
                             _iv(rate.late_excess), noise, str(rate.seeds), str(rate.horizon)])
    return rows


def _drift_rows(suite) -> list[list[str]]:
    rows = []
    for direction in ("reverse", "forward"):
        found = suite.get(DRIFT_BUDGET[direction])
        if isinstance(found, GroupDrift):
            b = found.budget
            rows.append([found.objective, found.group, b.outcome, _iv(b.first_order), f"{b.s_first:.3g}",
                         _iv(b.share), _iv(b.signed), str(b.seeds), str(b.horizon)])
    return rows


def _not_passed(check: Any, description: Any) -> str:
    """A control that read "not testable" because the run is shorter than the rate rule's minimum is
    limited by the horizon, not failed: say so; any other miss is a plain NO."""
    from analyses.theorem1.rate import MIN_HORIZON

    if check.outcome == "not testable" and description.horizon < MIN_HORIZON:
        return f"not at this horizon (T = {description.horizon} < {MIN_HORIZON})"
    return "NO"


def convergence_blocks(suite) -> list[Block]:
    """The Theorem 1 section of the page."""
    out = [Block("h2", "Theorem 1: the rate at this horizon (a) and the proof's drift step (b)")]
    out.append(Block("p", (
        "(a) G-hat_t = <g1, g2> from two halves of each minibatch (unbiased for ||grad R^t||^2). The window "
        "(T/20, T] is cut into four blocks of equal width in log T. Per seed: the relative fall of G-hat_t's mean "
        "level over blocks 1-2 and over blocks 3-4 (a fall needs both), beta, the exponent of the level over blocks "
        "3-4, b = beta_bound - beta, and the bend (how much the decay slows from blocks 2-3 to blocks 3-4, with the "
        "last half's shortfall against the blocks' own rate). A second test reads the last half (T/2, T] in linear "
        "time: the fall over each tail from T/2, 5T/8, 3T/4 and 7T/8 against the bound's own fall there (late "
        "excess). A word that the level falls toward zero needs both tests; a bend or a late shortfall reads "
        "'flattens: a floor is not excluded from T = ...'. Every fall word names its reach: 'over T < s; a floor "
        "from T = s on is not excluded (power p)', s the earliest start of a floor the tests would miss more than "
        "5% of the time at the group's own noise and autocorrelation. Outcome from the seed intervals. A description, never a "
        "refutation of a bound with an unknown constant. Noise: G-hat_t's spread about a smooth fit, as a multiple "
        "of its mean level over the run.")))
    rows = _rate_rows(suite)
    if rows:
        out.append(Block("table", headers=("quantity", "group", "series", "outcome", "fall, blocks 1-2",
                                           "fall, blocks 3-4", "beta", "b", "bend", "late excess", "noise", "seeds",
                                           "horizon"),
                         rows=tuple(tuple(r) for r in rows)))
    controls = suite.get(RATE_CONTROLS)
    if isinstance(controls, RateControls):
        out.append(Block("table", headers=("control of the rate rule", "must read", "read", "passed", "beta", "b",
                                           "seeds"),
                         rows=tuple((c.name, " or ".join(c.expected) or "- (descriptive)", c.outcome,
                                     "-" if c.descriptive else "yes" if c.passed else _not_passed(c, d),
                                     _iv(d.beta), _iv(d.b), str(d.seeds))
                                    for c, d in zip(controls.checks, controls.descriptions, strict=True))))
    out.append(Block("p", (
        "(b) The row decides the drift's order in the step at fixed iterates (step scaling: drift(c)/c as c -> 0; "
        "see the verdict table). Descriptive, along the run: the proof probe's descent_t and drift_t every step; "
        "s = slope of log(D+_T / sum eta_t^2) on log T after the burn-in, 'outgrows' when its interval lies above "
        "the threshold, 'within' when below. A trend over time: a warming-up second-order drift outgrows too.")))
    rows = _drift_rows(suite)
    if rows:
        out.append(Block("table", headers=("objective", "group", "outcome", "s", "first-order reference",
                                           "drift / progress", "signed sum of drift", "seeds", "horizon"),
                         rows=tuple(tuple(r) for r in rows)))
    out.append(Block("p", "Descriptive: the bound statistic B_T = A_T sqrt(T)/log(T+1) of every group (the earlier "
                          "bound test's b is shown for reference only; it decides no row)."))
    rows = [[quantity, test.label + (" (primary)" if primary else ""), _iv(test.slope), _iv(test.beta),
             test.seeds, test.horizon] for _, quantity, test, primary in _tests(suite)]
    if rows:
        out.append(Block("table", headers=("quantity", "group", "b (descriptive)", "beta (running mean)", "seeds",
                                           "horizon"), rows=tuple(tuple(map(str, r)) for r in rows)))
        out.append(Block("figure", "convergence"))
    diverged = suite.get(DIVERGED)
    if isinstance(diverged, DivergedRuns) and diverged.runs:
        out.append(Block("p", "Diverged runs (their own training objective rose), excluded from every verdict: "
                         + "; ".join(f"{n}: {why}" for n, why in sorted(diverged.runs.items()))))
    else:
        out.append(Block("p", "Diverged runs: none."))
    for name in ("rate_reverse", "rate_forward", "proof_reverse", "proof_forward"):
        if name in suite.skipped:
            out.append(Block("p", f"{name}: not measured: {suite.skipped[name]}"))
    return out


def _normalised(test: BoundTest) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    curves = [s for s in test.per_seed if s.curve_t]
    if not curves:
        return None
    n = min(len(s.curve_t) for s in curves)
    t = np.asarray(curves[0].curve_t[:n])
    b = np.asarray([s.curve_b[:n] for s in curves])
    scale = float(np.mean(b[:, t > t[-1] / 2]))
    if not np.isfinite(scale) or scale <= 0:
        return None
    b = b / scale
    return t, b.min(axis=0), b.max(axis=0)


def convergence_figure(suite) -> Figure | None:
    """B_T against T for each primary group and the logistic control (module docstring)."""
    lines = [(q, t) for name, q, t, primary in _tests(suite) if primary and name in LOCAL]
    curves = [(q, t, c) for q, t in lines if (c := _normalised(t)) is not None]
    if not curves:
        return None
    fig = Figure(figsize=(6.4, 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    t_max = max(c[0][-1] for _, _, c in curves)
    grid = np.geomspace(2, t_max, 60)
    for ref, style, label in ((np.ones_like(grid), "-", "bound: B_T flat (b = 0)"),
                              (1 / np.log(grid + 1), "--", "rate 1/sqrt(T) (b = -1/log T)"),
                              (np.sqrt(grid) / np.log(grid + 1), ":", "noise floor (b = +1/2)")):
        ax.plot(grid, ref / ref[grid > t_max / 2].mean(), color="0.6", ls=style, lw=1, label=label)
    for i, (quantity, test, (t, lo, hi)) in enumerate(curves):
        color = COLORS[i % len(COLORS)]
        ax.fill_between(t, lo, hi, color=color, alpha=0.25, lw=0)
        ax.plot(t, (lo + hi) / 2, color=color, lw=1.2, label=f"{quantity}: b = {_iv(test.slope)}")
    ax.set_xscale("log")
    ax.set_ylim(-0.5, 3.0)
    ax.set_xlabel("T (steps)")
    ax.set_ylabel("B_T / mean over last half")
    ax.set_title("Theorem 1: B_T = A_T sqrt(T) / log(T+1)")
    ax.legend(fontsize=6, loc="upper left")
    return fig
