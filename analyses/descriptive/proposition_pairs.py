"""Descriptive: the unscaled transcription CE_k ≤ CE_{k−1} + δ_k on a run's rising pairs.

Not a verdict (docs/MATH.md, "Proposition 1 and depth", principle 4). What the losses imply is
CE_k ≤ CE_{k−1} + δ_k/α (forward; KL(p_k ‖ p_y^ε) reverse), an identity that no run can violate
(``analyses.proposition1.identity`` is the row); the unscaled form is false as algebra (a reverse
chunk at its optimum after a confident p_{k−1}). Counting pairs on a run says neither, so the
report shows these counts beside the task CE by depth as a description of the run: where the task
loss rises with depth (CE_k > CE_{k−1}), by how much the unscaled gap covers the rise.

From the ``minimizers`` probe on the probe batch (same positions, parameters ω^{t+1}):
CE_k = ``probe/minimizer/{k}/ce`` and δ_k = ``probe/minimizer/{k}/gap`` (KL(p_k ‖ g_k)
reverse, KL(m_k ‖ p_k) forward); CE_0 (the readout p_0) when logged, so the pairs are
k = 1..K (else k = 2..K). At float tolerance tol = ``TOL_REL``·max(1, |CE_k|):

* a pair (t, k) is **rising** when CE_k − CE_{k−1} > tol;
* a rising pair **violates** when CE_k − CE_{k−1} − δ_k > tol (a violation is always rising);
* its **tightness** is (CE_k − CE_{k−1})/δ_k: ≤ 1 where it holds, +inf where δ_k = 0.

Per run (one seed): rising pairs, their share of all pairs, violations, the tightness at each
rising pair, and the same counts at the untrained model ω^0 (the baseline, from
``probe/minimizer/initial/{k}/{ce,gap}``, logged by the probe with step 0); for runs without
those keys, at the first probed step instead (``baseline_untrained`` False).

Over the seeds (binomial model, ``analyses.stats.shares.cluster_share_interval``): the pooled share
of rising pairs that violate, with a seed-respecting Clopper–Pearson interval (its upper end
bounds the violation rate when none is seen). Outcome (``OUTCOMES``; ``proposition_outcome``):

* ``not testable`` — fewer than ``MIN_SEEDS`` seeds with finite CE_k and δ_k;
* ``violated`` — at m ≥ 1 of the n rising pairs;
* ``not tested`` — no rising pair on any seed: the task loss never rises with depth on this
  run, the slack is never needed;
* ``holds`` — at the n ≥ 1 rising pairs, none violates (with their tightness).

The rule is monotone: a violation is a rising pair, so adding one never turns "violated"
into anything else, and "holds" / "not tested" into "violated" (test: hypothesis).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.descriptive.data import ChunkPairs, chunk_pairs
from analyses.results import Interval, NotMeasured, Result, declare, register
from analyses.stats.seeds import MIN_SEEDS
from analyses.stats.shares import cluster_share_interval

__all__ = ["OUTCOMES", "TOL_REL", "PairCounts", "PropositionGroup", "PropositionRun", "PropositionSet",
           "pair_counts", "pairs_group", "pairs_run", "proposition_group", "proposition_outcome", "proposition_run"]

OUTCOMES: tuple[str, ...] = ("holds", "violated", "not tested", "not testable")
TOL_REL = 1e-6
"""Float tolerance, relative to max(1, |CE_k|), for a rise and for a violation."""
# legacy words of analyses/registry.py and reports/findings.py until they read ``outcome``


@dataclass(frozen=True)
class PairCounts:
    """Pairs (t, k) of some probed steps: all, rising, violating."""

    n_pairs: int
    n_rising: int
    n_violations: int

    @property
    def rising_share(self) -> float:
        """n_rising / n_pairs."""
        return self.n_rising / self.n_pairs if self.n_pairs else float("nan")


def pair_counts(ce_prev: np.ndarray, ce: np.ndarray, gap: np.ndarray, tol_rel: float = TOL_REL
                ) -> tuple[np.ndarray, np.ndarray]:
    """(rising, violating) boolean arrays of the pairs (module docstring)."""
    tol = tol_rel * np.maximum(1.0, np.abs(ce))
    rise = ce - ce_prev
    return rise > tol, rise - gap > tol


@dataclass(frozen=True)
class PropositionRun:
    """One run's pairs (k−1, k) over its probed steps, and at its first probed step."""

    run: str
    chunks: list[int]
    steps: list[int]  # the probed steps with finite CE and δ
    pairs: PairCounts
    baseline_untrained: bool  # True: at ω^0 (``probe/minimizer/initial``); False: at the first probed step
    baseline: PairCounts
    tightness: list[float]  # (CE_k − CE_{k−1})/δ_k at each rising pair, in (step, k) order
    rising_at: list[list[int]]  # [step, k] of each rising pair
    min_margin: float  # min over all pairs of CE_{k−1} + δ_k − CE_k (descriptive)

    @property
    def violation_share(self) -> float:
        """Violations / rising pairs (NaN without rising pairs)."""
        return self.pairs.n_violations / self.pairs.n_rising if self.pairs.n_rising else float("nan")



