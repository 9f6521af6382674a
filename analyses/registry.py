"""The claim registry: one ``Claim`` record per row of the verdict table.

A claim states what it tests and how, as data: the paper's statement quoted, the question the
row answers in words, the primary group it reads, its closed set of outcomes (each with the
sentence that says what it means and a tone for colouring), the rule (a pure function of the
analysis results), the outcome words of the analysis the rule passes through (``vocabulary``,
each one of the row's outcomes), and how its evidence reads (``measured``: the figure behind the
outcome; ``short``: one headline figure with its interval, for the report's card; ``reason``: why
the rule gave that outcome). A claim may bring its own analyses (``analyses``: result key →
function of ``SuiteInputs``); the suite runs them, saves their results and hands them to every
rule, which fetches each by its declared ``ResultKey`` (``analyses.results``). A key is one
result: ``register`` refuses a key the suite writes itself (``ResultKey.builtin``) or one another
claim's different analysis has (rows may share one analysis: the same function under the same
key, run once).

``zerolock verify``, ``zerolock analyze``, ``zerolock report``, the README table and the tests
iterate ``claims()``, in registration order. Adding a row is one module that calls
``register`` (imported by ``analyses.registry``, or by the caller before analysing) and its tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, TypeVar, get_args

import pandas as pd

from analyses.results import Result, ResultFamily, ResultKey
from analyses.runinfo import RunInfo
from analyses.stats.multiplicity import multiplicity
from analyses.verdict import Evidence, Verdict

__all__ = ["NOT_MEASURED", "NOT_TESTABLE", "TONES", "Claim", "ClaimInputs",
           "Outcome", "SuiteInputs", "Tone", "claim", "claims", "corrected", "decide", "measured_text", "reason_text",
           "register", "result_rule", "run_names", "skipped", "unregister"]

Tone = Literal["holds", "fails", "mixed", "none"]
TONES: tuple[str, ...] = get_args(Tone)
"""How an outcome reads at a glance: the claim (or the proof step) holds on this run; it fails;
a mixed or undecided answer; no answer (not testable, not measured, not calibrated)."""

T = TypeVar("T", bound=Result)

@dataclass(frozen=True)
class Outcome:
    """One outcome word of a claim: what it means, in one sentence, and its tone."""

    meaning: str
    tone: Tone

    def __post_init__(self) -> None:
        if self.tone not in TONES:
            raise ValueError(f"tone must be one of {TONES}, got {self.tone!r}")


@dataclass(frozen=True)
class ClaimInputs:
    """What a rule reads: the analysis results by name and the reasons of the skipped ones."""

    results: Mapping[str, Result]
    skipped: Mapping[str, str]
    level: float = 0.95  # the intervals' level; the table's correction controls its error at 1 - level

    def get(self, key: ResultKey[T]) -> T | None:
        """The result of ``key``, of its type (None when skipped or absent; ``ResultKey.check``)."""
        return key.check(self.results.get(key.name))

    def each(self, family: ResultFamily[T]) -> list[T]:
        """Every chunk's result of ``family``, in name order."""
        return [self.results[n] for n in sorted(self.results) if family.owns(n) and isinstance(self.results[n], family.kind)]

    def why(self, key: ResultKey) -> str:
        """Why the analysis of ``key`` did not run (empty when it is not recorded)."""
        return self.skipped.get(key.name, "")


@dataclass(frozen=True)
class SuiteInputs:
    """What an analysis reads: every run with its metrics, the ZeroLock runs kept (diverged ones
    excluded, ``"name: reason"`` in ``excluded``), the interval level and the systems output."""

    table: Sequence[tuple[RunInfo, pd.DataFrame]]
    zerolock: Sequence[tuple[RunInfo, pd.DataFrame]]
    excluded: Sequence[str]
    level: float = 0.95
    systems: Path | None = None  # a directory or file of the systems benchmark (``systems.json``), if given


@dataclass(frozen=True)
class Claim:
    """One verdict row (module docstring)."""

    key: str  # stable identifier, the JSON's ``claim``
    title: str  # the row's label
    paper: str  # the paper's statement, quoted
    question: str  # the question the row answers, in words
    primary: str  # the primary group it reads, in words
    outcomes: Mapping[str, Outcome]  # the closed set of outcome words
    rule: Callable[[ClaimInputs], Verdict]
    measured: Callable[[Evidence], str]  # the headline figure with its interval
    reason: Callable[[Evidence], str]  # why the rule gave its outcome
    short: Callable[[Evidence], str] | None = None  # the card's headline: one figure with its interval
    figure: str | None = None  # a figure of the report (``reports.figures.FIGURES``) for the card
    analyses: Mapping[ResultKey, Callable[[SuiteInputs], Result]] = field(default_factory=dict)
    control: bool = False  # a control of a rule, not a claim of the paper
    tests: tuple[str, ...] = ()  # its calibration or control tests, "tests/PATH.py::test_name"
    p_value: Callable[[Evidence], float | None] | None = None  # the decisive test's two-sided p (None: no test)
    vocabulary: tuple[str, ...] = ()  # the outcome words of the analysis the rule passes through

    def __post_init__(self) -> None:
        missing = [w for w in self.vocabulary if w not in self.outcomes]
        if missing:
            raise ValueError(f"claim {self.key!r}: its analysis can return {missing}, not among its outcomes")

    def headline(self, evidence: Evidence) -> str:
        """The card's headline: ``short`` when the claim has one, else ``measured``."""
        return (self.short or self.measured)(evidence)

    def decide(self, inputs: ClaimInputs) -> Verdict:
        """The rule's verdict, checked against the claim's key and closed set of outcomes."""
        verdict = self.rule(inputs)
        if verdict.claim != self.key:
            raise ValueError(f"claim {self.key!r}: its rule returned a verdict for {verdict.claim!r}")
        if verdict.outcome not in self.outcomes:
            raise ValueError(f"claim {self.key!r}: outcome {verdict.outcome!r} is not one of {tuple(self.outcomes)}")
        if verdict.evidence.p_value is None and self.p_value is not None:
            verdict = replace(verdict, evidence=replace(verdict.evidence, p_value=self.p_value(verdict.evidence)))
        return verdict


