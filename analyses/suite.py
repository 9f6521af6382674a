"""Analyse a set of run directories: every analysis that has its data, and the claim verdicts.

``analyze_runs(run_dirs)`` loads each run, groups runs by their config (method, direction,
optimizer, lr, schedule, K, α, ε, model; seeds pooled within a group) and calls each
analysis. An analysis without the data it needs is skipped and the reason recorded in
``SuiteAnalysis.skipped``. Each registered claim (``analyses.registry``) may add analyses of its
own; ``SuiteAnalysis.claims`` then holds one ``Verdict`` per claim, in table order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import pandas as pd

from analyses.assumption5.data import scaling_factors, scaling_run
from analyses.assumption5.scaling import SCALING, StepScaling, group_scaling_of
from analyses.descriptive.data import RunData, readouts
from analyses.descriptive.depth import DEPTH, depth_of
from analyses.descriptive.drift import DRIFT, drift_of
from analyses.descriptive.movement import MINIMIZERS, movement_table, toy_check
from analyses.descriptive.outcome import OUTCOME, compare_held_out
from analyses.descriptive.proposition_pairs import PROPOSITION, PropositionSet, pairs_group
from analyses.descriptive.stability import OBJECTIVES, STABILITY_SUMMARY, summarize_stability
from analyses.descriptive.toy import TOY_CHECK
from analyses.descriptive.tracking import TRACKING, TrackingSet, direction_tracking, tracking_of
from analyses.io import Run, RunDataError, load_run
from analyses.lemma2.fixed_point import FIXED_POINT, FixedPointResult
from analyses.lemma2.fixed_point_controls import CONTROLS, FixedPointControls
from analyses.registry import ClaimInputs, SuiteInputs, claims, decide
from analyses.results import NotMeasured, Result, ResultKey, load_result
from analyses.runinfo import SHARED_SETTINGS, IncomparableRuns, RunInfo, check_comparable, run_info
from analyses.stats.seeds import diverged
from analyses.suite_result import INDEX, SuiteAnalysis, load_suite
from analyses.systems.memory import SYSTEMS, systems_comparison
from analyses.theorem1.bound_set import theorem1_results
from analyses.versus.factorial import FACTORIAL, analyze_factorial, is_factorial_dir
from analyses.versus.tuned_versus import TUNED
from zerolock_theory.vocab import direction_of

__all__ = [
    "INDEX",
    "SHARED_SETTINGS",
    "IncomparableRuns",
    "RunInfo",
    "SuiteAnalysis",
    "analyze_loaded",
    "analyze_runs",
    "check_comparable",
    "load_suite",
]



def _unique_names(paths: Sequence[Path]) -> list[str]:
    names = [p.name for p in paths]
    if len(set(names)) == len(names):
        return names
    common = os.path.commonpath([str(p.resolve()) for p in paths])
    return [os.path.relpath(str(p.resolve()), common) for p in paths]


def analyze_runs(
    run_dirs: Sequence[str | Path],
    *,
    systems: str | Path | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    tail: float = 0.5,
    tol: float = 0.0,
) -> SuiteAnalysis:
    """Load ``run_dirs`` and analyse them (``analyze_loaded``).

    A directory holding ``systems.json`` but no ``metrics.jsonl`` is taken as the systems
    benchmark output (as is ``systems``); one holding ``tune.json`` as a ``zerolock tune``
    directory (the tuned comparison of ZeroLock against backprop); one holding tune directories as the
    factorial of method controls (``analyses.versus.factorial``: why ZeroLock falls behind). Raises ``RunDataError`` for an unreadable run.
    """
    paths = [Path(p) for p in run_dirs]
    runs_paths, extra = [], {}
    for path in paths:
        if path.is_dir() and (path / "systems.json").is_file() and not (path / "metrics.jsonl").exists():
            systems = systems or path
        elif path.is_dir() and (path / TUNE_FILE).is_file() and not (path / "metrics.jsonl").exists():
            extra[TUNED.name] = _tuned(path, level)
        elif is_factorial_dir(path):
            try:
                extra[FACTORIAL.name] = analyze_factorial(path, level)
            except ValueError as exc:
                raise RunDataError(f"{path}: {exc}") from exc
        elif path.is_dir() and any((path / f).is_file() for f in (FIXED_POINT_FILE, CONTROLS_FILE)) \
                and not (path / "metrics.jsonl").exists():
            if (path / FIXED_POINT_FILE).is_file():
                found = _fixed_point(path / FIXED_POINT_FILE)
                extra[FIXED_POINT.of(found.chunk).name] = found
            if (path / CONTROLS_FILE).is_file():
                controls = _fixed_point(path / CONTROLS_FILE, FixedPointControls)
                extra[CONTROLS.of(controls.chunk).name] = controls
        else:
            runs_paths.append(path)
    if not runs_paths:
        raise RunDataError("no run directory given (only systems or fixed-point output)")
    runs = [load_run(p) for p in runs_paths]
    if systems is None:
        systems = next((p for p in runs_paths if (p / "systems.json").is_file()), None)
    return analyze_loaded(
        runs,
        _unique_names(runs_paths),
        systems=systems,
        n_boot=n_boot,
        seed=seed,
        level=level,
        tail=tail,
        tol=tol,
        extra=extra,
    )


DIVERGED_RUNS = "diverged runs"
"""The skipped entry that lists the ZeroLock runs the analyses excluded as diverged (no result)."""
FIXED_POINT_FILE = "fixed_point.json"
TUNE_FILE = "tune.json"  # a ``zerolock tune`` directory: each method at its own best eta_0


def _tuned(path: Path, level: float) -> Result:
    """ZeroLock against backprop over a tune directory (``analyses.versus.tuned_versus``)."""
    import dataclasses

    from analyses.versus.tuned import curves_table
    from analyses.versus.tuned_versus import tuned_versus
    from analyses.versus.tuning import load_tuned

    runs = load_tuned(path)
    try:
        result = tuned_versus(runs, level)
    except ValueError as exc:
        raise RunDataError(f"{path}: {exc}") from exc
    return dataclasses.replace(result, curves=tuple(curves_table(runs).to_dict("records")))
CONTROLS_FILE = "controls.json"  # the experiment with its label-part null and controls (``analyses.lemma2.fixed_point_controls``)


def _fixed_point(path: Path, kind: type = FixedPointResult):
    """The fixed-point experiment's result (``zerolock probe fixed-point``) or its controls
    (``controls.json``); ``RunDataError`` if unreadable."""
    try:
        found = load_result(path)
    except (ValueError, TypeError, KeyError, OSError) as exc:
        raise RunDataError(f"{path}: not a fixed-point result ({exc})") from exc
    if not isinstance(found, kind):
        raise RunDataError(f"{path}: not a fixed-point result (kind {found.kind!r})")
    return found


def analyze_loaded(
    runs: Sequence[Run],
    names: Sequence[str] | None = None,
    *,
    systems: str | Path | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    tail: float = 0.5,
    tol: float = 0.0,
    extra: dict[str, Result] | None = None,
) -> SuiteAnalysis:
    """Every analysis that has its data, over already loaded runs; then the claim verdicts.

    ``extra``: results computed elsewhere (the fixed-point experiment), handed to the claims."""
    names = list(names) if names is not None else [r.name for r in runs]
    check_comparable(runs, names)
    infos = [run_info(r, n) for r, n in zip(runs, names, strict=True)]
    table = list(zip(infos, [r.metrics for r in runs], strict=True))
    read = _Reads({id(f): RunData(i.name, f) for i, f in table})  # each quantity read once per run
    results: dict[str, Result] = dict(extra or {})
    skipped: dict[str, str] = {}

    def attempt(key: ResultKey, fn: Callable[[], Result]) -> None:
        try:
            results[key.name] = key.check(fn())
        except (RunDataError, NotMeasured) as exc:
            skipped[key.name] = str(exc)

    boot = {"n_boot": n_boot, "level": level, "seed": seed}
    zl_all = [(i, f) for i, f in table if i.method == "zerolock"]
    zl, excluded = _without_diverged(zl_all)
    attempt(TOY_CHECK, toy_check)
    attempt(
        MINIMIZERS, lambda: movement_table([(i.direction, read(f).distances) for i, f in zl], tail=tail, **boot)
    )
    attempt(TRACKING, partial(_tracking, zl, excluded, level))
    for obj in OBJECTIVES:
        chosen = _stability_runs(zl, obj, read)
        terms = [read(f).stability(obj) for _, f in chosen]
        trained = chosen[0][0].direction if chosen else ""
        attempt(STABILITY_SUMMARY[obj], partial(summarize_stability, terms, obj, trained=trained))
        attempt(SCALING[obj], partial(_step_scaling, zl, obj, excluded, level))
        attempt(DRIFT[obj], partial(_drift, chosen, obj, level, read))
    theorem1, theorem1_skipped = theorem1_results(table, level)  # Theorem 1 (issue 9)
    results.update(theorem1)
    skipped.update(theorem1_skipped)
    attempt(DEPTH, lambda: depth_of([read(f).task_ce for _, f in zl], tol=tol))
    attempt(PROPOSITION, partial(_proposition, zl, excluded, level, read))
    if excluded:
        skipped[DIVERGED_RUNS] = "; ".join(excluded)
    attempt(OUTCOME, lambda: compare_held_out(_groups(table, read)))
    if systems is not None:
        attempt(SYSTEMS, lambda: systems_comparison(systems))
    else:
        skipped[SYSTEMS.name] = "no systems.json given"
    inputs = SuiteInputs(table, zl, excluded, level, None if systems is None else Path(systems))
    builtin = set(results) | set(skipped)
    for row in claims():
        for key, analysis in row.analyses.items():
            if key.name in builtin:  # ``register`` refuses the built-in keys; this name it missed
                raise ValueError(f"claim {row.key!r}: analysis name {key.name!r} is taken by a built-in analysis")
            if key.name not in results and key.name not in skipped:  # an analysis shared by rows runs once
                attempt(key, partial(analysis, inputs))
    verdicts = decide(ClaimInputs(results, skipped, level))
    settings = {"n_boot": n_boot, "seed": seed, "level": level, "tail": tail, "tol": tol}
    return SuiteAnalysis(infos, skipped, verdicts, settings, results)


def _without_diverged(runs: list[tuple[RunInfo, pd.DataFrame]]):
    """(kept runs, ``"name: reason"`` of each diverged run); ``analyses.stats.seeds.diverged`` decides."""
    kept, excluded = [], []
    for info, frame in runs:
        why = diverged(frame)
        if why is None:
            kept.append((info, frame))
        else:
            excluded.append(f"{info.name}: {why.reason}")
    return kept, excluded


class _Reads(dict):
    """``RunData`` of each run, by its metrics frame's identity: ``read(frame)``."""

    def __call__(self, frame: pd.DataFrame) -> RunData:
        return self[id(frame)]


