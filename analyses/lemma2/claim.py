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
   (``controls.json``: ``analyses.lemma2.fixed_point_controls``): each arm decided on its own (the CE
   arm toward m_k rather than g_k, the reverse arm toward g_k rather than m_k: the move's component
   along m_k − g_k with the label-free directions fitted out, against the floor that label-free moves
   and permuted labels reach, Holm over the two arms; both abstain when TV(m_k, g_k) is below its least);
   the row's word follows from the two arms (``analyses.lemma2.fixed_point.row_word``); "not
   calibrated" when a control's arm finds a direction, or when no controls were run. The lowest chunk
   decides, the others are shown.
"""

from __future__ import annotations

from dataclasses import replace

from analyses.groups import primary_group
from analyses.lemma2.data import mismatch_run, tracking_run
from analyses.lemma2.fixed_point import FIXED_POINT, ArmDecision, FixedPointResult
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
    lemma2_stated,
    mismatch_of,
    mismatch_p_value,
    tracking_of,
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
from analyses.results import Interval, NotMeasured
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
    found = mismatch_of([mismatch_run(frame, name) for name, frame in frames.items()], inputs.level)
    if not found.runs:
        raise NotMeasured(f"{group.label}: no probe/lemma2 keys (probe 'lemma2' off)")
    return found


def _tracking_analysis(inputs: SuiteInputs):
    """Descriptive: r(m) − r(g) against its entropy-matched null, from exact readouts."""
    _, frames = _forward_frames(inputs)
    return tracking_of([tracking_run(frame, name) for name, frame in frames.items()], "forward", inputs.level)


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
    """The lowest chunk with controls: the row's word from its two arms when both controls read as
    they must, else "not calibrated"; a chunk without controls is "not calibrated" (no label-free
    floor, no check that a move without labels finds nothing)."""
    key, controls, plain = "lemma2_fixed_point", _controls(inputs), _fixed_points(inputs)
    if controls:
        first, beside = controls[0], tuple(_other_chunk(c) for c in controls[1:])
        if first.main.forward_arm is None or first.main.reverse_arm is None:  # written before the arms were decided
            return Verdict(key, "not testable", Evidence("no_arms", result=first, beside=beside))
        if not first.calibrated:
            return Verdict(key, "not calibrated", Evidence("controls_failed", result=first, beside=beside,
                                                           uncalibrated=tuple(first.failed_controls)))
        return Verdict(key, first.main.outcome, Evidence("arms", result=first, p_value=first.main.p_value,
                                                         beside=beside))
    if plain:
        return Verdict(key, "not calibrated", Evidence("no_controls", result=plain[0]))
    return Verdict(key, "not measured",
                   Evidence("skipped", skipped="no fixed_point.json or controls.json given (zerolock verify)"))


def _arm_cell(a: ArmDecision | None) -> str:
    """"CE arm: toward its own optimum (0.8 [0.8, 0.8], Holm p 0.002)"; an undecided arm states its least
    detectable move, an untestable one why."""
    if a is None:
        return "arm not recorded"
    p = f", Holm p {a.adjusted:.2g}" if a.adjusted is not None else ""
    word = a.outcome
    if a.outcome == "no difference detected" and a.least_detectable is not None:
        word += f"; the least detectable move is {fmt(a.least_detectable)} (floor {fmt(a.floor)})"
    elif a.outcome == "not testable" and a.reason:
        word += f": {a.reason}"
    return f"{a.arm} arm: {word} ({a.interval or 'n/a'}{p})"


def _statistic_text(r: FixedPointResult) -> str:
    if r.statistic == "projection":
        return ("the move's component along m_k - g_k with the label-free directions fitted out, in shares of the "
                "way, > 0 toward the arm's own optimum")
    return f"{r.statistic} of the change in TV(.,m_k) - TV(.,g_k), > 0 toward the arm's own optimum"


def _arms_text(r: FixedPointResult) -> str:
    return "; ".join(_arm_cell(a) for a in (r.forward_arm, r.reverse_arm))


def _other_chunk(c: FixedPointControls) -> str:
    """A chunk above the row's, beside it (not decided on, no Holm): its outcome and its controls."""
    controls = "controls calibrated" if c.calibrated else "controls NOT calibrated: " + "; ".join(c.failed_controls)
    return f"chunk {c.chunk} (beside the row, not decided): {c.main.outcome} ({_arms_text(c.main)}); {controls}"


def _main(ev: Evidence) -> FixedPointResult | None:
    r = ev.result
    return r.main if isinstance(r, FixedPointControls) else r if isinstance(r, FixedPointResult) else None


def _share(x: Interval | None) -> str:
    return "n/a" if x is None else f"{x.estimate:.0%} [{x.low:.0%}, {x.high:.0%}]"


def _fixed_short(ev: Evidence) -> str:
    r = _main(ev)
    if r is None or r.forward_arm is None or r.reverse_arm is None:
        return "-"
    return f"chunk {r.chunk}: CE arm {r.forward_arm.outcome}, reverse arm {r.reverse_arm.outcome}"


