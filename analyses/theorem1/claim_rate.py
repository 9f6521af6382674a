"""Theorem 1 (a): the rate of the local Ĝ_t, described at this horizon, for R (reverse) and R̄
(forward), with the controls of the rule (docs/THEOREM1.md).

Each row reads ``analyses.theorem1.rate.describe_rate`` on its primary group (``groups.primary_group``:
ZeroLock of the direction, SGD with η_t ∝ 1/√t, most seeds), column ``train/grad_sq_unbiased``
(Ĝ_t of two half-batches, unbiased for ‖∇R^t‖²). Outcomes are descriptions (never "refuted": a
finite run cannot refute a bound with an unknown constant): ``RATE_OUTCOMES``, whose words carry
the floor's start where one applies ("flattens: a floor is not excluded from T = ..."), in every
rendering (the measured cell and the headline begin with the outcome's words). Beside the
outcome: the noise of Ĝ_t measured on the group, its lag-1 autocorrelation, and the rule's power
re-simulated with AR(1) noise of that size and autocorrelation, its seeds and horizon
(``analyses.theorem1.rate_power``).

Controls whose answer is known by construction decide calibration (``analyses.theorem1.controls``, and
``MODEL_CONTROLS``: the row's own series shuffled inside the fit window must not read a decay);
the model's other series (backprop's Ĝ_t, the noise floors, the biased norms) are descriptive.
If a control fails, a row that would decide reads "not calibrated".
"""

from __future__ import annotations

from dataclasses import dataclass

from analyses.groups import primary_group
from analyses.registry import (
    NOT_MEASURED,
    Claim,
    ClaimInputs,
    Outcome,
    SuiteInputs,
    register,
    run_names,
    skipped,
)
from analyses.results import NotMeasured, Result, declare
from analyses.results import register as register_result
from analyses.theorem1.controls import (
    NEGATIVE,
    RATE_CONTROLS,
    RateControls,
    rate_controls,
    shuffled,
)
from analyses.theorem1.convergence import (
    BIASED_COLUMN,
    FLOOR_COLUMN,
    GHAT_COLUMN,
)
from analyses.theorem1.data import rate_series
from analyses.theorem1.rate import (
    FALLS_AT,
    FALLS_SLOWER,
    FALLS_UNDISTINGUISHED,
    FLATTENS,
    MIN_HORIZON,
    NO_DECAY,
    NO_DECAY_FALL,
    NOT_TESTABLE,
    RATE_OUTCOMES,
    RATE_SENTENCES,
    RateDescription,
    describe_rate,
)
from analyses.theorem1.rate_power import RatePower, rate_power, seeds_for
from analyses.verdict import Evidence, Verdict
from zerolock_theory.vocab import NOT_CALIBRATED

__all__ = ["MODEL_CONTROLS", "GroupRate", "group_rate"]


@register_result
@dataclass(frozen=True)
class GroupRate(Result):
    """The rate description of one primary group, its excluded runs, the same rule on the group's
    own series shuffled inside the window (a negative control), and the rule's power at its noise."""

    kind = "group_rate"
    group: str
    excluded: list[str]
    rate: RateDescription
    shuffled: RateDescription
    power: RatePower
    seeds_needed: int | None = None  # the fewest seeds (of 5, 10, 20, 40) with power >= 0.8 at this noise and phi


RATE = {d: declare(f"rate_{d}", GroupRate) for d in ("reverse", "forward")}
"""The rate description of each ZeroLock direction's primary group."""


