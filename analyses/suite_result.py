"""The suite's result: every analysis result by name, the verdicts, save and load."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from analyses.io import RunDataError
from analyses.registry import ClaimInputs, claims, decide
from analyses.results import R, Result, ResultFamily, ResultKey, load_result, register
from analyses.runinfo import RunInfo
from analyses.verdict import BOUND_REASONS, Verdict
from zerolock_theory import jsonio

__all__ = ["INDEX", "SuiteAnalysis", "load_suite"]

INDEX = "analysis.json"


@register
@dataclass(frozen=True)
class SuiteAnalysis(Result):
    """The runs, the skipped analyses with reasons, the verdicts (one per registered claim) and
    every analysis result by name. Saved as ``analysis.json`` plus ``NAME.json`` per result;
    each result file carries its ``kind``, so it reloads as its own class."""

    kind: ClassVar[str] = "suite"
    runs: list[RunInfo]
    skipped: dict[str, str]
    claims: list[Verdict]
    settings: dict[str, Any]
    results: dict[str, Result] = field(default_factory=dict)

    def get(self, key: ResultKey[R]) -> R | None:
        """The result of ``key``, of its type (``None`` when skipped or unknown)."""
        return key.check(self.results.get(key.name))

    def each(self, family: ResultFamily[R]) -> list[R]:
        """Every chunk's result of ``family`` (``ClaimInputs.each``)."""
        return self.inputs().each(family)

    def why(self, key: ResultKey, default: str = "") -> str:
        """Why the analysis of ``key`` did not run (``default`` when it is not recorded)."""
        return self.skipped.get(key.name, default)

    def inputs(self) -> ClaimInputs:
        """What the claims' rules read."""
        return ClaimInputs(self.results, self.skipped, float(self.settings.get("level", 0.95)))

    def save(self, out_dir: str | Path) -> Path:
        """Write ``NAME.json`` per result and the index ``analysis.json``; return the index path."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        files = {}
        for name, result in self.results.items():
            files[name] = f"{name}.json"
            result.save(out / files[name])
        index = {k: v for k, v in self.to_dict().items() if k != "results"}
        index["results"] = files
        path = out / INDEX
        path.write_text(jsonio.dumps(index, indent=2) + "\n", encoding="utf-8")
        return path


def _current(claim: dict[str, Any]) -> bool:
    """A verdict row in the form ``analyze_runs`` writes: a registered claim, one of its
    ``outcome`` words, and evidence as data (no group ``statement`` or bound-test sentence)."""
    evidence = claim.get("evidence") if isinstance(claim, dict) else None
    known = {c.key: c for c in claims()}
    if not isinstance(evidence, dict) or "outcome" not in claim or claim.get("claim") not in known:
        return False
    if claim["outcome"] not in known[claim["claim"]].outcomes:  # a word its claim does not have
        return False
    bounds = [b for b in (evidence.get("bound"), evidence.get("backprop")) if isinstance(b, dict)]
    return not (any("statement" in g for g in evidence.get("groups") or ())
                or any(b.get("reason") not in BOUND_REASONS for b in bounds))


def load_suite(directory: str | Path) -> SuiteAnalysis:
    """Inverse of ``SuiteAnalysis.save``; ``RunDataError`` when the index or a file is missing.

    An index in another form (rows with a ``verdict`` and no ``outcome``, or sentences as
    evidence) gets its verdicts decided again from its results, by the rules ``analyze_runs``
    applies."""
    root = Path(directory)
    index_path = root / INDEX
    if not index_path.is_file():
        raise RunDataError(f"{root}: missing {INDEX} (not an analysis directory?)")
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunDataError(f"{index_path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    results: dict[str, Result] = {}
    for name, file in index.pop("results", {}).items():
        if not (root / file).is_file():
            raise RunDataError(f"{root}: missing {file} listed in {INDEX}")
        try:
            results[name] = load_result(root / file)
        except (ValueError, TypeError, KeyError) as exc:
            raise RunDataError(f"{root / file}: {exc}") from exc
    legacy = not all(_current(claim) for claim in index.get("claims", []))
    if legacy:
        index["claims"] = []
    suite = dataclasses.replace(SuiteAnalysis.from_dict(index), results=results)
    return dataclasses.replace(suite, claims=decide(suite.inputs())) if legacy else suite
