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
* Theorem 1 bound (local Ĝ_t, R and R̄) — the primary group's bound test
  (``analyses.convergence``, ``analyses.theorem1``): consistent / not consistent / not
  testable (at this horizon); if a positive control (convex logistic regression, backprop
  under the theorem's schedule) is "not consistent", the rows read "test not calibrated".
* The abstract's comparison with backprop (global ‖∇L‖²) — not covered by Theorem 1; the same
  bound test on ZeroLock forward's primary group, with backprop's beside it.
* Proposition 1 — CE_k ≤ CE_{k−1} + δ_k at float tolerance (``analyses.proposition``):
  consistent (also "but vacuous") → supported, violated → refuted, isolated → inconclusive.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from analyses.convergence import BoundTest
from analyses.drift import DriftCheck
from analyses.minimizers import ToyCheck
from analyses.proposition import PropositionSet
from analyses.results import Result, Verdict
from analyses.scaling import StepScaling
from analyses.stability import StabilitySummary
from analyses.theorem1 import BoundSet
from analyses.tracking import TrackingSet

__all__ = ["CLAIMS", "verdicts"]

LEMMA2 = "Lemma 2 (analytic): g_k is the optimum of the implemented loss"
LEMMA2_MODEL = "Lemma 2 (on the model, descriptive): trained chunks track g_k"
A5_PAPER = "Assumption 5 for R (paper objective)"
A5_IMPLEMENTED = "Assumption 5 for R̄ (implemented objective)"
BOUND_PAPER = "Theorem 1 bound, local Ĝ_t of R (reverse)"
BOUND_IMPLEMENTED = "Theorem 1 bound, local Ĝ_t of R̄ (forward)"
GLOBAL_VS_BACKPROP = "Abstract: global ‖∇L‖², ZeroLock vs backprop (not Theorem 1)"
DEPTH = "Proposition 1: CE_k <= CE_(k-1) + delta_k"
CONTROL_BACKPROP = "Control: backprop under Theorem 1's schedule"
CONTROL_LOGISTIC = "Control: convex logistic regression, SGD"
CLAIMS: tuple[str, ...] = (
    LEMMA2, LEMMA2_MODEL, A5_PAPER, A5_IMPLEMENTED, BOUND_PAPER, BOUND_IMPLEMENTED, GLOBAL_VS_BACKPROP, DEPTH,
    CONTROL_BACKPROP, CONTROL_LOGISTIC,
)


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


def _row_verdict(test: BoundTest) -> str:
    if test.verdict == "not testable" and test.seeds and test.horizon < test.min_horizon:
        return "not testable at this horizon"
    return test.verdict


def _bound_detail(test: BoundTest) -> str:
    beta = f"beta = {test.beta} (descriptive)" if test.beta is not None else "beta not estimable"
    gone = f"; excluded as diverged: {', '.join(test.excluded)}" if test.excluded else ""
    return f"{test.label}: {test.reason}; {beta}{gone}"


def _primary(results, name: str) -> BoundTest | None:
    found = results.get(name)
    if isinstance(found, BoundTest):
        return found
    return found.primary_test() if isinstance(found, BoundSet) else None


def _uncalibrated(results) -> list[str]:
    """Controls whose bound test says "not consistent" (the rule rejects a true bound)."""
    out = []
    for name, label in (("control_logistic", "logistic control"), ("convergence_backprop", "backprop control")):
        test = _primary(results, name)
        if test is not None and test.verdict == "not consistent":
            out.append(label)
    return out


def _bound(name: str, claim: str, results, skipped, *, control: bool = False) -> Verdict:
    """A Theorem 1 bound-test row from the primary group of ``results[name]``."""
    found = results.get(name)
    if not isinstance(found, (BoundSet, BoundTest)):
        return Verdict(claim, "not measured", "-", skipped.get(name, "no data"))
    test = _primary(results, name)
    if test is None:
        return Verdict(claim, "not testable", "-",
                       "no group trained with the theorem's step size eta_t ~ 1/sqrt(t) (SGD, optim.schedule = inv_sqrt)")
    bad = [] if control else _uncalibrated(results)
    if bad:
        reason = f"{' and '.join(bad)} not consistent: the rule rejects a bound that holds; " + _bound_detail(test)
        return Verdict(claim, "test not calibrated", test.headline(), reason)
    return Verdict(claim, _row_verdict(test), test.headline(), _bound_detail(test))


def _global(results, skipped) -> Verdict:
    """The abstract's comparison with backprop on ‖∇L‖²: the same test, backprop beside it."""
    row = _bound("convergence_global", GLOBAL_VS_BACKPROP, results, skipped)
    other = _primary(results, "convergence_global_backprop")
    if other is None or row.verdict == "not measured":
        return row
    return Verdict(row.claim, row.verdict, f"ZeroLock {row.figure}; backprop {other.headline()}",
                   f"not covered by Theorem 1; {row.reason}; backprop: {other.verdict}")


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
        _bound("convergence_reverse", BOUND_PAPER, results, skipped),
        _bound("convergence_forward", BOUND_IMPLEMENTED, results, skipped),
        _global(results, skipped),
        _depth(results, skipped),
        _bound("convergence_backprop", CONTROL_BACKPROP, results, skipped, control=True),
        _bound("control_logistic", CONTROL_LOGISTIC, results, skipped, control=True),
    ]
