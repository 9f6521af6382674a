"""The verdict table: one ``Verdict`` per claim, from the analysis results (docs/ANALYSES.md).

Verdicts are ``supported``, ``refuted``, ``inconclusive``, ``not testable`` (too few seeds or
too little effect) or ``not measured``; each row carries the evidence behind it as data
(``analyses.verdict.Evidence``: a reason code, intervals, counts, excluded runs), which
``reports.wording`` writes as sentences. Diverged runs (``analyses.seeds.diverged``) are excluded from every row. The rules:

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

from collections.abc import Mapping

from analyses.convergence import BoundTest
from analyses.drift import DriftCheck
from analyses.minimizers import ToyCheck
from analyses.proposition import PropositionSet
from analyses.results import Result
from analyses.scaling import StepScaling
from analyses.stability import StabilitySummary
from analyses.theorem1 import BoundSet
from analyses.tracking import TrackingSet
from analyses.verdict import DriftFigures, Evidence, RhoFigures, ToyFigures, Verdict

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


def _skipped(claim: str, name: str, skipped: Mapping[str, str]) -> Verdict:
    return Verdict(claim, "not measured", Evidence("skipped", skipped=skipped.get(name, "")))


def _names(excluded: list[str]) -> tuple[str, ...]:
    """Run names of ``"name: reason"`` entries."""
    return tuple(e.split(":")[0] for e in excluded)


def _lemma2(results: Mapping[str, Result], skipped: Mapping[str, str]) -> Verdict:
    """(a) Analytic, from the exact toy and the closed forms: the implemented (forward) loss is
    minimized by m_k; m_k ≠ g_k in the toy → refuted; m_k = g_k → supported."""
    toy = results.get("toy_check")
    if not isinstance(toy, ToyCheck):
        return _skipped(LEMMA2, "toy_check", skipped)
    row = toy.rows[0]
    figures = ToyFigures(toy.alpha, row.epsilon, row.kl_p_py, row.ce_py_p, tuple(row.m), tuple(row.g), row.tv_m_g)
    if toy.minimizers_differ:
        return Verdict(LEMMA2, "refuted", Evidence("toy_differ", toy=figures))
    return Verdict(LEMMA2, "supported", Evidence("toy_agree", toy=figures))


def _lemma2_model(results: Mapping[str, Result], skipped: Mapping[str, str]) -> Verdict:
    """(b) Descriptive, on the model (``analyses.tracking``): forward-trained chunks' r(m) − r(g)
    in TV relative to the untrained model; > 0 (track m_k) → refuted, < 0 (track g_k) →
    supported, covers 0 → inconclusive, too few or unmoved seeds → not testable."""
    tracking = results.get("tracking")
    if not isinstance(tracking, TrackingSet):
        return _skipped(LEMMA2_MODEL, "tracking", skipped)
    forward = tracking.of("forward")  # first in ``tracking.directions`` when present
    evidence = Evidence("tracking" if forward else "no_forward_runs", preregistered="forward",
                        excluded=_names(tracking.excluded), groups=tuple(d.figures() for d in tracking.directions))
    if forward is None:
        return Verdict(LEMMA2_MODEL, "not testable", evidence)
    verdict = {"m_k": "refuted", "g_k": "supported", "undecided": "inconclusive"}.get(forward.toward, "not testable")
    return Verdict(LEMMA2_MODEL, verdict, evidence)


OWN_DIRECTION = {"paper": "reverse", "implemented": "forward"}  # R is reverse training's surrogate, R̄ forward's
A5_VERDICTS = {"first order": "refuted", "bounded": "supported", "inconclusive": "inconclusive",
               "not testable": "not testable"}


def _assumption5(obj: str, claim: str, results, skipped) -> Verdict:
    """Assumption 5 from step scaling on the primary group (``analyses.scaling``): first order →
    refuted, bounded → supported; the drift check (``analyses.drift``) and ρ_t along training
    are part of the evidence."""
    scaling = results.get(f"scaling_{obj}")
    drift = results.get(f"drift_{obj}")
    summary = results.get(f"stability_{obj}")
    total = summary.total() if isinstance(summary, StabilitySummary) else None
    context = {
        "preregistered": OWN_DIRECTION[obj],
        "drift": DriftFigures(len(drift.runs), drift.d_exponent, drift.q_exponent)
        if isinstance(drift, DriftCheck) else None,
        "rho": None if total is None else RhoFigures(total.median, total.max, total.n_probe),
    }
    if not isinstance(scaling, StepScaling):
        evidence = Evidence("no_scaling_data", skipped=skipped.get(f"scaling_{obj}", ""), **context)
        return Verdict(claim, "not measured" if total is None else "not testable", evidence)
    groups = tuple(g.figures() for g in scaling.groups)
    primary = scaling.primary
    own = primary.trained == OWN_DIRECTION[obj]  # else the pre-registered group is missing (e.g. all diverged)
    evidence = Evidence("scaling" if own else "no_scaling_group", excluded=_names(scaling.excluded),
                        groups=groups, **context)
    return Verdict(claim, A5_VERDICTS[primary.verdict] if own else "not testable", evidence)


def _row_verdict(test: BoundTest) -> str:
    if test.verdict == "not testable" and test.seeds and test.horizon < test.min_horizon:
        return "not testable at this horizon"
    return test.verdict


def _primary(results, name: str) -> BoundTest | None:
    found = results.get(name)
    if isinstance(found, BoundTest):
        return found
    return found.primary_test() if isinstance(found, BoundSet) else None


CONTROLS = (("control_logistic", "logistic control"), ("convergence_backprop", "backprop control"))


def _uncalibrated(results) -> tuple[str, ...]:
    """Controls whose bound test says "not consistent" (the rule rejects a true bound)."""
    out = []
    for name, label in CONTROLS:
        test = _primary(results, name)
        if test is not None and test.verdict == "not consistent":
            out.append(label)
    return tuple(out)


def _bound(name: str, claim: str, results, skipped, *, control: bool = False,
           beside: BoundTest | None = None) -> Verdict:
    """A Theorem 1 bound-test row from the primary group of ``results[name]``; ``beside`` is
    another bound test shown next to it (backprop's, on the global row)."""
    found = results.get(name)
    if not isinstance(found, (BoundSet, BoundTest)):
        return _skipped(claim, name, skipped)
    test = _primary(results, name)
    other = None if beside is None else beside.figures()
    if test is None:
        return Verdict(claim, "not testable", Evidence("no_theorem_schedule", backprop=other))
    bad = () if control else _uncalibrated(results)
    evidence = Evidence("uncalibrated" if bad else "bound", excluded=tuple(test.excluded), bound=test.figures(),
                        backprop=other, uncalibrated=bad)
    return Verdict(claim, "test not calibrated" if bad else _row_verdict(test), evidence)


def _global(results, skipped) -> Verdict:
    """The abstract's comparison with backprop on ‖∇L‖²: the same test, backprop beside it."""
    other = _primary(results, "convergence_global_backprop")
    return _bound("convergence_global", GLOBAL_VS_BACKPROP, results, skipped, beside=other)


PROPOSITION_VERDICTS = {"consistent": "supported", "consistent but vacuous": "supported", "violated": "refuted",
                        "isolated violations": "inconclusive", "not testable": "not testable"}


def _depth(results, skipped) -> Verdict:
    """Proposition 1 with its slack on the primary group (``analyses.proposition``)."""
    test = results.get("proposition")
    if not isinstance(test, PropositionSet):
        return _skipped(DEPTH, "proposition", skipped)
    primary = test.primary
    own = primary.trained == "reverse"  # the pre-registered group: the paper's (reverse) setting
    evidence = Evidence("proposition" if own else "no_proposition_group", preregistered="reverse",
                        excluded=_names(test.excluded), groups=tuple(g.figures() for g in test.groups))
    return Verdict(DEPTH, PROPOSITION_VERDICTS[primary.verdict] if own else "not testable", evidence)


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
