"""The sentences the claims share: numbers, groups of seeds and bound tests, stated.

Written from the figures the analyses leave (``analyses.verdict``): ``fmt`` is the number
format of every sentence and report section; ``group_statement`` states a ``GroupFigures`` of
tracking (Lemma 2 on the model), step scaling (Assumption 5) or Proposition 1;
``bound_reason`` states the reason code of a ``BoundFigures`` (Theorem 1's bound test),
``bound_headline`` its slope b and ``bound_summary`` the whole test in one line;
``drift_line`` the growth of the drift. The claims' ``measured`` and ``reason`` functions, the
report's sections and ``zerolock analyze rate`` print these; the analyses write no sentence.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from analyses.results import Interval
from analyses.stats.seeds import MIN_SEEDS
from analyses.verdict import MOVE_FLOOR, BoundFigures, GroupFigures

__all__ = ["BOUND_REASON_TEXT", "GROUP_TEXT", "bound_headline", "bound_reason", "bound_summary", "drift_line", "fmt",
           "group_statement"]


def fmt(value: float) -> str:
    """Three significant digits; ``inf``/``n/a`` for non-finite values."""
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.3g}"


def drift_line(runs: int, d_exponent: Interval | None, q_exponent: Interval | None) -> str:
    """One line: the growth of D_T and of Σ q_t over seeds (or why there is no interval)."""
    if d_exponent is None:
        return f"drift: {runs} run(s), 3 seeds needed for intervals"
    q = "n/a" if q_exponent is None else str(q_exponent)
    return f"drift: D_T ~ T^{d_exponent}, sum q_t ~ T^{q}"


def _or_na(x: Interval | None) -> str:
    return "n/a" if x is None else str(x)


TOWARD = {"m_k": "toward m_k more than g_k", "g_k": "toward g_k more than m_k",
          "undecided": "without a detectable preference"}


def _tracking(g: GroupFigures) -> str:
    """Where the group's chunks move (``analyses.descriptive.tracking``: ``outcome`` is its ``toward``)."""
    if g.outcome == "not measurable":
        return f"not measurable: readouts moved less than TV {MOVE_FLOOR:g} in every {g.trained}-trained run"
    if g.outcome == "not testable":
        return f"not testable: {g.measurable} measurable {g.trained}-trained seed(s), {MIN_SEEDS} needed"
    text = (f"{g.trained}-trained chunks move {TOWARD[g.outcome]}: r(m) - r(g) = {g.interval} "
            "(TV, relative to the untrained model)")
    return text if g.exact else text + "; from top-k readouts (approximate TV)"


GROUP_TEXT: dict[str, Callable[[GroupFigures], str]] = {
    "tracking": _tracking,
}


def group_statement(group: GroupFigures) -> str:
    """The analysis' statement of one group: its outcome with the figures behind it."""
    return GROUP_TEXT[group.analysis](group)


BOUND_REASON_TEXT: dict[str, Callable[[BoundFigures], str]] = {
    "no_seed": lambda b: "no usable seed",
    "short_horizon": lambda b: f"horizon T = {b.horizon} < {b.min_horizon} steps (too short to test a bound)",
    "few_seeds": lambda b: f"{b.seeds} usable seed(s) < {MIN_SEEDS}",
    "few_fitted": lambda b: f"only {b.fitted} seed(s) with enough points where A_T > 0 in the last half",
    "growing": lambda b: f"b interval above 0: B_T still grows at T = {b.horizon}",
    "not_growing": lambda b: "b interval reaches 0 or below: B_T does not grow at the end",
}


def bound_reason(bound: BoundFigures) -> str:
    """Why the bound test gave its verdict, then the diverged runs it excluded (a count)."""
    text = BOUND_REASON_TEXT[bound.reason](bound)
    return text + (f" ({bound.diverged} diverged run(s) excluded)" if bound.diverged else "")


def bound_headline(bound: BoundFigures) -> str:
    """``b = est [low, high] (n seeds, T = horizon)`` or why b is missing."""
    if bound.slope is None:
        return f"b not estimable ({bound.seeds} seed(s), T = {bound.horizon})"
    return f"b = {bound.slope} ({bound.seeds} seeds, T = {bound.horizon})"


def bound_summary(bound: BoundFigures) -> str:
    """One line: label, verdict, b with its interval, descriptive β, reason."""
    beta = f"; beta = {bound.beta} (descriptive)" if bound.beta is not None else ""
    return f"{bound.label}: {bound.verdict} — {bound_headline(bound)}{beta}; {bound_reason(bound)}"
