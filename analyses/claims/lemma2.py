"""Lemma 2, as four rows (``analyses.lemma2``, ``analyses.fixed_point``; docs/LEMMA2.md).

1. **As stated** (the reverse loss's minimizer is the geometric mean g_k): the identity
   ℓ^R_k(p) = KL(p ‖ g_k) − log Z_k proves it; checked on a grid of cases: "holds (exact)".
2. **Does it describe the CE loss implementations train?** No: that loss is minimized by m_k.
   Headline at ε = 0.1 (p_y^ε = (0.95, 0.05), p_{k−1} = (½, ½), α = ½): m_k = (0.725, 0.275),
   g_k = (0.813, 0.187), TV 0.088.
3. **Does the mismatch matter on this model?** TV(m_k, g_k) at the model's exact readouts (full
   vocabulary, the ``lemma2`` probe), per chunk, untrained and trained, intervals over seeds of
   the primary group (ZeroLock forward): "small" (every interval below ``TV_SMALL``), "large"
   (one above), "undecided", "not testable".
4. **Which target does training reach?** The fixed-point experiment (one chunk trained alone on
   a fixed batch with each loss until its local loss stops falling): the contrast
   [TV(·, m) − TV(·, g)]_forward − [same]_reverse over seeds, guarded against label-blind
   flattening. Read from ``fixed_point.json`` directories (``zerolock probe fixed-point``, or
   those ``zerolock verify`` runs); the lowest chunk decides, the others are shown.
"""

from __future__ import annotations

from analyses.claims.groups import primary_group
from analyses.claims.registry import (
    NOT_MEASURED,
    NOT_TESTABLE,
    Claim,
    ClaimInputs,
    Outcome,
    SuiteInputs,
    register,
    result_rule,
)
from analyses.claims.text import fmt
from analyses.fixed_point import FixedPointResult
from analyses.lemma2 import (
    Lemma2Implemented,
    Lemma2Mismatch,
    Lemma2Stated,
    lemma2_implemented,
    lemma2_mismatch,
    lemma2_stated,
    lemma2_tracking,
)
from analyses.results import NotMeasured
from analyses.verdict import Evidence, Verdict

PAPER = "Lemma 2: the local optimum of chunk k is the geometric mean p*_k ∝ p_y^alpha · p_(k-1)^(1-alpha) (Eq. 15)."
FIXED_POINT = "fixed_point_chunk"  # results "fixed_point_chunk{k}", one per chunk run


def _forward_frames(inputs: SuiteInputs):
    group = primary_group(inputs.table, "zerolock", "forward")
    if group is None or not group.runs:
        raise NotMeasured("no non-diverged ZeroLock forward group trained with SGD and eta_t ~ 1/sqrt(t)")
    return group, dict(group.runs)


def _mismatch_analysis(inputs: SuiteInputs) -> Lemma2Mismatch:
    group, frames = _forward_frames(inputs)
    found = lemma2_mismatch(frames, inputs.level)
    if not found.runs:
        raise NotMeasured(f"{group.label}: no probe/lemma2 keys (probe 'lemma2' off)")
    return found


def _tracking_analysis(inputs: SuiteInputs):
    """Descriptive: r(m) − r(g) against its entropy-matched null, from exact readouts."""
    _, frames = _forward_frames(inputs)
    return lemma2_tracking(frames, "forward", inputs.level)


def _stated(ev: Evidence) -> str:
    r = ev.result
    if not isinstance(r, Lemma2Stated):
        return "-"
    return (f"{r.n_cases} cases x {r.n_points} points: largest residual {r.max_residual:.2g}; "
            f"no point below g_k's loss (min excess {r.min_excess:.2g})")


def _implemented(ev: Evidence) -> str:
    r = ev.result
    if not isinstance(r, Lemma2Implemented):
        return "-"
    vec = lambda v: "(" + ", ".join(fmt(x) for x in v) + ")"  # noqa: E731
    return (f"eps = {fmt(r.epsilon)}, alpha = {fmt(r.alpha)}: m_k = {vec(r.m)}, g_k = {vec(r.g)}, "
            f"TV(m_k, g_k) = {fmt(r.tv_m_g)}; the numerical minimizer is at TV {r.numerical_tv_m:.2g} from m_k")


def _mismatch_short(ev: Evidence) -> str:
    r = ev.result
    if not isinstance(r, Lemma2Mismatch) or not r.chunks:
        return "-"
    trained = [c.trained_interval for c in r.chunks if c.trained_interval is not None]
    if not trained:
        return "-"
    return f"TV(m_k, g_k) trained: {fmt(min(i.estimate for i in trained))} to {fmt(max(i.estimate for i in trained))}"


def _mismatch(ev: Evidence) -> str:
    r = ev.result
    if not isinstance(r, Lemma2Mismatch):
        return "-"
    cells = [f"chunk {c.chunk}: {c.untrained_interval or 'n/a'} -> {c.trained_interval or 'n/a'}" for c in r.chunks]
    return f"TV(m_k, g_k), untrained -> trained: {'; '.join(cells)} ({len(r.runs)} seed(s), threshold {r.threshold:g})"


def _fixed_points(inputs: ClaimInputs) -> list[FixedPointResult]:
    found = [r for name, r in inputs.results.items() if name.startswith(FIXED_POINT) and isinstance(r, FixedPointResult)]
    return sorted(found, key=lambda r: r.chunk)


def _fixed_rule(inputs: ClaimInputs) -> Verdict:
    found = _fixed_points(inputs)
    if not found:
        return Verdict("lemma2_fixed_point", "not measured",
                       Evidence("skipped", skipped="no fixed_point.json given (zerolock probe fixed-point)"))
    return Verdict("lemma2_fixed_point", found[0].outcome, Evidence("contrast", result=found[0]))


