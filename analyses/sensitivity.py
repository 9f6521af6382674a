"""The sensitivity map: how each claim's outcome moves when one setting changes at a time.

The sensitivity suite (``zerolock_theory.app.workflows.sensitivity``) runs the same groups under a
default setting and under variants that each change one setting (α, ε of the reverse runs, K,
p_0). Each setting is analysed on its own (``analyses.suite.analyze_runs``); this module turns
the verdict tables into one map: for every registered claim and every setting, the outcome word,
its tone (``analyses.registry.TONES``) and the claim's headline figure.

A claim is **sensitive** when its outcome word is not the same in every setting; the map's
``outcome`` is "sensitive" when any claim is, else "stable". The map only describes: it runs no
test of its own (each cell is the claim's own rule on that setting's runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from analyses.registry import claim as claim_of
from analyses.registry import claims as all_claims
from analyses.results import Result, declare, register
from analyses.verdict import Verdict

__all__ = ["OUTCOMES", "SHORT_HORIZON_ROWS", "Cell", "SensitivityMap", "SettingVerdicts", "sensitivity_map"]

OUTCOMES: tuple[str, ...] = ("stable", "sensitive")
"""The map's outcome: every claim's outcome word is the same in every setting, or some claim's is not."""

SHORT_HORIZON_ROWS: tuple[str, ...] = ("assumption5_paper", "assumption5_implemented", "lemma2_mismatch",
                                       "lemma2_fixed_point", "proposition1")
"""The rows the sensitivity suite maps: those a short horizon can decide and that read the runs (Lemma 2
as stated and for the CE loss are exact computations that no setting of the runs changes; Theorem 1
and ZeroLock against backprop need a long horizon or a backprop group)."""


@dataclass(frozen=True)
class SettingVerdicts:
    """One setting's input to the map: its name, the change from the default, its verdict table."""

    name: str
    change: str
    verdicts: Sequence[Verdict]
    runs: int = 0


@dataclass(frozen=True)
class Cell:
    """One claim in one setting: the outcome word, its tone and the claim's headline figure."""

    claim: str
    setting: str
    outcome: str
    tone: str
    headline: str


@register
@dataclass(frozen=True)
class SensitivityMap(Result):
    """Claims × settings → outcome, tone and headline (module docstring).

    ``settings`` and ``changes`` are in suite order (the default first); ``claims`` and
    ``titles`` in table order; ``cells`` holds one ``Cell`` per claim × setting, claims outer;
    ``sensitive`` the keys of the claims whose outcome word differs between settings."""

    kind: ClassVar[str] = "sensitivity_map"
    outcome: str
    settings: tuple[str, ...]
    changes: tuple[str, ...]
    runs: tuple[int, ...]
    claims: tuple[str, ...]
    titles: tuple[str, ...]
    cells: tuple[Cell, ...]
    sensitive: tuple[str, ...]

    def cell(self, claim: str, setting: str) -> Cell:
        """The cell of ``claim`` in ``setting``; ``KeyError`` when there is none."""
        for c in self.cells:
            if c.claim == claim and c.setting == setting:
                return c
        raise KeyError(f"no cell for claim {claim!r} in setting {setting!r}")

    def outcomes_of(self, claim: str) -> dict[str, str]:
        """Setting → outcome word of ``claim``, in suite order."""
        return {s: self.cell(claim, s).outcome for s in self.settings}


SENSITIVITY = declare("sensitivity", SensitivityMap)


def _headline(verdict: Verdict) -> str:
    """The claim's card headline; "-" when its figures are absent (a skipped analysis)."""
    try:
        return claim_of(verdict.claim).headline(verdict.evidence)
    except (AttributeError, TypeError, ValueError, KeyError, IndexError):
        return "-"


def sensitivity_map(settings: Sequence[SettingVerdicts], keys: Sequence[str] | None = None) -> SensitivityMap:
    """The map of ``settings`` over the claims ``keys`` (default: every registered claim).

    Every setting must give one verdict per claim of ``keys``; ``ValueError`` otherwise, and for
    duplicate or no settings."""
    if not settings:
        raise ValueError("a sensitivity map needs at least one setting")
    names = [s.name for s in settings]
    if len(set(names)) != len(names):
        raise ValueError(f"setting names must differ, got {names}")
    keys = tuple(keys) if keys is not None else tuple(c.key for c in all_claims())
    cells: list[Cell] = []
    for key in keys:
        row = claim_of(key)
        for setting in settings:
            found = [v for v in setting.verdicts if v.claim == key]
            if len(found) != 1:
                raise ValueError(f"setting {setting.name!r} has {len(found)} verdicts for claim {key!r} (needs 1)")
            verdict = found[0]
            cells.append(Cell(key, setting.name, verdict.outcome, row.outcomes[verdict.outcome].tone,
                              _headline(verdict)))
    sensitive = tuple(k for k in keys if len({c.outcome for c in cells if c.claim == k}) > 1)
    return SensitivityMap(
        outcome="sensitive" if sensitive else "stable", settings=tuple(names),
        changes=tuple(s.change for s in settings), runs=tuple(s.runs for s in settings), claims=keys,
        titles=tuple(claim_of(k).title for k in keys), cells=tuple(cells), sensitive=sensitive)