_REGISTRY: dict[str, Claim] = {}


def register(new: Claim) -> Claim:
    """Add ``new`` to the table (after the rows registered before it); ``ValueError`` for a taken
    key, or for an analysis name that is taken (module docstring)."""
    if new.key in _REGISTRY and _REGISTRY[new.key] is not new:
        raise ValueError(f"claim {new.key!r} is already registered")
    for key, analysis in new.analyses.items():
        if key.builtin:
            raise ValueError(f"claim {new.key!r}: analysis name {key.name!r} is taken by the built-in analyses "
                             "(analyses.suite)")
        for other in _REGISTRY.values():
            if other is not new and key in other.analyses and other.analyses[key] is not analysis:
                raise ValueError(f"claim {new.key!r}: analysis name {key.name!r} is taken by claim {other.key!r}")
    _REGISTRY[new.key] = new
    return new


def unregister(key: str) -> None:
    """Remove a claim (tests that register one of their own)."""
    _REGISTRY.pop(key, None)


def claims() -> tuple[Claim, ...]:
    """Every registered claim, in table order."""
    return tuple(_REGISTRY.values())


def claim(key: str) -> Claim:
    """The claim registered under ``key``; ``KeyError`` naming the known keys otherwise."""
    try:
        return _REGISTRY[key]
    except KeyError:
        raise KeyError(f"unknown claim {key!r}; registered: {', '.join(_REGISTRY)}") from None


def decide(inputs: ClaimInputs) -> list[Verdict]:
    """The verdict table: one ``Verdict`` per registered claim, in table order, each row with a p
    placed in the table's Holm correction at ``inputs.level`` (``analyses.stats.multiplicity``)."""
    return corrected([c.decide(inputs) for c in claims()], inputs.level)


def corrected(verdicts: Sequence[Verdict], level: float = 0.95) -> list[Verdict]:
    """``verdicts`` with ``correction`` set: Holm over the rows whose evidence has a ``p_value``."""
    found = multiplicity([v.evidence.p_value for v in verdicts], level)
    return [replace(v, correction=m) for v, m in zip(verdicts, found, strict=True)]


def skipped(key: str, result: ResultKey, inputs: ClaimInputs) -> Verdict:
    """The row of a claim whose analysis ``result`` did not run: "not measured", with the reason."""
    return Verdict(key, "not measured", Evidence("skipped", skipped=inputs.why(result)))


def result_rule(key: str, result: ResultKey[T], reason: Callable[[T], str] = lambda found: "computed"
                ) -> Callable[[ClaimInputs], Verdict]:
    """The rule of a row whose analysis ``result`` decides by itself: its result's ``outcome``, the
    result as the evidence (``reason(result)`` its code); "not measured" when it did not run."""
    def rule(inputs: ClaimInputs) -> Verdict:
        found = inputs.get(result)
        if found is None:
            return skipped(key, result, inputs)
        return Verdict(key, found.outcome, Evidence(reason(found), result=found))
    return rule


def measured_text(verdict: Verdict) -> str:
    """The row's "measured" cell: its claim's headline figure."""
    return claim(verdict.claim).measured(verdict.evidence)


def reason_text(verdict: Verdict) -> str:
    """The row's "reason" cell: its claim's reason, then the runs excluded as diverged."""
    text = claim(verdict.claim).reason(verdict.evidence)
    return text + (f"; excluded as diverged: {', '.join(verdict.evidence.excluded)}" if verdict.evidence.excluded else "")


def run_names(excluded: Sequence[str]) -> tuple[str, ...]:
    """Run names of ``"name: reason"`` entries (the diverged runs an analysis excluded)."""
    return tuple(e.split(":")[0] for e in excluded)


NOT_MEASURED = Outcome("the analysis behind the row did not run (the reason says why)", "none")
NOT_TESTABLE = Outcome("too little data to decide: too few seeds, or the pre-registered group is missing", "none")