def _fixed_short(ev: Evidence) -> str:
    r = ev.result
    if not isinstance(r, FixedPointResult) or r.contrast is None:
        return "-"
    return f"chunk {r.chunk}: contrast {r.contrast}"


def _fixed(ev: Evidence) -> str:
    r = ev.result
    if not isinstance(r, FixedPointResult):
        return "-"
    return (f"{_fixed_short(ev)} ([TV(.,m) - TV(.,g)] forward minus reverse; {r.counted} seed(s) counted, "
            f"{len(r.label_blind)} label-blind left out, {r.converged} of {2 * len(r.seeds)} trainings converged)")


REASONS = {
    "skipped": lambda ev: ev.skipped or "no data",
    "computed": lambda ev: "exact computation (no runs)",
    "mismatch": lambda ev: "the seed intervals of TV(m_k, g_k) against the threshold, per chunk",
    "contrast": lambda ev: "the seed interval of the contrast (below 0: each loss reaches its own optimum)",
}


def _reason(ev: Evidence) -> str:
    return REASONS[ev.reason](ev)


STATED = register(Claim(
    key="lemma2_stated", title="Lemma 2 as stated: the reverse loss is minimized by g_k", paper=PAPER,
    question="Is the geometric mean g_k the minimizer of the reverse loss the paper analyses (eps > 0)?",
    primary="exact computation on a grid of cases (no runs)",
    outcomes={"holds (exact)": Outcome("the identity l^R_k(p) = KL(p || g_k) - log Z_k holds in every case", "holds"),
              "fails": Outcome("some point has a lower reverse loss than g_k", "fails"),
              "not measured": NOT_MEASURED},
    rule=result_rule("lemma2_stated", "lemma2_stated", Lemma2Stated), measured=_stated, reason=_reason,
    analyses={"lemma2_stated": lambda inputs: lemma2_stated()},
    tests=("tests/analyses/test_analyses_lemma2.py::test_lemma2_as_stated_holds_exactly",
           "tests/analyses/test_analyses_lemma2.py::test_lemma2_as_stated_fails_for_another_point"),
))
IMPLEMENTED = register(Claim(
    key="lemma2_implemented", title="Lemma 2 for the loss implementations train (cross-entropy)", paper=PAPER,
    question="Does Lemma 2 describe the cross-entropy (forward KL) loss that implementations train? "
    "(a restatement of the paper's claim)",
    primary="exact computation at eps = 0.1 (no runs)",
    outcomes={"no: m_k": Outcome("no: the implemented loss is minimized by the arithmetic mixture m_k, not g_k",
                                 "fails"),
              "yes": Outcome("yes: m_k = g_k in this case", "holds"),
              "not measured": NOT_MEASURED},
    rule=result_rule("lemma2_implemented", "lemma2_implemented", Lemma2Implemented), measured=_implemented,
    short=lambda ev: f"TV(m_k, g_k) = {fmt(ev.result.tv_m_g)} at eps = 0.1" if isinstance(
        ev.result, Lemma2Implemented) else "-",
    reason=_reason, analyses={"lemma2_implemented": lambda inputs: lemma2_implemented()},
    tests=("tests/analyses/test_analyses_lemma2.py::test_the_headline_case_at_epsilon_one_tenth",
           "tests/analyses/test_analyses_lemma2.py::test_implemented_says_yes_where_the_targets_coincide"),
))
MISMATCH = register(Claim(
    key="lemma2_mismatch", title="Lemma 2: does the m_k / g_k mismatch matter on this model?", paper=PAPER,
    question="At this model's own readouts, how far apart are m_k and g_k?",
    primary="ZeroLock forward, SGD with eta_t ~ 1/sqrt(t), the group with the most seeds (exact readouts)",
    outcomes={"large": Outcome("the paper's analysis and the implementation aim at different points here", "fails"),
              "small": Outcome("the two targets nearly coincide on this model", "holds"),
              "undecided": Outcome("the intervals straddle the threshold", "mixed"),
              "not testable": NOT_TESTABLE, "not measured": NOT_MEASURED},
    rule=result_rule("lemma2_mismatch", "lemma2_mismatch", Lemma2Mismatch, lambda found: "mismatch"),
    measured=_mismatch, short=_mismatch_short, reason=_reason,
    analyses={"lemma2_mismatch": _mismatch_analysis, "lemma2_tracking": _tracking_analysis},
    tests=("tests/analyses/test_analyses_lemma2.py::test_mismatch_outcomes",
           "tests/analyses/test_analyses_lemma2.py::test_mismatch_is_not_testable_with_two_seeds_or_no_keys"),
))
FIXED = register(Claim(
    key="lemma2_fixed_point", title="Lemma 2: which target does training reach?", paper=PAPER,
    question="Trained alone on a fixed batch, does a chunk reach m_k with the CE loss and g_k with the reverse loss?",
    primary="the fixed-point experiment on the lowest chunk run, 5 seeds",
    outcomes={"each loss reaches its own optimum": Outcome("CE training reaches m_k, reverse training g_k: Lemma 2's "
                                                            "target is not the one implementations reach", "fails"),
              "opposite": Outcome("each loss moves toward the other's optimum", "mixed"),
              "no difference detected": Outcome("the contrast's interval covers 0", "mixed"),
              "not testable": NOT_TESTABLE, "not measured": NOT_MEASURED},
    rule=_fixed_rule, measured=_fixed, short=_fixed_short, reason=_reason,
    tests=("tests/analyses/test_analyses_fixed_point.py::test_each_loss_toward_its_own_target_and_swapped",
           "tests/analyses/test_analyses_fixed_point.py::test_flattened_readouts_never_give_a_verdict"),
))
