"""The verdict table: one ``Verdict`` per claim, from the analysis results (docs/ANALYSES.md).

Verdicts are ``supported``, ``refuted``, ``inconclusive``, ``not testable`` (too few seeds or
too little effect) or ``not measured``; each row states the measured figure behind it and the
reason. Diverged runs (``analyses.seeds.diverged``) are excluded from every row. The rules:

* Lemma 2 (analytic) — the exact two-token toy and the closed forms: the implemented loss is
  minimized by m_k; m_k ≠ g_k → refuted.
* Lemma 2 (on the model, descriptive) — ``analyses.tracking``: forward-trained chunks'
  r(m) − r(g) in TV relative to the untrained model, interval over seeds: > 0 → refuted,
  < 0 → supported, covers 0 → inconclusive; < 3 seeds or unmoved readouts → not testable.
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
from analyses.minimizers import ToyCheck
from analyses.proposition import PropositionSet
from analyses.results import Result, Verdict
from analyses.scaling import StepScaling
from analyses.stability import StabilitySummary
from analyses.tracking import TrackingSet

__all__ = ["CLAIMS", "verdicts"]

LEMMA2 = "Lemma 2 (analytic): g_k is the optimum of the implemented loss"
LEMMA2_MODEL = "Lemma 2 (on the model, descriptive): trained chunks track g_k"
A5_PAPER = "Assumption 5 for R (paper objective)"
A5_IMPLEMENTED = "Assumption 5 for R̄ (implemented objective)"
RATE_LOCAL = "Theorem 1 rate, local G_t"
RATE_GLOBAL = "Theorem 1 rate, global ‖∇L‖²"
DEPTH = "Proposition 1: CE_k <= CE_(k-1) + delta_k"
CLAIMS: tuple[str, ...] = (LEMMA2, LEMMA2_MODEL, A5_PAPER, A5_IMPLEMENTED, RATE_LOCAL, RATE_GLOBAL, DEPTH)


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
        f"two-token toy (alpha={fmt(toy.alpha)}, eps={fmt(row.epsilon)}): KL(p||p_y) = "
        f"{fmt(row.kl_p_py)}, CE(p_y, p) = {fmt(row.ce_py_p)}; m_k = "
        f"({', '.join(map(fmt, row.m))}), g_k = ({', '.join(map(fmt, row.g))}), "
        f"TV(m_k, g_k) = {fmt(row.tv_m_g)}"
    )


def _lemma2(results: Mapping[str, Result], skipped: Mapping[str, str]) -> Verdict:
    """(a) Analytic, from the exact toy and the closed forms: the implemented (forward) loss is
    minimized by m_k; m_k ≠ g_k in the toy → refuted; m_k = g_k → supported."""
    toy = results.get("toy_check")
    if not isinstance(toy, ToyCheck):
        return Verdict(LEMMA2, "not measured", "-", skipped.get("toy_check", "not computed"))
    if toy.minimizers_differ:
        reason = ("the implemented (forward) loss is minimized by m_k = alpha p_y + (1-alpha) p_(k-1) "
                  "(closed form), which differs from Lemma 2's g_k in the exact toy")
        return Verdict(LEMMA2, "refuted", _toy_figure(toy), reason)
    return Verdict(LEMMA2, "supported", _toy_figure(toy), "m_k = g_k in every toy row")


def _lemma2_model(results: Mapping[str, Result], skipped: Mapping[str, str]) -> Verdict:
    """(b) Descriptive, on the model (``analyses.tracking``): forward-trained chunks' r(m) − r(g)
    in TV relative to the untrained model; > 0 (track m_k) → refuted, < 0 (track g_k) →
    supported, covers 0 → inconclusive, too few or unmoved seeds → not testable."""
    tracking = results.get("tracking")
    if not isinstance(tracking, TrackingSet):
        return Verdict(LEMMA2_MODEL, "not measured", "-", skipped.get("tracking", "no data"))
    figure = "; ".join(f"{d.statement} ({len(d.runs)} run(s))" for d in tracking.directions)
    forward = tracking.of("forward")
    if forward is None:
        return Verdict(LEMMA2_MODEL, "not testable", figure, "no forward-trained (implemented-loss) runs")
    verdict = {"m_k": "refuted", "g_k": "supported", "undecided": "inconclusive"}.get(forward.toward, "not testable")
    reason = ("descriptive: which target the implemented loss's chunks move toward, in one symmetric bounded "
              "metric (TV) with the same eps for both targets; the interval is over seeds")
    if tracking.excluded:
        reason += f"; excluded as diverged: {', '.join(e.split(':')[0] for e in tracking.excluded)}"
    return Verdict(LEMMA2_MODEL, verdict, figure, reason)


OWN_DIRECTION = {"paper": "reverse", "implemented": "forward"}  # R is reverse training's surrogate, R̄ forward's
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
    own = OWN_DIRECTION[obj]
    if primary.trained != own:  # the pre-registered group is missing (e.g. every such run diverged)
        figure = "; ".join([f"descriptive, {g.group}: {g.statement}" for g in scaling.groups] + extra)
        why = f"no non-diverged {own}-trained runs with scaled steps (the pre-registered group)"
        if scaling.excluded:
            why += f"; excluded as diverged: {', '.join(e.split(':')[0] for e in scaling.excluded)}"
        return Verdict(claim, "not testable", figure, why)
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
    if primary.trained != "reverse":  # the pre-registered group: the paper's (reverse) setting
        figure = "; ".join(f"descriptive, {g.group}: {g.statement}" for g in test.groups)
        why = "no non-diverged reverse-trained runs with CE_k and delta_k (the pre-registered group)"
        if test.excluded:
            why += f"; excluded as diverged: {', '.join(e.split(':')[0] for e in test.excluded)}"
        return Verdict(DEPTH, "not testable", figure, why)
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
        _lemma2_model(results, skipped),
        _assumption5("paper", A5_PAPER, results, skipped),
        _assumption5("implemented", A5_IMPLEMENTED, results, skipped),
        _rate("convergence_local", RATE_LOCAL, results, skipped),
        _rate("convergence_global", RATE_GLOBAL, results, skipped),
        _depth(results, skipped),
    ]