def _untrained(data: ChunkPairs, tol_rel: float) -> PairCounts | None:
    """Pair counts at ω^0 (``probe/minimizer/initial/{k}/{ce,gap}``, the record of step 0), if logged."""
    if data.initial_ce is None or data.initial_gap is None:
        return None
    rising, violating = pair_counts(data.initial_ce[:-1], data.initial_ce[1:], data.initial_gap, tol_rel)
    return PairCounts(len(data.ks), int(rising.sum()), int(violating.sum()))


def pairs_run(data: ChunkPairs, tol_rel: float = TOL_REL) -> PropositionRun:
    """Rising pairs of one run (module docstring), from ``analyses.descriptive.data.chunk_pairs``;
    ``NotMeasured`` without CE and δ for two chunks."""
    if data.missing:
        raise NotMeasured(data.missing)
    run, ks = data.run, list(data.ks)
    prev, now, gap = data.ce[:, :-1], data.ce[:, 1:], data.gap
    rows = np.isfinite(prev).all(axis=1) & np.isfinite(now).all(axis=1) & np.isfinite(gap).all(axis=1)
    if not rows.any():
        raise NotMeasured(f"{run}: no probed step with finite CE_k and delta_k")
    steps = data.steps[rows]
    prev, now, gap = prev[rows], now[rows], gap[rows]
    rising, violating = pair_counts(prev, now, gap, tol_rel)
    with np.errstate(divide="ignore", invalid="ignore"):
        tight = np.where(gap > 0, (now - prev) / gap, np.inf)
    where = np.argwhere(rising)
    untrained = _untrained(data, tol_rel)
    baseline = untrained or PairCounts(len(ks), int(rising[0].sum()), int(violating[0].sum()))
    return PropositionRun(
        run=run, chunks=ks, steps=[int(s) for s in steps],
        pairs=PairCounts(int(rising.size), int(rising.sum()), int(violating.sum())),
        baseline_untrained=untrained is not None,
        baseline=baseline,
        tightness=[float(tight[i, j]) for i, j in where],
        rising_at=[[int(steps[i]), ks[j]] for i, j in where],
        min_margin=float((prev + gap - now).min()),
    )


def proposition_run(frame: pd.DataFrame, run: str = "run", tol_rel: float = TOL_REL) -> PropositionRun:
    """``pairs_run`` of the run's ``analyses.descriptive.data.chunk_pairs``."""
    return pairs_run(chunk_pairs(frame, run), tol_rel)


def proposition_outcome(n_seeds: int, n_rising: int, n_violations: int, *, min_seeds: int = MIN_SEEDS) -> str:
    """``not testable`` / ``violated`` / ``not tested`` / ``holds`` from the totals over seeds."""
    if n_seeds < min_seeds:
        return "not testable"
    if n_violations > 0:
        return "violated"
    return "holds" if n_rising > 0 else "not tested"


@dataclass(frozen=True)
class PropositionGroup:
    """CE_k ≤ CE_{k−1} + δ_k at the rising pairs over the seeds of one group, with its outcome."""

    group: str
    trained: str
    runs: list[PropositionRun]
    pairs: PairCounts  # over every seed
    baseline: PairCounts  # at each seed's ω^0 (else its first probed step), summed
    violation_share: Interval | None  # violations / rising pairs, seed-respecting Clopper–Pearson
    max_tightness: float | None  # the largest (CE_k − CE_{k−1})/δ_k at a rising pair
    median_tightness: float | None
    outcome: str




@register
@dataclass(frozen=True)
class PropositionSet(Result):
    """Proposition 1 per group: the primary group first (the paper's reverse setting), then the others."""

    kind = "proposition"
    groups: list[PropositionGroup]
    excluded: list[str]

    @property
    def primary(self) -> PropositionGroup:
        """The pre-registered group."""
        return self.groups[0]


PROPOSITION = declare("proposition", PropositionSet, builtin=True)


def _sum(counts: Sequence[PairCounts]) -> PairCounts:
    return PairCounts(*(int(sum(getattr(c, f) for c in counts)) for f in ("n_pairs", "n_rising", "n_violations")))


def pairs_group(
    runs: Sequence[ChunkPairs], *, group: str = "", trained: str = "", level: float = 0.95, tol_rel: float = TOL_REL,
) -> PropositionGroup:
    """Per-run rising pairs, the pooled violation share over seeds and the outcome; ``NotMeasured``
    if no run has the keys."""
    built, reasons = [], []
    for data in runs:
        try:
            built.append(pairs_run(data, tol_rel))
        except NotMeasured as exc:
            reasons.append(str(exc))
    if not built:
        raise NotMeasured("; ".join(reasons) or "no run")
    pairs = _sum([r.pairs for r in built])
    share = cluster_share_interval([r.pairs.n_violations for r in built], [r.pairs.n_rising for r in built], level)
    tight = np.array([t for r in built for t in r.tightness], dtype=float)
    return PropositionGroup(
        group, trained, built, pairs, _sum([r.baseline for r in built]), share,
        float(tight.max()) if tight.size else None, float(np.median(tight)) if tight.size else None,
        proposition_outcome(len(built), pairs.n_rising, pairs.n_violations),
    )


def proposition_group(
    runs: Sequence[tuple[str, pd.DataFrame]], *, group: str = "", trained: str = "", level: float = 0.95,
    tol_rel: float = TOL_REL,
) -> PropositionGroup:
    """``pairs_group`` over ``(name, metrics)`` pairs."""
    return pairs_group([chunk_pairs(frame, name) for name, frame in runs], group=group, trained=trained,
                       level=level, tol_rel=tol_rel)
