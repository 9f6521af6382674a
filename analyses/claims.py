"""The verdict table: one ``Verdict`` per claim, from the analysis results (docs/ANALYSES.md).

Verdicts are ``supported``, ``refuted``, ``inconclusive`` or ``not measured``; each row states
the measured figure behind it and the reason. The rules:

* Lemma 2 on the implemented loss — the toy check decides the mathematics (m_k ≠ g_k); the
  on-model evidence is the movement contrast (``analyses.minimizers``): DiD of relative KL
  reductions > 0 → refuted; < 0 with forward-trained chunks approaching g_k more than
  reverse-trained ones → supported; covers 0 → inconclusive. Forward runs only: r_F(m) −
  r_F(g) > 0 → refuted, else inconclusive. No on-model table: m_k ≠ g_k → refuted.
* Assumption 5 for R / R̄ — step scaling on the primary group (``analyses.scaling``):
  first order → refuted, bounded → supported, inconclusive → inconclusive, fewer than 3
  seeds → not testable; the drift check is part of the figure.
* Theorem 1 rate (local / global) — among groups trained with η_t ∝ 1/√t: every group's β
  interval reaches 0.5 → supported; otherwise refuted. No such group → inconclusive.
* Proposition 1 — CE_k ≤ CE_{k−1} + δ_k at float tolerance (``analyses.proposition``):
  consistent (also "but vacuous") → supported, violated → refuted, isolated → inconclusive.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from analyses.convergence import RateSet
from analyses.drift import DriftCheck
from analyses.minimizers import MinimizerTable, ToyCheck
from analyses.proposition import PropositionSet
from analyses.results import Result, Verdict
from analyses.scaling import StepScaling
from analyses.stability import StabilitySummary

__all__ = ["CLAIMS", "verdicts"]

LEMMA2 = "Lemma 2 on the implemented loss"
A5_PAPER = "Assumption 5 for R (paper objective)"
A5_IMPLEMENTED = "Assumption 5 for R̄ (implemented objective)"
RATE_LOCAL = "Theorem 1 rate, local G_t"
RATE_GLOBAL = "Theorem 1 rate, global ‖∇L‖²"
DEPTH = "Proposition 1: CE_k <= CE_(k-1) + delta_k"
CLAIMS: tuple[str, ...] = (LEMMA2, A5_PAPER, A5_IMPLEMENTED, RATE_LOCAL, RATE_GLOBAL, DEPTH)


def fmt(value: float) -> str:
    """Three significant digits; ``inf``/``n/a`` for non-finite values."""
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.3g}"


def _toy_figure(toy: ToyCheck) -> str:
    row = toy.rows[0]
    return (
        f"toy check (alpha={fmt(toy.alpha)}, eps={fmt(row.epsilon)}): KL(p||p_y) = "
        f"{fmt(row.kl_p_py)}, CE(p_y, p) = {fmt(row.ce_py_p)}; m_k = "
        f"({', '.join(map(fmt, row.m))}), g_k = ({', '.join(map(fmt, row.g))}), "
        f"TV {fmt(row.tv_m_g)}"
    )


def _reductions(table: MinimizerTable, trained: str) -> str:
    m, g = table.cell(trained, "m"), table.cell(trained, "g")
    return (
        f"{trained}-trained ({m.n_runs} run(s)) to m_k {m.reduction(table.primary)}, "
        f"to g_k {g.reduction(table.primary)}"
    )


def _lemma2(results: Mapping[str, Result], skipped: Mapping[str, str]) -> Verdict:
    """Lemma 2 on the implemented loss: its local optimum is g_k (docs/ANALYSES.md).

    The toy check decides the mathematics (m_k ≠ g_k); the on-model movement contrast of
    ``analyses.minimizers`` (primary measure, KL) says whether the runs show it:

    * both directions trained — DiD interval > 0 (forward-trained chunks approach m_k
      relative to reverse-trained ones) → refuted; DiD interval < 0 and forward-trained
      chunks approach g_k more than reverse-trained ones → supported; else inconclusive.
    * forward runs only — r_F(m) − r_F(g) interval > 0 → refuted; else inconclusive.
    * no forward-trained on-model data — the toy check alone: m_k ≠ g_k → refuted.
    """
    toy = results.get("toy_check")
    toy = toy if isinstance(toy, ToyCheck) else None
    analytic = toy is not None and toy.minimizers_differ
    maths = (
        "analytic: the implemented (forward) loss is minimized by m_k, not g_k (toy TV(m_k, g_k) "
        f"= {fmt(toy.rows[0].tv_m_g)})"
        if analytic
        else "no analytic refutation (toy check "
        + ("finds m_k = g_k)" if toy is not None else "not computed)")
    )
    table = results.get("minimizers")
    table = table if isinstance(table, MinimizerTable) else None
    measure = "KL" if table is None or table.primary == "kl" else "TV"
    unit = f"relative reduction of {measure} from the first to the last steps"
    if table is not None and table.cell("forward", "m") is not None:
        contrast = table.contrast_of()
        if contrast is not None:
            tv = table.contrast_of("tv")
            figure = (
                f"{unit}: {_reductions(table, 'forward')}; {_reductions(table, 'reverse')}; "
                f"contrast DiD = {contrast.did} (m column {contrast.m_column}, g column "
                f"{contrast.g_column})" + (f"; TV DiD = {tv.did}" if tv is not None else "")
            )
            if contrast.toward == "m_k":
                reason = (
                    f"{maths}; on-model: forward-trained chunks approach m_k relative to "
                    "reverse-trained ones (DiD interval > 0)"
                )
                return Verdict(LEMMA2, "refuted", figure, reason)
            if contrast.toward == "g_k":
                reason = (
                    "on-model: forward-trained chunks approach g_k more than reverse-trained "
                    "ones (DiD and g-column intervals < 0)"
                    + ("; this contradicts the analytic check (m_k != g_k)" if analytic else "")
                )
                return Verdict(LEMMA2, "supported", figure, reason)
            reason = (
                (f"the mathematics still refutes it ({maths}), but" if analytic else f"{maths};")
                + " the on-model data cannot distinguish m_k from g_k (DiD interval covers 0, "
                "or favours g_k without forward-trained chunks approaching g_k more than "
                "reverse-trained ones)"
            )
            return Verdict(LEMMA2, "inconclusive", figure, reason)
        track = table.tracking_of("forward")
        figure = f"{unit}: {_reductions(table, 'forward')}; difference {track.difference}"
        if track.toward == "m_k":
            reason = (
                f"{maths}; on-model (no reverse-trained runs to contrast): forward-trained "
                f"runs reduce {measure} to m_k by relatively more than to g_k (interval > 0)"
            )
            return Verdict(LEMMA2, "refuted", figure, reason)
        reason = (
            f"{maths}; on-model: no reverse-trained runs to contrast, and forward-trained runs "
            f"do not reduce {measure} to m_k by relatively more than to g_k"
        )
        return Verdict(LEMMA2, "inconclusive", figure, reason)
    if toy is not None:
        why = (
            "no forward-trained runs in it"
            if table is not None
            else skipped.get("minimizers", "no data")
        )
        reason = f"{maths}; on-model table not measured: {why}"
        return Verdict(LEMMA2, "refuted" if analytic else "inconclusive", _toy_figure(toy), reason)
    return Verdict(LEMMA2, "not measured", "-", skipped.get("minimizers", "no data"))


A5_VERDICTS = {"first order": "refuted", "bounded": "supported", "inconclusive": "inconclusive",
               "not testable": "not testable"}


def _assumption5(obj: str, claim: str, results, skipped) -> Verdict:
    """Assumption 5 from step scaling on the primary group (``analyses.scaling``): first order →
    refuted, bounded → supported; the drift check (``analyses.drift``) is added to the figure."""
    scaling = results.get(f"scaling_{obj}")
    drift = results.get(f"drift_{obj}")
    summary = results.get(f"stability_{obj}")
    total = summary.total() if isinstance(summary, StabilitySummary) else None
    extra = []
    if isinstance(drift, DriftCheck):
        extra.append(drift.describe())
    if total is not None:
        extra.append(f"along training: median rho {fmt(total.median)}, max {fmt(total.max)} over {total.n_probe} steps")
    if not isinstance(scaling, StepScaling):
        why = skipped.get(f"scaling_{obj}", "no data")
        return Verdict(claim, "not measured" if total is None else "not testable", "; ".join(extra) or "-",
                       f"no step-scaling data: {why}")
    primary = scaling.primary
    figure = f"{primary.statement} ({len(primary.seeds)} seed(s), {primary.group})"
    if extra:
        figure += "; " + "; ".join(extra)
    reason = {
        "first order": "rho(c) grows like 1/c as the step is scaled down (slope interval < -0.5) on a share of "
        "steps whose interval is > 0; eta_t -> 0 makes sup_t rho_t infinite",
        "bounded": "the slope interval of log rho(c) on log c lies above -0.5, or phi' <= 0 at every scaled step",
        "inconclusive": "the slope or share interval does not decide between bounded and first order",
        "not testable": "fewer than 3 seeds with scaled steps in the primary group",
    }[primary.verdict]
    if scaling.excluded:
        reason += f"; excluded as diverged: {', '.join(e.split(':')[0] for e in scaling.excluded)}"
    return Verdict(claim, A5_VERDICTS[primary.verdict], figure, reason)


def _rate(name: str, claim: str, results, skipped) -> Verdict:
    rates = results.get(name)
    if not isinstance(rates, RateSet):
        return Verdict(claim, "not measured", "-", skipped.get(name, "no data"))
    backprop = results.get("convergence_backprop")
    bp = ""
    if isinstance(backprop, RateSet) and backprop.fits:
        bp = "; backprop beta = " + ", ".join(str(f.beta) for f in backprop.fits)
    fits = rates.theorem_fits()
    if not fits:
        worst = min(rates.fits, key=lambda f: f.beta.high)
        figure = f"beta = {worst.beta} ({worst.label}){bp}"
        reason = "no group trained with the theorem's step size eta_t ~ 1/sqrt(t) (optim.schedule = inv_sqrt)"
        return Verdict(claim, "inconclusive", figure, reason)
    worst = min(fits, key=lambda f: f.beta.high)
    n_hold = sum(f.holds for f in fits)
    figure = f"beta = {worst.beta} ({worst.label}); {n_hold}/{len(fits)} group(s) reach 0.5{bp}"
    if n_hold == len(fits):
        return Verdict(claim, "supported", figure, "every beta interval reaches 0.5")
    return Verdict(claim, "refuted", figure, "a beta interval lies below 0.5: slower than T^-1/2")


PROPOSITION_VERDICTS = {"consistent": "supported", "consistent but vacuous": "supported", "violated": "refuted",
                        "isolated violations": "inconclusive", "not testable": "not testable"}


def _depth(results, skipped) -> Verdict:
    """Proposition 1 with its slack on the primary group (``analyses.proposition``)."""
    test = results.get("proposition")
    if not isinstance(test, PropositionSet):
        return Verdict(DEPTH, "not measured", "-", skipped.get("proposition", "no data"))
    primary = test.primary
    figure = f"{primary.statement} ({len(primary.runs)} seed(s), {primary.group})"
    others = [f"{g.group}: {g.verdict}" for g in test.groups[1:]]
    if others:
        figure += "; other groups (descriptive): " + "; ".join(others)
    reason = {
        "consistent": "CE_k <= CE_(k-1) + delta_k at every probed step and pair, at float tolerance",
        "consistent but vacuous": "the inequality holds, but delta_k is over 10x the CE differences it should bound",
        "violated": "the share of violating pairs has a seed interval above 0",
        "isolated violations": "some pairs violate it, but not consistently across seeds",
        "not testable": "fewer than 3 seeds in the primary group",
    }[primary.verdict]
    if test.excluded:
        reason += f"; excluded as diverged: {', '.join(e.split(':')[0] for e in test.excluded)}"
    return Verdict(DEPTH, PROPOSITION_VERDICTS[primary.verdict], figure, reason)


def verdicts(results: Mapping[str, Result], skipped: Mapping[str, str]) -> list[Verdict]:
    """The verdict table, one row per entry of ``CLAIMS``, in that order."""
    return [
        _lemma2(results, skipped),
        _assumption5("paper", A5_PAPER, results, skipped),
        _assumption5("implemented", A5_IMPLEMENTED, results, skipped),
        _rate("convergence_local", RATE_LOCAL, results, skipped),
        _rate("convergence_global", RATE_GLOBAL, results, skipped),
        _depth(results, skipped),
    ]