def group_rate(inputs: SuiteInputs, method: str, direction: str = "", column: str = GHAT_COLUMN,
               *, power: bool = True) -> GroupRate:
    """The rate of ``column`` on the primary group of ``method``/``direction`` (``NotMeasured`` without one)."""
    group = primary_group(inputs.table, method, direction)
    if group is None:
        raise NotMeasured(f"no {method} {direction} group trained with SGD and eta_t ~ 1/sqrt(t)".replace("  ", " "))
    if not group.runs:
        raise NotMeasured(f"{group.label}: every run diverged")
    series = [rate_series(frame, column, name).pair() for name, frame in group.runs]
    names = [name for name, _ in group.runs]
    rate = describe_rate(series, names=names, label=group.label, column=column, level=inputs.level)
    control = describe_rate(shuffled(series), names=names, label=f"{group.label}, shuffled", column=column,
                            level=inputs.level)
    if not power:
        return GroupRate(group.label, group.excluded, rate, control, rate_power(None, rate.seeds, rate.horizon))
    found = rate_power(rate.noise, rate.seeds, rate.horizon, phi=rate.phi)
    needed = seeds_for(rate.noise, rate.horizon, phi=rate.phi) if found.reps and found.worst < 0.8 else None
    return GroupRate(group.label, group.excluded, rate, control, found, needed)


MODEL_CONTROLS = (
    ("descriptive: backprop's G-hat_t under the schedule", "backprop", "", GHAT_COLUMN, ()),
    ("descriptive: the forward runs' noise floor |g_t|^2 - G-hat_t", "zerolock", "forward", FLOOR_COLUMN, ()),
    ("descriptive: the forward runs' biased |g_t|^2", "zerolock", "forward", BIASED_COLUMN, ()),
    ("descriptive: the reverse runs' noise floor", "zerolock", "reverse", FLOOR_COLUMN, ()),
    ("descriptive: the reverse runs' biased |g_t|^2", "zerolock", "reverse", BIASED_COLUMN, ()),
    ("descriptive: backprop's noise floor", "backprop", "", FLOOR_COLUMN, ()),
    ("descriptive: backprop's biased |g_t|^2", "backprop", "", BIASED_COLUMN, ()),
)
"""The series read off the suite's own runs beside the controls: name, method, direction, column,
the outcomes it must read (empty: descriptive, never failed). None has an answer known by
construction (a noise floor still carries a falling part; backprop's surrogate is another
objective), so none decides calibration; the rows' own shuffled series do (``SHUFFLED``)."""
SHUFFLED = (("negative: the reverse runs' G-hat_t shuffled inside the window", "zerolock", "reverse"),
            ("negative: the forward runs' G-hat_t shuffled inside the window", "zerolock", "forward"))
"""Negative controls with a known answer by construction: each row's own series, each seed's values
permuted inside the fit window (no trend), through the same rule: must not read a decay."""


def _controls(inputs: SuiteInputs) -> RateControls:
    """The toy controls at the primary horizon, the rows' shuffled series and ``MODEL_CONTROLS``."""
    extra = {}
    horizons = []
    for name, method, direction in SHUFFLED:
        try:
            found = group_rate(inputs, method, direction, power=False)
        except (NotMeasured, ValueError):
            continue
        extra[name] = (found.shuffled, NEGATIVE)
        horizons.append(found.rate.horizon)
    for name, method, direction, column, allowed in MODEL_CONTROLS:
        try:
            found = group_rate(inputs, method, direction, column, power=False)
        except (NotMeasured, ValueError):
            continue
        extra[name] = (found.rate, allowed)
        horizons.append(found.rate.horizon)
    return rate_controls(max(horizons, default=1000), extra=extra, level=inputs.level)


def _rule(key: str, direction: str):
    def rule(inputs: ClaimInputs) -> Verdict:
        """The rate's outcome; "not calibrated" when it decides and a control of the rule failed."""
        found = inputs.get(RATE[direction])
        if found is None:
            return skipped(key, RATE[direction], inputs)
        controls = inputs.get(RATE_CONTROLS)
        failed = tuple(controls.failed) if controls is not None else ()
        outcome = found.rate.outcome
        if failed and outcome != NOT_TESTABLE:
            outcome = NOT_CALIBRATED
        reason = "uncalibrated" if outcome == NOT_CALIBRATED else found.rate.reason
        p = None if outcome == NOT_CALIBRATED else found.rate.p_value
        return Verdict(key, outcome, Evidence(reason, excluded=run_names(found.excluded), uncalibrated=failed,
                                              result=found, p_value=p))
    return rule