def _moved(r: FixedPointResult) -> str:
    """How far each training went toward each target: the move's coefficients on m_k - p^0 and g_k - p^0."""
    if r.progress_forward is None or r.progress_reverse is None:
        return "progress: not recorded"
    return (f"progress (the move p^d - p^0 ~ x (m_k - p^0) + y (g_k - p^0) + label-free directions, probability "
            f"space, signed): CE training "
            f"{_share(r.progress_forward)} of the way toward m_k and {_share(r.forward_other)} toward g_k; reverse "
            f"training {_share(r.progress_reverse)} toward g_k and {_share(r.reverse_other)} toward m_k")


def _fixed(ev: Evidence) -> str:
    r = _main(ev)
    if r is None:
        return "-"
    text = (f"chunk {r.chunk}: {_arms_text(r)} ({_statistic_text(r)}, floor up to {fmt(r.arm_floor)}); {_moved(r)}; {r.counted} seed(s) counted, "
            f"{len(r.label_blind)} label-blind left out, {r.converged} of {2 * len(r.seeds)} trainings converged; "
            f"descriptive: C = {r.contrast or 'n/a'} ([TV(.,m) - TV(.,g)] forward minus reverse)")
    if isinstance(ev.result, FixedPointControls):
        c = ev.result
        text += (f". Controls: labels permuted: {c.permuted.outcome} ({_arms_text(c.permuted)}); label-free move "
                 f"(s = {c.label_free_step:g}): {c.label_free.outcome} ({_arms_text(c.label_free)})")
    return text + "".join(f". {line}" for line in ev.beside)


REASONS = {
    "skipped": lambda ev: ev.skipped or "no data",
    "computed": lambda ev: "exact computation (no runs)",
    "mismatch": lambda ev: "the seed intervals of TV(m_k, g_k) against the threshold, per chunk (a distance "
    "between the two targets, not what training reaches)",
    "arms": lambda ev: "each arm on its own: the seed interval of the move's component along m_k - g_k (the "
    "label-free directions fitted out) against the floor that label-free moves and permuted labels reach, Holm "
    "over the two arms; both arms abstain when m_k and g_k are closer than the least TV; the row's word follows "
    "from the two arms; both controls read as they must",
    "controls_failed": lambda ev: "a control of the rule failed: " + "; ".join(ev.uncalibrated),
    "no_arms": lambda ev: "the fixed-point files record no per-arm decision (written by an earlier version of "
    "zerolock probe fixed-point); rerun the fixed point (zerolock verify resumes it) to decide each arm",
    "no_controls": lambda ev: "no controls run (controls.json): no label-free floor, and no check that trainings "
    "on permuted labels or a move without labels find no direction",
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
    question="Trained alone on a fixed batch, does a chunk move toward m_k with the CE loss, and toward g_k with the "
    "reverse loss? Each arm decided on its own, beyond what a move without labels gives (how far each training "
    "went toward each target is shown)",
    primary="the fixed-point experiment on the lowest chunk run, the suite's seeds, with its two controls",
    outcomes={FIXED_OUTCOMES[0]: Outcome("the CE arm moves toward m_k and the reverse arm toward g_k: the implemented "
                                         "loss aims at m_k, not Lemma 2's g_k", "fails"),
              FIXED_OUTCOMES[1]: Outcome("both arms move toward m_k (the reverse arm toward the other's optimum)",
                                         "mixed"),
              FIXED_OUTCOMES[2]: Outcome("both arms move toward g_k (the CE arm toward the other's optimum)", "mixed"),
              FIXED_OUTCOMES[3]: Outcome("each arm moves toward the other's optimum", "mixed"),
              FIXED_OUTCOMES[4]: Outcome("one arm's direction is decided, the other's interval does not clear the "
                                         "floor (the arms say which)", "mixed"),
              FIXED_OUTCOMES[5]: Outcome("neither arm's interval clears the floor", "mixed"),
              "not calibrated": Outcome("a control failed (labels permuted or a label-free move: an arm finds a "
                                        "direction), or no controls were run", "none"),
              "not testable": NOT_TESTABLE, "not measured": NOT_MEASURED},
    rule=_fixed_rule, measured=_fixed, short=_fixed_short, reason=_reason, vocabulary=FIXED_OUTCOMES,
    tests=("tests/analyses/lemma2/test_analyses_fixed_point_arms.py::test_each_construction_reads_its_truth_per_arm",
           "tests/analyses/lemma2/test_analyses_fixed_point_arms.py::test_the_referees_case_never_reads_each_toward_its_own",
           "tests/analyses/lemma2/test_analyses_fixed_point.py::test_flattened_readouts_never_give_a_verdict",
           "tests/analyses/lemma2/test_analyses_fixed_point_controls.py::test_a_label_free_move_does_not_pass",
           "tests/analyses/lemma2/test_analyses_fixed_point_controls.py::test_trainings_on_permuted_labels_find_no_direction"),
))
