"""Theorem 1 (a): the rate of the local Ĝ_t, described at this horizon, for R (reverse) and R̄
(forward), with the controls of the rule (docs/THEOREM1.md).

Each row reads ``analyses.rate.describe_rate`` on its primary group (``groups.primary_group``:
ZeroLock of the direction, SGD with η_t ∝ 1/√t, most seeds), column ``train/grad_sq_unbiased``
(Ĝ_t of two half-batches, unbiased for ‖∇R^t‖²), fit window the last ½ (the last ⅓ is shown as
the sensitivity check). Outcomes are descriptive: "at least the bound's rate", "slower than the
bound", "no decay", "not testable"; never "refuted": a finite run cannot refute a bound with an
unknown constant. If a control of the rule fails (``analyses.controls.rate_controls``: logistic
regression with η_t ∝ 1/√t must read "at least the bound's rate", backprop's Ĝ_t must not read
"no decay", constant-step SGD on the toy and the noise floor ‖g_t‖² − Ĝ_t of the forward runs must
read "no decay"; ``MODEL_CONTROLS``), a row that would decide reads "not calibrated".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analyses.claims.groups import primary_group
from analyses.claims.registry import (
    NOT_MEASURED,
    Claim,
    ClaimInputs,
    Outcome,
    SuiteInputs,
    register,
    run_names,
    skipped,
)
from analyses.controls import NEGATIVE, NOT_FLAT, RateControls, rate_controls
from analyses.convergence import (
    BIASED_COLUMN,
    FLOOR_COLUMN,
    GHAT_COLUMN,
    series_from_table,
    with_noise_floor,
)
from analyses.rate import MIN_HORIZON, RATE_SENTENCES, WINDOWS, RateDescription, describe_rate
from analyses.results import NotMeasured, Result
from analyses.results import register as register_result
from analyses.verdict import Evidence, Verdict
from zerolock_theory.vocab import NOT_CALIBRATED

__all__ = ["MODEL_CONTROLS", "GroupRate", "group_rate"]


@register_result
@dataclass(frozen=True)
class GroupRate(Result):
    """The rate description of one primary group at both fit windows, and its excluded runs."""

    kind = "group_rate"
    group: str
    excluded: list[str]
    rate: RateDescription  # window ½: decides
    third: RateDescription  # window ⅓: the sensitivity check


def group_rate(inputs: SuiteInputs, method: str, direction: str = "", column: str = GHAT_COLUMN) -> GroupRate:
    """The rate of ``column`` on the primary group of ``method``/``direction`` (``NotMeasured`` without one)."""
    group = primary_group(inputs.table, method, direction)
    if group is None:
        raise NotMeasured(f"no {method} {direction} group trained with SGD and eta_t ~ 1/sqrt(t)".replace("  ", " "))
    if not group.runs:
        raise NotMeasured(f"{group.label}: every run diverged")
    derive = with_noise_floor if column == FLOOR_COLUMN else (lambda frame: frame)
    series = [series_from_table(derive(frame), column, where=name)[:2] for name, frame in group.runs]
    names = [name for name, _ in group.runs]
    rates = [describe_rate(series, names=names, label=group.label, column=column, window=w, level=inputs.level)
             for w in WINDOWS]
    return GroupRate(group.label, group.excluded, rates[0], rates[1])


MODEL_CONTROLS = (
    ("positive: backprop's G-hat_t under the schedule", "backprop", "", GHAT_COLUMN, NOT_FLAT),
    ("negative: the forward runs' noise floor |g_t|^2 - G-hat_t", "zerolock", "forward", FLOOR_COLUMN, NEGATIVE),
    ("descriptive: the forward runs' biased |g_t|^2", "zerolock", "forward", BIASED_COLUMN, ()),
    ("descriptive: the reverse runs' noise floor", "zerolock", "reverse", FLOOR_COLUMN, ()),
    ("descriptive: the reverse runs' biased |g_t|^2", "zerolock", "reverse", BIASED_COLUMN, ()),
    ("descriptive: backprop's noise floor", "backprop", "", FLOOR_COLUMN, ()),
    ("descriptive: backprop's biased |g_t|^2", "backprop", "", BIASED_COLUMN, ()),
)
"""The controls read off the suite's own runs: name, method, direction, column, the outcomes it must
read (empty: descriptive, shown beside the controls, never failed). The model's negative control is
the noise floor of the forward runs' squared minibatch norm (``FLOOR_COLUMN``: mean E‖g_t − ∇R^t‖², no
‖∇‖² part); the biased norm itself still carries a falling ‖∇R‖² part at T = 1000 (docs/THEOREM1.md)."""


def _controls(inputs: SuiteInputs) -> RateControls:
    """The toy controls at the primary horizon and the controls of ``MODEL_CONTROLS``."""
    extra = {}
    horizons = []
    for name, method, direction, column, allowed in MODEL_CONTROLS:
        try:
            found = group_rate(inputs, method, direction, column)
        except (NotMeasured, ValueError):
            continue
        extra[name] = (found.rate, allowed)
        horizons.append(found.rate.horizon)
    return rate_controls(max(horizons, default=1000), extra=extra, level=inputs.level)


def _rule(key: str, name: str):
    def rule(inputs: ClaimInputs) -> Verdict:
        """The rate's outcome; "not calibrated" when it decides and a control of the rule failed."""
        found = inputs.get(name, GroupRate)
        if found is None:
            return skipped(key, name, inputs)
        controls = inputs.get("rate_controls", RateControls)
        failed = tuple(controls.failed) if controls is not None else ()
        outcome = found.rate.outcome
        if failed and outcome != "not testable":
            outcome = NOT_CALIBRATED
        reason = "uncalibrated" if outcome == NOT_CALIBRATED else found.rate.reason
        return Verdict(key, outcome, Evidence(reason, excluded=run_names(found.excluded), uncalibrated=failed,
                                              result=found))
    return rule