def _iv(x, point: float | None) -> str:
    if x is None:
        return "undefined" if point is None else f"{point:.3g} (no interval)"
    return str(x)


def _power(found: GroupRate) -> str:
    """The rule's power at the group's measured noise and autocorrelation, and the seeds that would reach 80%."""
    r, pw = found.rate, found.power
    if r.noise is None or not pw.reps:
        return "noise not measured"
    head = (f"noise {r.noise:.2g} x its mean level, lag-1 autocorrelation {pw.phi:.2g}; power "
            f"({pw.method}), {r.seeds} seeds, T = {r.horizon}: "
            f"{pw.correct['1/sqrt(T)']:.0%} (1/sqrt(T)), {pw.correct['log(T+1)/sqrt(T) (the bound)']:.0%} (the bound)")
    if pw.worst >= 0.8:
        return head
    more = f"{found.seeds_needed} seeds would reach 80%" if found.seeds_needed else "40 seeds would not reach 80%"
    return f"{head}; {more}"


def _words(ev: Evidence) -> str:
    """The outcome's words with its caveat, first in every cell that shows the row."""
    found = ev.result
    return found.rate.sentence if isinstance(found, GroupRate) and ev.reason != "uncalibrated" else ""


def short(ev: Evidence) -> str:
    """The outcome's words (the floor's start where one applies), β and b, the late excess, the power."""
    found = ev.result
    if not isinstance(found, GroupRate):
        return "-"
    r = found.rate
    if not r.per_seed:
        return f"no fit: T = {r.horizon} (a rate needs {MIN_HORIZON} steps)"
    return f"{_words(ev)}; {_figures(r)}; {_power(found)}".lstrip("; ")


def _figures(r: RateDescription) -> str:
    return (f"beta = {_iv(r.beta, r.beta_point)}, b = {_iv(r.b, r.b_point)}; late fall minus the bound's over "
            f"(T/2, T] = {_iv(r.late_excess, None)} (T = {r.horizon})")


def measured(ev: Evidence) -> str:
    """β, b, the declines of both pairs, the seeds, the power, and the shuffled control."""
    found = ev.result
    if not isinstance(found, GroupRate):
        return "-"
    r = found.rate
    if not r.per_seed:
        return short(ev)
    declines = (f"relative fall, blocks 1-2: {_iv(r.decline_early, None)}, blocks 3-4: "
                f"{_iv(r.decline_late, None)}; slowing {_iv(r.slowing, None)}; window fall {_iv(r.window_fall, None)}")
    return (f"{_words(ev)}; {_figures(r)}; {declines}; {r.seeds} seed(s), {found.group}; {_power(found)}; "
            f"shuffled inside the window: {found.shuffled.outcome}").lstrip("; ")


REASONS = {
    "skipped": lambda ev: ev.skipped or "no data",
    "uncalibrated": lambda ev: f"a control of the rule failed ({'; '.join(ev.uncalibrated)}), so the outcome is "
    "not a finding",
}


