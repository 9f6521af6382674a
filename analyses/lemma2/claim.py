"""Lemma 2, as four rows (``analyses.lemma2.targets``, ``analyses.lemma2.fixed_point``; docs/LEMMA2.md).

1. **As stated** (the reverse loss's minimizer is the geometric mean g_k): the identity
   ℓ^R_k(p) = KL(p ‖ g_k) − log Z_k proves it; checked on a grid of cases: "holds (exact)".
2. **Does it describe the CE loss implementations train?** No: that loss is minimized by m_k.
   Headline at ε = 0.1 (p_y^ε = (0.95, 0.05), p_{k−1} = (½, ½), α = ½): m_k = (0.725, 0.275),
   g_k = (0.813, 0.187), TV 0.088.
3. **How far apart are the two targets at this model's readouts?** TV(m_k, g_k) at the model's
   exact readouts (full vocabulary, the ``lemma2`` probe), per chunk, untrained and trained,
   intervals over seeds of the primary group (ZeroLock forward): "far apart" (one interval above
   ``TV_SMALL``), "close" (every interval below), "undecided", "not testable". A distance between
   targets, never a statement that the mismatch "matters" for what training reaches.
4. **Which target does training move toward?** The fixed-point experiment (one chunk trained
   alone on a fixed batch with each loss until its local loss stops falling) with its controls
   (``controls.json``: ``analyses.lemma2.fixed_point_controls``): the label part of the contrast over
   seeds decides, the contrast C and its fraction of −2·TV(m_k, g_k) (what reaching would give)
   and how far each training moved are shown; "not calibrated" when the label-permutation control
   finds a direction or the label-free move passes, or when no controls were run. The lowest chunk
   decides, the others are shown.
"""

from __future__ import annotations

from dataclasses import replace

from analyses.groups import primary_group
from analyses.lemma2.fixed_point import FIXED_POINT, FixedPointResult
from analyses.lemma2.fixed_point import OUTCOMES as FIXED_OUTCOMES
from analyses.lemma2.fixed_point_controls import CONTROLS, FixedPointControls
from analyses.lemma2.targets import IMPLEMENTED as IMPLEMENTED_RESULT
from analyses.lemma2.targets import (
    IMPLEMENTED_OUTCOMES,
    MISMATCH_OUTCOMES,
    STATED_OUTCOMES,
    Lemma2Implemented,
    Lemma2Mismatch,
    Lemma2Stated,
    lemma2_implemented,
    lemma2_mismatch,
    lemma2_stated,
    lemma2_tracking,
    mismatch_p_value,
)
from analyses.lemma2.targets import MISMATCH as MISMATCH_RESULT
from analyses.lemma2.targets import STATED as STATED_RESULT
from analyses.lemma2.targets import TRACKING as TRACKING_RESULT
from analyses.registry import (
    NOT_MEASURED,
    NOT_TESTABLE,
    Claim,
    ClaimInputs,
    Outcome,
    SuiteInputs,
    register,
    result_rule,
)
from analyses.results import NotMeasured
from analyses.text import fmt
from analyses.verdict import Evidence, Verdict

PAPER = "Lemma 2: the local optimum of chunk k is the geometric mean p*_k ∝ p_y^alpha · p_(k-1)^(1-alpha) (Eq. 15)."


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
    return sorted(inputs.each(FIXED_POINT), key=lambda r: r.chunk)


def _controls(inputs: ClaimInputs) -> list[FixedPointControls]:
    return sorted(inputs.each(CONTROLS), key=lambda r: r.chunk)


def _fixed_rule(inputs: ClaimInputs) -> Verdict:
    """The lowest chunk with controls: the label part's outcome when both controls read as they
    must, else "not calibrated"; a chunk without controls is "not calibrated" (C alone is fooled by
    a label-free move), its C shown."""
    key, controls, plain = "lemma2_fixed_point", _controls(inputs), _fixed_points(inputs)
    if controls:
        first, beside = controls[0], tuple(_other_chunk(c) for c in controls[1:])
        if not first.calibrated:
            return Verdict(key, "not calibrated", Evidence("controls_failed", result=first, beside=beside,
                                                           uncalibrated=tuple(first.failed_controls)))
        return Verdict(key, first.main.outcome, Evidence("label_part", result=first, p_value=first.main.p_value,
                                                         beside=beside))
    if plain:
        return Verdict(key, "not calibrated", Evidence("no_controls", result=plain[0]))
    return Verdict(key, "not measured",
                   Evidence("skipped", skipped="no fixed_point.json or controls.json given (zerolock verify)"))