def _stability_runs(zl: list[tuple[RunInfo, pd.DataFrame]], obj: str, read: _Reads):
    """The runs of the objective's primary group that carry its stability keys (``_primary``)."""
    have = [(i, f) for i, f in zl if read(f).stability(obj).chunks]
    return _primary(have, obj)[0] if have else []


def _primary(runs: list[tuple[RunInfo, pd.DataFrame]], obj: str):
    """Groups of ``runs``, the pre-registered one first: the objective's own training direction
    (R: reverse, R̄: forward) with the most seeds; then the others (descriptive), by label."""
    by_group: dict[str, list[tuple[RunInfo, pd.DataFrame]]] = {}
    for info, frame in runs:
        by_group.setdefault(info.group, []).append((info, frame))

    def rank(label: str) -> tuple[bool, int, str]:
        members = by_group[label]
        return members[0][0].direction != direction_of(obj), -len(members), label

    return [by_group[g] for g in sorted(by_group, key=rank)]


def _step_scaling(zl, obj: str, excluded: list[str], level: float) -> StepScaling:
    """Assumption 5 by step scaling: one ``GroupScaling`` per group, the primary first."""
    have = [(i, f) for i, f in zl if scaling_factors(f, obj)]
    if not have:
        raise NotMeasured(f"no run has probe/scaling/{obj} keys (probe 'scaling' off)")
    groups = [
        group_scaling_of([scaling_run(f, obj, i.name) for i, f in members], obj, group=members[0][0].group,
                         trained=members[0][0].direction, level=level)
        for members in _primary(have, obj)
    ]
    return StepScaling(obj, groups, excluded)