def reason(ev: Evidence) -> str:
    """Why the rate reads as it does (``analyses.theorem1.rate`` reason codes)."""
    if ev.reason in REASONS:
        return REASONS[ev.reason](ev)
    found = ev.result
    sentence = found.rate.sentence if isinstance(found, GroupRate) else ""
    return {
        "no_seed": "no usable seed",
        "short_horizon": "the horizon is below the rule's minimum",
        "few_seeds": "fewer than 3 seeds with block levels",
        "faster": "the level falls in both pairs of blocks, the late half shows no flattening, and b's interval lies "
                  "at or below 0",
        "undistinguished": "the level falls in both pairs of blocks, the late half shows no flattening; b's interval "
                           "holds 0",
        "slower": "the level falls in both pairs of blocks, the late half shows no flattening, and b's interval lies "
                  "above 0",
        "still_falling": "the level falls in both pairs of blocks and over every tail of the last half, more slowly "
                         "than the bound there",
        "transient": "the level falls faster than 1/T over the late blocks: a transient, not a rate",
        "slowing": "the fall slows significantly within the window and the last tail is flat within its interval",
        "late_flat": "over the last half the level falls significantly less than at the bound's rate, and a tail of "
                     "it is flat within its interval",
        "rising": "the level rises significantly over one pair of blocks (a warm-up peaking inside the window)",
        "flat": f"no significant fall, and the window's fall lies below {NO_DECAY_FALL:.0%} of its mean level",
        "ambiguous": "the intervals hold both a flat level and a fall (the power beside says how likely a fall "
                     "would have been seen)",
    }.get(ev.reason, ev.reason) + (f": {sentence}" if sentence else "")


OUTCOMES = {
    FALLS_AT: Outcome(RATE_SENTENCES[FALLS_AT], "holds"),
    FALLS_UNDISTINGUISHED: Outcome(RATE_SENTENCES[FALLS_UNDISTINGUISHED], "holds"),
    FALLS_SLOWER: Outcome(RATE_SENTENCES[FALLS_SLOWER] + " (slower than every standard form of C·log T/√T, the "
                          "increments of T·log(T+1)/√T and log(T+1)/√T itself; not a refutation: the bound's "
                          "constant is unknown)", "mixed"),
    FLATTENS: Outcome(RATE_SENTENCES[FLATTENS] + " from the T stated beside: over the last half the level falls "
                      "less than at the bound's rate (not a refutation of an asymptotic bound)", "mixed"),
    NO_DECAY: Outcome(RATE_SENTENCES[NO_DECAY] + f": the window's fall is below {NO_DECAY_FALL:.0%} of its level "
                      "(not a refutation of an asymptotic bound)", "fails"),
    NOT_TESTABLE: Outcome("too short, too few seeds, a transient or a warm-up, or intervals that hold both a flat "
                          "level and a fall", "none"),
    NOT_CALIBRATED: Outcome("a control of the rule failed, so its answer is not a finding", "none"),
    "not measured": NOT_MEASURED,
}
PAPER = "Theorem 1: with eta_t = eta_0/sqrt(t+1), (1/T) sum_(t<T) E||grad R^t(omega^t)||^2 <= C log T / sqrt(T)."
TESTS = ("tests/analyses/theorem1/test_analyses_rate.py::test_no_floor_family_reads_the_bounds_words",
         "tests/analyses/theorem1/test_rate_constructions.py::test_an_exponential_floor_never_reads_the_bounds_words",
         "tests/analyses/theorem1/test_rate_constructions.py::test_one_over_root_t_still_reads_a_fall_toward_zero",
         "tests/analyses/theorem1/test_analyses_controls.py::test_toy_controls_pass_and_a_wrong_extra_control_is_reported_failed")


def _claim(key: str, direction: str, surrogate: str) -> Claim:
    return register(Claim(
        key=key, title=f"Theorem 1 (a): the rate of {surrogate}, local G-hat_t ({direction})", paper=PAPER,
        question=f"Does the mean squared local gradient of {surrogate} fall toward zero in this run, at which rate, "
                 "or onto a floor?",
        primary=f"ZeroLock {direction}, SGD with eta_t ~ 1/sqrt(t), the group with the most seeds",
        outcomes=OUTCOMES, rule=_rule(key, direction), vocabulary=RATE_OUTCOMES, measured=measured, short=short,
        reason=reason,
        figure="convergence", tests=TESTS,
        analyses={RATE[direction]: lambda inputs: group_rate(inputs, "zerolock", direction),
                  RATE_CONTROLS: _controls},
    ))


REVERSE = _claim("theorem1_rate_reverse", "reverse", "R")
FORWARD = _claim("theorem1_rate_forward", "forward", "R-bar")