def _other_chunk(c: FixedPointControls) -> str:
    """A chunk above the row's, beside it (not decided on, no Holm): its outcome and its controls."""
    label = f"label part {c.main.label_contrast}" if c.main.label_contrast is not None else "label part n/a"
    controls = "controls calibrated" if c.calibrated else "controls NOT calibrated: " + "; ".join(c.failed_controls)
    return f"chunk {c.chunk} (beside the row, not decided): {c.main.outcome} ({label}); {controls}"


def _main(ev: Evidence) -> FixedPointResult | None:
    r = ev.result
    return r.main if isinstance(r, FixedPointControls) else r if isinstance(r, FixedPointResult) else None


def _fixed_short(ev: Evidence) -> str:
    r = _main(ev)
    if r is None or r.contrast is None:
        return "-"
    head = f"label part {r.label_contrast}" if r.label_contrast is not None else f"contrast {r.contrast}"
    fraction = f", {r.fraction.estimate:.0%} of reaching" if r.fraction is not None else ""
    return f"chunk {r.chunk}: {head}{fraction}"


def _moved(r: FixedPointResult) -> str:
    if r.progress_forward is None or r.progress_reverse is None:
        return "how far each training moved: not recorded"
    return (f"CE training moved {r.progress_forward.estimate:.0%} of the way toward m_k, reverse training "
            f"{r.progress_reverse.estimate:.0%} toward g_k" + (
                "; neither reaches it" if max(r.progress_forward.high, r.progress_reverse.high) < 0.99 else ""))


def _fixed(ev: Evidence) -> str:
    r = _main(ev)
    if r is None:
        return "-"
    text = (f"{_fixed_short(ev)}; C = {r.contrast or 'n/a'} ([TV(.,m) - TV(.,g)] forward minus reverse), as a "
            f"fraction of -2 TV(m_k, g_k): {r.fraction or 'n/a'}; {_moved(r)}; {r.counted} seed(s) counted, "
            f"{len(r.label_blind)} label-blind left out, {r.converged} of {2 * len(r.seeds)} trainings converged")
    if isinstance(ev.result, FixedPointControls):
        c = ev.result
        text += (f". Controls: labels permuted: {c.permuted.outcome} (label part {c.permuted.label_contrast or 'n/a'}, "
                 f"C {c.permuted.contrast or 'n/a'}); label-free move (s = {c.label_free_step:g}): "
                 f"{c.label_free.outcome} (label part {c.label_free.label_contrast or 'n/a'}, "
                 f"C {c.label_free.contrast or 'n/a'})")
    return text + "".join(f". {line}" for line in ev.beside)


REASONS = {
    "skipped": lambda ev: ev.skipped or "no data",
    "computed": lambda ev: "exact computation (no runs)",
    "mismatch": lambda ev: "the seed intervals of TV(m_k, g_k) against the threshold, per chunk (a distance "
    "between the two targets, not what training reaches)",
    "label_part": lambda ev: "the seed interval of the contrast's label part (below 0: each loss moves toward its "
    "own optimum, beyond what a label-free move gives); both controls read as they must",
    "controls_failed": lambda ev: "a control of the rule failed: " + "; ".join(ev.uncalibrated),
    "no_controls": lambda ev: "no controls run (controls.json): the contrast C alone also reads 'toward its own "
    "optimum' for a move toward p_(k-1) that uses no label",
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
    rule=result_rule("lemma2_stated", STATED_RESULT), measured=_stated, reason=_reason,
    vocabulary=STATED_OUTCOMES,
    analyses={STATED_RESULT: lambda inputs: lemma2_stated()},
    tests=("tests/analyses/lemma2/test_analyses_lemma2.py::test_lemma2_as_stated_holds_exactly",
           "tests/analyses/lemma2/test_analyses_lemma2.py::test_lemma2_as_stated_fails_for_another_point"),
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
    rule=result_rule("lemma2_implemented", IMPLEMENTED_RESULT), measured=_implemented,
    vocabulary=IMPLEMENTED_OUTCOMES,
    short=lambda ev: f"TV(m_k, g_k) = {fmt(ev.result.tv_m_g)} at eps = 0.1" if isinstance(
        ev.result, Lemma2Implemented) else "-",
    reason=_reason, analyses={IMPLEMENTED_RESULT: lambda inputs: lemma2_implemented()},
    tests=("tests/analyses/lemma2/test_analyses_lemma2.py::test_the_headline_case_at_epsilon_one_tenth",
           "tests/analyses/lemma2/test_analyses_lemma2.py::test_implemented_says_yes_where_the_targets_coincide"),
))
def _mismatch_rule(inputs: ClaimInputs) -> Verdict:
    verdict = result_rule("lemma2_mismatch", MISMATCH_RESULT, lambda found: "mismatch")(inputs)
    found = verdict.evidence.result
    if not isinstance(found, Lemma2Mismatch):
        return verdict
    return Verdict(verdict.claim, verdict.outcome, replace(verdict.evidence, p_value=mismatch_p_value(found)))