def _iv(x, point: float) -> str:
    return f"{point:.3g} (no interval)" if x is None else str(x)


def short(ev: Evidence) -> str:
    """β and b of the decisive window."""
    found = ev.result
    if not isinstance(found, GroupRate):
        return "-"
    r = found.rate
    if r.beta is None and not math.isfinite(r.beta_point):
        return f"no fit: T = {r.horizon} (a rate needs {MIN_HORIZON} steps)"
    flip = "" if found.third.outcome == r.outcome else f"; window 1/3 reads {found.third.outcome}"
    return _figures(r) + flip


def _figures(r: RateDescription) -> str:
    return f"beta = {_iv(r.beta, r.beta_point)}, b = {_iv(r.b, r.b_point)} (T = {r.horizon})"


def measured(ev: Evidence) -> str:
    """β, b, the seeds and horizon, and whether the ⅓ window agrees."""
    found = ev.result
    if not isinstance(found, GroupRate):
        return "-"
    r, third = found.rate, found.third
    agree = "the same" if third.outcome == r.outcome else f"{third.outcome} (the outcome flips)"
    head = _figures(r) if r.beta is not None or math.isfinite(r.beta_point) else short(ev)
    return f"{head}, {r.seeds} seed(s), {found.group}; window 1/3: {agree}"


REASONS = {
    "skipped": lambda ev: ev.skipped or "no data",
    "uncalibrated": lambda ev: f"a control of the rule failed ({'; '.join(ev.uncalibrated)}), so the outcome is "
    "not a finding",
}


def reason(ev: Evidence) -> str:
    """Why the rate reads as it does (``analyses.rate`` reason codes)."""
    if ev.reason in REASONS:
        return REASONS[ev.reason](ev)
    found = ev.result
    sentence = RATE_SENTENCES[found.rate.outcome] if isinstance(found, GroupRate) else ""
    return {
        "no_seed": "no usable seed",
        "short_horizon": "the horizon is below the rule's minimum",
        "few_seeds": "fewer than 3 seeds with an exponent",
        "ambiguous": "the intervals hold both no decay and the bound's rate",
        "decays": "beta's interval lies above 0 and b's reaches 0 or below",
        "slower": "beta's and b's intervals lie above 0",
        "flat": "beta's interval reaches 0 and b's lies above 0",
    }.get(ev.reason, ev.reason) + (f": {sentence}" if sentence else "")


OUTCOMES = {
    "at least the bound's rate": Outcome(RATE_SENTENCES["at least the bound's rate"], "holds"),
    "slower than the bound": Outcome(RATE_SENTENCES["slower than the bound"] + " (not a refutation: the bound's "
                                     "constant is unknown)", "mixed"),
    "no decay": Outcome(RATE_SENTENCES["no decay"] + " (not a refutation of an asymptotic bound)", "fails"),
    "not testable": Outcome("too short, too few seeds, or the intervals hold both no decay and the bound's rate",
                            "none"),
    NOT_CALIBRATED: Outcome("a control of the rule failed, so its answer is not a finding", "none"),
    "not measured": NOT_MEASURED,
}
PAPER = "Theorem 1: with eta_t = eta_0/sqrt(t+1), (1/T) sum_(t<T) E||grad R^t(omega^t)||^2 <= C log T / sqrt(T)."
TESTS = ("tests/analyses/test_analyses_rate.py::test_each_family_gets_its_outcome_at_the_documented_rate",
         "tests/analyses/test_analyses_rate.py::test_three_seeds_on_the_bound_never_say_no_decay_and_a_plateau_does",
         "tests/analyses/test_analyses_controls.py::test_toy_controls_pass_and_a_wrong_extra_control_is_reported_failed")


def _claim(key: str, name: str, direction: str, surrogate: str) -> Claim:
    return register(Claim(
        key=key, title=f"Theorem 1 (a): the rate of {surrogate}, local G-hat_t ({direction})", paper=PAPER,
        question=f"At which rate does the mean squared local gradient of {surrogate} decay in this run?",
        primary=f"ZeroLock {direction}, SGD with eta_t ~ 1/sqrt(t), the group with the most seeds",
        outcomes=OUTCOMES, rule=_rule(key, name), measured=measured, short=short, reason=reason,
        figure="convergence", tests=TESTS,
        analyses={name: lambda inputs: group_rate(inputs, "zerolock", direction),
                  "rate_controls": _controls},
    ))


REVERSE = _claim("theorem1_rate_reverse", "rate_reverse", "reverse", "R")
FORWARD = _claim("theorem1_rate_forward", "rate_forward", "forward", "R-bar")