def _tracking(zl, excluded: list[str], level: float) -> TrackingSet:
    """Lemma 2 on the model: per training direction, its group with the most seeds."""
    directions, reasons = [], []
    for direction in ("forward", "reverse"):
        members = [(i, f) for i, f in zl if i.direction == direction]
        if not members:
            continue
        best = max(_primary(members, "implemented"), key=len)
        runs = []
        for info, _ in best:
            try:
                runs.append(tracking_of(readouts(info.path, info.name), info.alpha, info.epsilon))
            except NotMeasured as exc:
                reasons.append(str(exc))
        if runs:
            directions.append(direction_tracking(runs, direction, best[0][0].group, level))
    if not directions:
        raise NotMeasured("; ".join(reasons) or "no ZeroLock run")
    return TrackingSet(directions, excluded)


def _proposition(zl, excluded: list[str], level: float, read: _Reads) -> PropositionSet:
    """Proposition 1 per group; the primary group is the paper's setting (reverse, most seeds)."""
    groups = []
    for members in _primary(zl, "paper"):
        try:
            groups.append(pairs_group([read(f).chunk_pairs for _, f in members], group=members[0][0].group,
                                      trained=members[0][0].direction, level=level))
        except NotMeasured:
            continue
    if not groups:
        raise NotMeasured("no run has probe/minimizer/{k}/ce and gap (probe 'minimizers' off)")
    return PropositionSet(groups, excluded)


def _drift(chosen, obj: str, level: float, read: _Reads):
    """The drift check on the primary group of the stability probe (``_stability_runs``)."""
    if not chosen:
        raise NotMeasured(f"no run has probe/stability/{obj} keys")
    return drift_of([read(f).totals(obj) for _, f in chosen], obj, group=chosen[0][0].group, level=level)


def _groups(table: list[tuple[RunInfo, pd.DataFrame]], read: _Reads) -> dict[str, tuple[str, list]]:
    groups: dict[str, tuple[str, list]] = {}
    for info, frame in table:
        groups.setdefault(info.group, (info.method, []))[1].append(read(frame).held_out)
    return groups