MISMATCH = register(Claim(
    key="lemma2_mismatch", title="Lemma 2: how far apart are m_k and g_k on this model?", paper=PAPER,
    question="At this model's own readouts, how far apart are m_k and g_k (TV, threshold 0.05)? A distance between "
    "the two targets, not what training reaches",
    primary="ZeroLock forward, SGD with eta_t ~ 1/sqrt(t), the group with the most seeds (exact readouts)",
    outcomes={"far apart": Outcome("TV(m_k, g_k) lies above the threshold at some chunk: the paper's target and the "
                                   "implemented loss's target are different points here (mostly set by alpha, eps "
                                   "and the readouts' entropy)", "mixed"),
              "close": Outcome("the two targets nearly coincide on this model", "holds"),
              "undecided": Outcome("the intervals straddle the threshold", "mixed"),
              "not testable": NOT_TESTABLE, "not measured": NOT_MEASURED},
    rule=_mismatch_rule, vocabulary=MISMATCH_OUTCOMES,
    measured=_mismatch, short=_mismatch_short, reason=_reason,
    analyses={MISMATCH_RESULT: _mismatch_analysis, TRACKING_RESULT: _tracking_analysis},
    tests=("tests/analyses/lemma2/test_analyses_lemma2.py::test_mismatch_outcomes",
           "tests/analyses/lemma2/test_analyses_lemma2.py::test_mismatch_is_not_testable_with_two_seeds_or_no_keys"),
))
FIXED = register(Claim(
    key="lemma2_fixed_point", title="Lemma 2: which target does training move toward?", paper=PAPER,
    question="Trained alone on a fixed batch, does a chunk move toward m_k with the CE loss and toward g_k with the "
    "reverse loss, beyond what a move without labels gives? (how far each gets is shown)",
    primary="the fixed-point experiment on the lowest chunk run, the suite's seeds, with its two controls",
    outcomes={FIXED_OUTCOMES[0]: Outcome("CE training moves toward m_k, reverse training toward g_k (the label part "
                                         "of the contrast): the implemented loss aims at m_k, not Lemma 2's g_k; how "
                                         "far each gets is in the figure", "fails"),
              "opposite": Outcome("each loss moves toward the other's optimum", "mixed"),
              "no difference detected": Outcome("the label part's interval does not clear the floor", "mixed"),
              "not calibrated": Outcome("a control failed (labels permuted: a direction found; label-free move: "
                                        "passes), or no controls were run", "none"),
              "not testable": NOT_TESTABLE, "not measured": NOT_MEASURED},
    rule=_fixed_rule, measured=_fixed, short=_fixed_short, reason=_reason, vocabulary=FIXED_OUTCOMES,
    tests=("tests/analyses/lemma2/test_analyses_fixed_point.py::test_each_loss_toward_its_own_target_and_swapped",
           "tests/analyses/lemma2/test_analyses_fixed_point.py::test_flattened_readouts_never_give_a_verdict",
           "tests/analyses/lemma2/test_analyses_fixed_point_controls.py::test_a_label_free_move_does_not_pass",
           "tests/analyses/lemma2/test_analyses_fixed_point_controls.py::test_trainings_on_permuted_labels_find_no_direction"),
))
