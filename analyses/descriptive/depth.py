"""Proposition 1 and depth: task loss by chunk, and the local gaps δ_k (docs/MATH.md).

Task loss per chunk: CE(e_y, p_k) from ``eval/chunk/{k}/ce`` (held out, at eval steps) when
the run has it, else ``chunk/{k}/ce`` (training minibatch, every step). Proposition 1 claims
it is non-increasing in k. At an evaluated step (all K values present) monotonicity *holds*
when CE_{k+1} ≤ CE_k + tol for every k = 1..K−1.

Local gap δ^t_k = ``probe/minimizer/{k}/gap`` (KL(p_k ‖ g_k) reverse, KL(m_k ‖ p_k) forward).

Verdict over a set of runs (``depth_verdict``): pooled share of evaluated steps where
monotonicity holds ≥ 0.9 and it holds at every run's final evaluated step → ``supported``;
share < 0.5 → ``refuted``; otherwise ``inconclusive``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.descriptive.data import TaskCE, task_ce
from analyses.results import NotMeasured, Result, declare, register

__all__ = ["DepthProfile", "DepthSet", "depth_of", "depth_profile", "depth_set", "depth_verdict", "profile_of"]

CURVE_POINTS = 300


def _thin(n: int, limit: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, limit)).astype(int)) if n else np.array([], int)


@register
@dataclass(frozen=True)
class DepthProfile(Result):
    """Task CE by chunk over one run, monotonicity in k, and δ_k trajectories."""

    kind = "depth_profile"
    run: str
    source: str
    chunks: list[int]
    tol: float
    n_evaluated: int
    n_holds: int
    share_holds: float
    pair_share: list[float]
    final_step: int
    final_ce: list[float]
    final_holds: bool
    ce_steps: list[int]
    ce: list[list[float]]
    gap_steps: list[int]
    gap: list[list[float]]
    gap_final: list[float]
    gap_median: list[float]


def profile_of(data: TaskCE, *, tol: float = 0.0) -> DepthProfile:
    """Proposition 1 on one run (module docstring), from ``analyses.descriptive.data.task_ce``.

    Guarantees: ``share_holds = n_holds / n_evaluated``; ``pair_share[k-1]`` is the share of
    evaluated steps with CE_{k+1} ≤ CE_k + tol; ``final_ce`` is CE_k at the last evaluated
    step. Raises ``NotMeasured`` without per-chunk CE or with fewer than two chunks.
    """
    if data.missing:
        raise NotMeasured(data.missing)
    rows = ~np.isnan(data.ce).any(axis=1)
    ce, steps = data.ce[rows], data.steps[rows]
    if ce.shape[0] == 0:
        raise NotMeasured(f"{data.run}: no step with CE for every chunk ({data.source})")
    pair_ok = ce[:, 1:] <= ce[:, :-1] + tol
    holds = pair_ok.all(axis=1)
    pos = _thin(len(steps), CURVE_POINTS)
    if data.gap is not None:
        gap_rows = ~np.isnan(data.gap).all(axis=1)
        gap, gap_steps = data.gap[gap_rows], data.steps[gap_rows]
    else:
        gap, gap_steps = np.zeros((0, 0)), np.array([], int)
    gpos = _thin(len(gap_steps), CURVE_POINTS)
    return DepthProfile(
        run=data.run,
        source=data.source,
        chunks=list(data.chunks),
        tol=float(tol),
        n_evaluated=int(len(steps)),
        n_holds=int(holds.sum()),
        share_holds=float(holds.mean()),
        pair_share=pair_ok.mean(axis=0).tolist(),
        final_step=int(steps[-1]),
        final_ce=ce[-1].tolist(),
        final_holds=bool(holds[-1]),
        ce_steps=steps[pos].astype(int).tolist(),
        ce=ce[pos].T.tolist(),
        gap_steps=gap_steps[gpos].astype(int).tolist(),
        gap=gap[gpos].T.tolist() if gap.size else [],
        gap_final=gap[-1].tolist() if gap.size else [],
        gap_median=np.nanmedian(gap, axis=0).tolist() if gap.size else [],
    )


def depth_profile(frame: pd.DataFrame, *, run: str = "run", tol: float = 0.0) -> DepthProfile:
    """``profile_of`` the run's ``analyses.descriptive.data.task_ce``."""
    return profile_of(task_ce(frame, run), tol=tol)


@register
@dataclass(frozen=True)
class DepthSet(Result):
    """Depth profiles of several runs and the pooled monotonicity share with its verdict."""

    kind = "depth_set"
    profiles: list[DepthProfile]
    n_evaluated: int
    n_holds: int
    share_holds: float
    all_final_hold: bool
    verdict: str


DEPTH = declare("depth", DepthSet, builtin=True)


def depth_verdict(share: float, all_final_hold: bool) -> str:
    """``supported`` (share ≥ 0.9 and final steps hold), ``refuted`` (share < 0.5), else ``inconclusive``."""
    if share >= 0.9 and all_final_hold:
        return "supported"
    if share < 0.5:
        return "refuted"
    return "inconclusive"


def depth_of(runs: Sequence[TaskCE], *, tol: float = 0.0) -> DepthSet:
    """Profiles of every run that has per-chunk CE, pooled (``NotMeasured`` if none has)."""
    profiles = []
    for data in runs:
        try:
            profiles.append(profile_of(data, tol=tol))
        except NotMeasured:
            continue
    if not profiles:
        raise NotMeasured("no run has per-chunk CE for two or more chunks")
    n_eval = sum(p.n_evaluated for p in profiles)
    n_holds = sum(p.n_holds for p in profiles)
    share = n_holds / n_eval
    final = all(p.final_holds for p in profiles)
    return DepthSet(profiles, n_eval, n_holds, share, final, depth_verdict(share, final))


def depth_set(
    frames: Sequence[pd.DataFrame], names: Sequence[str] | None = None, *, tol: float = 0.0
) -> DepthSet:
    """``depth_of`` over metrics frames (named ``names``, else ``run i``)."""
    names = list(names) if names is not None else [f"run {i}" for i in range(len(frames))]
    return depth_of([task_ce(frame, name) for frame, name in zip(frames, names, strict=True)], tol=tol)
