"""Proposition 1 with its slack: CE_k ≤ CE_{k−1} + δ_k (docs/MATH.md, "Proposition 1 and depth").

From the ``minimizers`` probe on the probe batch (same positions, same parameters ω^{t+1}):
CE_k = ``probe/minimizer/{k}/ce`` = CE(e_y, p_k) and δ_k = ``probe/minimizer/{k}/gap``
(KL(p_k ‖ g_k) reverse, KL(m_k ‖ p_k) forward); CE_0 (``probe/minimizer/0/ce``, the readout
p_0) when logged, so the pairs are k = 1..K (else k = 2..K).

At each probed step and pair, the margin is CE_{k−1} + δ_k − CE_k; the pair holds when the
margin ≥ −tol with tol = ``TOL_REL``·max(1, |CE_k|) (float tolerance, never exact equality).
The slack ratio is δ_k / |CE_k − CE_{k−1}| (how much larger the slack is than the change it
is meant to bound). Per run (one seed): the violation share, the smallest margin and the
median slack ratio. Over seeds: t-intervals (``analyses.seeds.seed_interval``). Verdict
(``proposition_verdict``):

* ``not testable`` — fewer than 3 seeds;
* ``violated`` — the violation-share interval lies above 0 (violations in every seed);
* ``isolated violations`` — some violations, but the share interval reaches 0;
* ``consistent but vacuous`` — no violation and the slack-ratio interval lies above
  ``VACUOUS`` (δ_k dwarfs the CE differences: the inequality says nothing);
* ``consistent`` — no violation otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.io import numeric_column
from analyses.results import Interval, NotMeasured, Result, register
from analyses.seeds import seed_interval, share_interval
from analyses.verdict import GroupFigures
from zerolock_theory.metric_keys import minimizer_key, present_chunks

__all__ = ["PropositionGroup", "PropositionRun", "PropositionSet", "proposition_group", "proposition_run",
           "proposition_verdict"]

TOL_REL = 1e-6
VACUOUS = 10.0


@dataclass(frozen=True)
class PropositionRun:
    """One run's pairs (k−1, k) over its probed steps."""

    run: str
    chunks: list[int]
    n_pairs: int
    n_violations: int
    violation_share: float
    min_margin: float
    median_slack_ratio: float | None
    final_margin: list[float]


def proposition_run(frame: pd.DataFrame, run: str = "run", tol_rel: float = TOL_REL) -> PropositionRun:
    """Margins of one run (module docstring); ``NotMeasured`` without CE and δ for two chunks."""
    chunks = present_chunks(frame.columns, lambda k: minimizer_key(k, "gap"))
    if minimizer_key(1, "ce") not in frame.columns or len(chunks) < 1:
        raise NotMeasured(f"{run}: no probe/minimizer/{{k}}/ce and gap (probe 'minimizers' off)")
    first = 0 if minimizer_key(0, "ce") in frame.columns else 1
    ks = [k for k in chunks if k - 1 >= first]
    if not ks:
        raise NotMeasured(f"{run}: fewer than two chunks with CE")
    ce = {k: numeric_column(frame, minimizer_key(k, "ce"), where=run).to_numpy(float) for k in [first, *chunks]}
    gap = {k: numeric_column(frame, minimizer_key(k, "gap"), where=run).to_numpy(float) for k in ks}
    margin = np.stack([ce[k - 1] + gap[k] - ce[k] for k in ks], 1)
    tol = tol_rel * np.maximum(1.0, np.abs(np.stack([ce[k] for k in ks], 1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        slack = np.stack([gap[k] / np.abs(ce[k] - ce[k - 1]) for k in ks], 1)
    rows = np.isfinite(margin).all(axis=1)
    if not rows.any():
        raise NotMeasured(f"{run}: no probed step with finite CE_k and delta_k")
    margin, tol, slack = margin[rows], tol[rows], slack[rows]
    violations = int((margin < -tol).sum())
    finite_slack = slack[np.isfinite(slack)]
    return PropositionRun(
        run=run,
        chunks=ks,
        n_pairs=int(margin.size),
        n_violations=violations,
        violation_share=violations / margin.size,
        min_margin=float(margin.min()),
        median_slack_ratio=float(np.median(finite_slack)) if finite_slack.size else None,
        final_margin=margin[-1].tolist(),
    )


def proposition_verdict(violations: Interval | None, n_violations: int, slack: Interval | None) -> str:
    """``not testable`` / ``violated`` / ``isolated violations`` / ``consistent but vacuous`` / ``consistent``."""
    if violations is None:
        return "not testable"
    if violations.low > 0.0:
        return "violated"
    if n_violations:
        return "isolated violations"
    if slack is not None and slack.low > VACUOUS:
        return "consistent but vacuous"
    return "consistent"


@dataclass(frozen=True)
class PropositionGroup:
    """CE_k ≤ CE_{k−1} + δ_k over the seeds of one group, with its verdict."""

    group: str
    trained: str
    runs: list[PropositionRun]
    violation_share: Interval | None
    min_margin: Interval | None
    slack_ratio: Interval | None
    verdict: str

    def figures(self) -> GroupFigures:
        """The group's figures (``analyses.verdict.GroupFigures``), stated by ``analyses.claims.text``."""
        return GroupFigures(self.group, self.trained, "proposition", self.verdict, len(self.runs),
                            "share of violating (step, k) pairs", self.violation_share,
                            pairs=sum(r.n_pairs for r in self.runs), violations=sum(r.n_violations for r in self.runs),
                            margin=self.min_margin, slack=self.slack_ratio)


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


def proposition_group(
    runs: Sequence[tuple[str, pd.DataFrame]], *, group: str = "", trained: str = "", level: float = 0.95
) -> PropositionGroup:
    """Per-run margins, seed intervals and the verdict; ``NotMeasured`` if no run has the keys."""
    built, reasons = [], []
    for name, frame in runs:
        try:
            built.append(proposition_run(frame, name))
        except NotMeasured as exc:
            reasons.append(str(exc))
    if not built:
        raise NotMeasured("; ".join(reasons) or "no run")
    share = share_interval([r.violation_share for r in built], level)
    margin = seed_interval([r.min_margin for r in built], level)
    slack = seed_interval([math.nan if r.median_slack_ratio is None else r.median_slack_ratio for r in built], level)
    verdict = proposition_verdict(share, sum(r.n_violations for r in built), slack)
    return PropositionGroup(group, trained, built, share, margin, slack, verdict)
