"""The suite's result: every analysis under a named, typed field, the verdicts, save and load."""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from analyses.claims import verdicts
from analyses.convergence import BoundTest
from analyses.depth import DepthSet
from analyses.drift import DriftCheck
from analyses.io import RunDataError
from analyses.minimizers import MinimizerTable, ToyCheck
from analyses.outcome import OutcomeComparison
from analyses.proposition import PropositionSet
from analyses.results import Result, register
from analyses.runinfo import RunInfo
from analyses.scaling import StepScaling
from analyses.stability import StabilitySummary
from analyses.systems import SystemsComparison
from analyses.theorem1 import BoundSet, DivergedRuns
from analyses.tracking import TrackingSet
from analyses.verdict import BOUND_REASONS, Verdict
from zerolock_theory import jsonio

__all__ = ["INDEX", "RESULT_FIELDS", "SuiteAnalysis", "load_suite"]

INDEX = "analysis.json"
RESULT_FIELDS: tuple[str, ...] = ("toy_check", "minimizers", "tracking", "stability_paper", "stability_implemented", "scaling_paper", "scaling_implemented", "drift_paper", "drift_implemented", "convergence_reverse", "convergence_forward", "convergence_backprop", "convergence_global", "convergence_global_backprop", "control_logistic", "diverged", "depth", "proposition", "outcome", "systems")


@register
@dataclass(frozen=True)
class SuiteAnalysis(Result):
    """The runs, the skipped analyses with reasons, the verdicts and one typed field per analysis
    (``None`` when skipped). Saved as ``analysis.json`` plus ``NAME.json`` per present result."""

    kind: ClassVar[str] = "suite"
    runs: list[RunInfo]
    skipped: dict[str, str]
    claims: list[Verdict]
    settings: dict[str, Any]
    toy_check: ToyCheck | None = None
    minimizers: MinimizerTable | None = None
    tracking: TrackingSet | None = None
    stability_paper: StabilitySummary | None = None
    stability_implemented: StabilitySummary | None = None
    scaling_paper: StepScaling | None = None
    scaling_implemented: StepScaling | None = None
    drift_paper: DriftCheck | None = None
    drift_implemented: DriftCheck | None = None
    convergence_reverse: BoundSet | None = None  # Theorem 1 (issue 9): analyses.theorem1
    convergence_forward: BoundSet | None = None
    convergence_backprop: BoundSet | None = None
    convergence_global: BoundSet | None = None
    convergence_global_backprop: BoundSet | None = None
    control_logistic: BoundTest | None = None
    diverged: DivergedRuns | None = None
    depth: DepthSet | None = None
    proposition: PropositionSet | None = None
    outcome: OutcomeComparison | None = None
    systems: SystemsComparison | None = None

    @property
    def results(self) -> dict[str, Result]:
        """The present results by field name."""
        return {n: r for n in RESULT_FIELDS if (r := getattr(self, n)) is not None}

    def get(self, name: str) -> Result | None:
        """The result of field ``name`` (``None`` when skipped or not a result field)."""
        return getattr(self, name) if name in RESULT_FIELDS else None

    def save(self, out_dir: str | Path) -> Path:
        """Write ``NAME.json`` per present result and the index ``analysis.json``; return the index path."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        files = {}
        for name, result in self.results.items():
            files[name] = f"{name}.json"
            result.save(out / files[name])
        index = {k: v for k, v in self.to_dict().items() if k not in RESULT_FIELDS}
        index["results"] = files
        path = out / INDEX
        path.write_text(jsonio.dumps(index, indent=2) + "\n", encoding="utf-8")
        return path


def _result_class(name: str) -> type[Result]:
    hint = typing.get_type_hints(SuiteAnalysis)[name]
    (cls,) = [a for a in typing.get_args(hint) if a is not type(None)]
    return cls


def _written_as_text(claim: dict[str, Any]) -> bool:
    """A verdict row saved before its evidence was data only: without evidence (a figure and a
    reason sentence), or with a group's ``statement`` or a bound test's reason sentence in it."""
    evidence = claim.get("evidence")
    if not isinstance(evidence, dict):
        return True
    bounds = [b for b in (evidence.get("bound"), evidence.get("backprop")) if isinstance(b, dict)]
    return (any("statement" in g for g in evidence.get("groups") or ())
            or any(b.get("reason") not in BOUND_REASONS for b in bounds))


def load_suite(directory: str | Path) -> SuiteAnalysis:
    """Inverse of ``SuiteAnalysis.save``; ``RunDataError`` when the index or a file is missing.

    An index written when the verdicts' evidence held sentences (``_written_as_text``) gets its
    verdicts decided again (``analyses.claims.verdicts``, the rule ``analyze_runs`` applies)."""
    root = Path(directory)
    index_path = root / INDEX
    if not index_path.is_file():
        raise RunDataError(f"{root}: missing {INDEX} (not an analysis directory?)")
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunDataError(f"{index_path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    results = {}
    for name, file in index.pop("results", {}).items():
        if name not in RESULT_FIELDS:
            raise RunDataError(f"{root}: unknown analysis {name!r} in {INDEX}")
        if not (root / file).is_file():
            raise RunDataError(f"{root}: missing {file} listed in {INDEX}")
        results[name] = _result_class(name).from_json((root / file).read_text(encoding="utf-8"))
    legacy = any(_written_as_text(claim) for claim in index.get("claims", []))
    if legacy:  # written when rows held sentences: decided again from the results
        index["claims"] = []
    suite = dataclasses.replace(SuiteAnalysis.from_dict(index), **results)
    return dataclasses.replace(suite, claims=verdicts(suite.results, suite.skipped)) if legacy else suite
