"""A row of the verdict table and the evidence behind it, as data (docs/ANALYSES.md).

Each claim's rule (``analyses.registry``) decides a ``Verdict`` and records what it read in its
``Evidence``: a reason code of that rule, the suite's skip reason, the runs excluded as
diverged, and the typed figures of the analysis behind the row (the exact two-token toy,
groups of seeds with their headline interval, a Theorem 1 bound test, the drift growth, the
stability ratio ρ_t along training). The claim's ``measured`` and ``reason`` functions state
the evidence; ``analyses.text`` states each group (``GroupFigures``) and bound test
(``BoundFigures``, its reason a code of ``BOUND_REASONS``). Undefined numbers are NaN
(``null`` in JSON); a missing interval is ``None``. A row decided by a seed-level test carries
its two-sided p (``Evidence.p_value``) and, once the table is decided, its place in the table's
Holm correction (``Verdict.correction``, ``analyses.stats.multiplicity``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analyses.results import Interval, Result, decode
from analyses.stats.multiplicity import Multiplicity

__all__ = ["BOUND_REASONS", "GROUP_ANALYSES", "MOVE_FLOOR", "BoundFigures", "Evidence", "GroupFigures",
           "Verdict"]

GROUP_ANALYSES: tuple[str, ...] = ("tracking",)
BOUND_REASONS: tuple[str, ...] = (
    "no_seed",  # no usable seed
    "short_horizon",  # the horizon is below min_horizon: too short to test a bound
    "few_seeds",  # fewer than MIN_SEEDS usable seeds
    "few_fitted",  # fewer than MIN_SEEDS seeds with enough points where A_T > 0 in the last half
    "growing",  # b's interval lies above 0: B_T still grows at the horizon
    "not_growing",  # b's interval reaches 0 or below: B_T does not grow at the end
)



def _check_member(value: str, allowed: tuple[str, ...], name: str) -> None:
    """One-line ``ValueError`` unless ``value`` is one of ``allowed`` (the records' fixed codes)."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


MOVE_FLOOR = 0.01
"""Tracking: the least TV a run's readouts must move to be measurable (``analyses.descriptive.tracking``)."""

@dataclass(frozen=True)
class GroupFigures:
    """One group of seeds behind a row, as its analysis (``analysis``, one of ``GROUP_ANALYSES``)
    left it: its own outcome, the headline interval over seeds, and the other figures that
    ``analyses.text.group_statement`` states; a figure the analysis lacks keeps its default."""

    group: str
    trained: str
    analysis: str
    outcome: str  # the analysis' own verdict of the group (tracking's ``toward``, scaling's, proposition's)
    seeds: int
    headline: str  # the name of the headline figure, e.g. "r(m) - r(g)"
    interval: Interval | None  # the headline figure over seeds; None below 3 seeds
    measurable: int = 0  # tracking: seeds whose readouts moved at least MOVE_FLOOR
    exact: bool = True  # tracking: False when a measurable seed has top-k readouts (TV approximate)

    def __post_init__(self) -> None:
        _check_member(self.analysis, GROUP_ANALYSES, "analysis")


@dataclass(frozen=True)
class BoundFigures:
    """The bound test of one group (``analyses.theorem1.convergence.BoundTest``)."""

    label: str
    verdict: str
    reason: str  # why the test gave its verdict: one of BOUND_REASONS
    slope: Interval | None  # b, the slope of log B_T on log T; None when not estimable
    beta: Interval | None  # descriptive decay exponent
    seeds: int
    horizon: int
    min_horizon: int  # the shortest horizon the test accepts
    fitted: int  # seeds with a slope b
    diverged: int  # diverged runs excluded from the test

    def __post_init__(self) -> None:
        _check_member(self.reason, BOUND_REASONS, "bound reason")




@dataclass(frozen=True)
class Evidence:
    """What a verdict rests on. ``groups`` puts the pre-registered group first unless ``reason``
    says it is missing; ``backprop`` is backprop's bound test beside ZeroLock's (global row)."""

    reason: str  # a code of the claim's rule (its ``reason`` function states it)
    skipped: str = ""
    preregistered: str = ""  # the training direction of the pre-registered group
    excluded: tuple[str, ...] = ()  # runs excluded as diverged
    groups: tuple[GroupFigures, ...] = ()
    uncalibrated: tuple[str, ...] = ()  # controls of the rule that failed
    result: Result | None = None  # the analysis result the row read (rows that need no figures above)
    p_value: float | None = None  # two-sided p of the decisive seed-level test; None: no statistical decision
    beside: tuple[str, ...] = ()  # what the row does not decide on but a reader must see (e.g. other chunks)


@dataclass(frozen=True)
class Verdict:
    """One row of the verdict table: the claim's key (``analyses.registry``), the outcome its rule
    gave (one of the claim's closed set) and the evidence behind it."""

    claim: str
    outcome: str
    evidence: Evidence
    correction: Multiplicity | None = None  # Holm over the table's rows with a p (``analyses.stats.multiplicity``)

    @property
    def counted(self) -> bool:
        """Whether the bottom line counts the outcome: no p, or a decision that survives the correction."""
        return self.correction is None or self.correction.survives is not False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        """Rebuild from ``dataclasses.asdict`` or the JSON of a suite's ``claims``."""
        return decode(cls, data)
