"""Lemma 2 on the implemented loss: three rows and the descriptive tracking (docs/MATH.md, "Lemma 2").

* ``lemma2_stated`` — "Lemma 2 as stated (reverse loss → g_k)": on a grid of
  (α, ε > 0, V) with random p_y^ε-smoothed labels and random p_{k-1}, the identity
  ℓ^R_k(p) = KL(p ‖ g_k) − log Z_k holds to ``IDENTITY_TOL`` at random p and no p has
  ℓ^R_k(p) < ℓ^R_k(g_k) − ``IDENTITY_TOL``: "holds (exact)", else "fails".
* ``lemma2_implemented`` — "Does it describe the CE loss implementations train?": at the
  headline case (p_y = e_1 smoothed by ε = 0.1 to (0.95, 0.05), p_{k-1} = (½, ½), α = ½) the
  forward identity ℓ^F_k(p) = KL(m_k ‖ p) + H(m_k) − (1-α)·H(p_{k-1}) makes m_k the
  minimizer, confirmed by a numerical minimizer that never sees m_k; "no: m_k" when
  TV(m_k, g_k) > ``IDENTITY_TOL``, "yes" when the two coincide (α ∈ {0, 1}, p_{k-1} = p_y^ε).
* ``lemma2_mismatch`` — "How far apart are m_k and g_k at this model's readouts?": TV(m_k, g_k)
  from the ``lemma2`` probe (exact readouts), per chunk, untrained (``_initial``, ω^0) and trained
  (the last record), a t-interval over seeds each; "far apart" when some interval lies above
  ``TV_SMALL``, "close" when every interval lies below it, "undecided" otherwise, "not
  testable" with fewer than ``analyses.stats.seeds.MIN_SEEDS`` seeds. A distance between two targets,
  mostly set by α, ε and the readouts' entropy (≥ 0.17 at α = ½ for almost any readout), not a
  statement about what training reaches. Its p-value (``mismatch_p_value``): two-sided t-tests of
  each interval's mean against ``TV_SMALL``; "far apart" and "undecided" take the smallest p times
  the number of intervals (Bonferroni within the row: one interval suffices), "close" the largest
  (every interval must lie below).
* ``lemma2_tracking`` — the earlier r(m) − r(g) from exact readouts, next to its
  entropy-matched null; always "descriptive only" (or "not measured"): flattening a readout
  without label information moves it toward g_k when p_{k-1} is nearly uniform.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from analyses.lemma2.data import MismatchRun, TrackingRun, mismatch_run, tracking_run
from analyses.results import Interval, Result, declare, register
from analyses.stats.multiplicity import t_test_p
from analyses.stats.seeds import seed_interval
from zerolock_theory.theory.divergences import total_variation
from zerolock_theory.theory.lemma2 import forward_identity, reverse_identity
from zerolock_theory.theory.minimize import minimize_local_loss
from zerolock_theory.theory.targets import arithmetic_target, geometric_target, label_smooth

__all__ = [
    "IMPLEMENTED_OUTCOMES", "MISMATCH_OUTCOMES", "mismatch_p_value", "STATED_OUTCOMES", "TRACKING_OUTCOMES", "ChunkMismatch",
    "Lemma2Implemented", "Lemma2Mismatch", "Lemma2Stated", "Lemma2Tracking", "RunTrackingNull",
    "lemma2_implemented", "lemma2_mismatch", "lemma2_stated", "lemma2_tracking", "mismatch_of", "tracking_of",
]

STATED_OUTCOMES: tuple[str, ...] = ("holds (exact)", "fails")
IMPLEMENTED_OUTCOMES: tuple[str, ...] = ("no: m_k", "yes")
MISMATCH_OUTCOMES: tuple[str, ...] = ("close", "far apart", "undecided", "not testable")
TRACKING_OUTCOMES: tuple[str, ...] = ("descriptive only", "not measured")

IDENTITY_TOL = 1e-10
"""Float64 tolerance of the exact identities (residuals measured ≤ 2e-15)."""
TV_SMALL = 0.05
"""TV(m_k, g_k) below this at every chunk: the two targets nearly coincide on this model."""
ALPHAS, EPSILONS, VOCABS = (0.1, 0.5, 0.9), (0.01, 0.1, 0.5), (2, 5, 64)


@register
@dataclass(frozen=True)
class Lemma2Stated(Result):
    """Lemma 2 as stated: the reverse identity over a grid of cases."""

    kind = "lemma2_stated"
    outcome: str
    n_cases: int
    n_points: int
    max_residual: float
    min_excess: float
    alphas: list[float]
    epsilons: list[float]
    vocab_sizes: list[int]


def _case(vocab: int, epsilon: float, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """A random label smoothed by ε and a random full-support p_{k-1} (float64)."""
    label = int(torch.randint(vocab, (1,), generator=generator))
    p_y = label_smooth(torch.nn.functional.one_hot(torch.tensor(label), vocab).double(), epsilon)
    prev = torch.rand(vocab, generator=generator, dtype=torch.float64) ** 3 + 1e-6
    return p_y, prev / prev.sum()


def lemma2_stated(alphas: Sequence[float] = ALPHAS, epsilons: Sequence[float] = EPSILONS,
                  vocab_sizes: Sequence[int] = VOCABS, *, draws: int = 3, n_points: int = 64, seed: int = 0,
                  target=None) -> Lemma2Stated:
    """The first row (module docstring). ``target(p_y, p_prev, α)`` replaces g_k (calibration)."""
    generator = torch.Generator().manual_seed(seed)
    residual, excess, n = 0.0, float("inf"), 0
    for vocab in vocab_sizes:
        for eps in epsilons:
            for alpha in alphas:
                for _ in range(draws):
                    p_y, prev = _case(vocab, eps, generator)
                    point = None if target is None else target(p_y, prev, alpha)
                    check = reverse_identity(p_y, prev, alpha, n_points=n_points, seed=seed + n, target=point)
                    residual, excess, n = max(residual, check.residual), min(excess, check.min_excess), n + 1
    holds = residual <= IDENTITY_TOL and excess >= -IDENTITY_TOL
    return Lemma2Stated(STATED_OUTCOMES[0 if holds else 1], n, n_points, residual, excess,
                        [float(a) for a in alphas], [float(e) for e in epsilons], [int(v) for v in vocab_sizes])


@register
@dataclass(frozen=True)
class Lemma2Implemented(Result):
    """Does Lemma 2 describe the forward (CE) loss? The headline case and its minimizers."""

    kind = "lemma2_implemented"
    outcome: str
    alpha: float
    epsilon: float
    p_y: list[float]  # p_y^ε
    p_prev: list[float]
    m: list[float]
    g: list[float]
    tv_m_g: float
    forward_residual: float  # |ℓ^F(p) − [KL(m‖p) + H(m) − (1-α)H(p_{k-1})]|, max over random p
    numerical: list[float]  # numerical minimizer of ℓ^F (never sees m_k)
    numerical_tv_m: float
    numerical_tv_g: float


def lemma2_implemented(alpha: float = 0.5, epsilon: float = 0.1, label: Sequence[float] = (1.0, 0.0),
                       p_prev: Sequence[float] = (0.5, 0.5)) -> Lemma2Implemented:
    """The second row at (α, ε, e_y, p_{k-1}) (module docstring); defaults: the headline case."""
    p_y = label_smooth(torch.tensor(label, dtype=torch.float64), epsilon)
    prev = torch.tensor(p_prev, dtype=torch.float64)
    m = arithmetic_target(p_y, prev, alpha)
    g = geometric_target(p_y, prev, alpha)[0].exp()
    check = forward_identity(p_y, prev, alpha)
    found = minimize_local_loss(p_y, prev, alpha, "forward").p
    tv = float(total_variation(m, g))
    return Lemma2Implemented(IMPLEMENTED_OUTCOMES[0 if tv > IDENTITY_TOL else 1], float(alpha), float(epsilon),
                             p_y.tolist(), prev.tolist(), m.tolist(), g.tolist(), tv, check.residual,
                             found.tolist(), float(total_variation(found, m)), float(total_variation(found, g)))


@dataclass(frozen=True)
class ChunkMismatch:
    """TV(m_k, g_k) at one chunk: per seed and over seeds, untrained and trained."""

    chunk: int
    untrained: list[float]
    trained: list[float]
    untrained_interval: Interval | None
    trained_interval: Interval | None


@register
@dataclass(frozen=True)
class Lemma2Mismatch(Result):
    """How far apart are m_k and g_k at this model's readouts? TV(m_k, g_k) per chunk (module docstring)."""

    kind = "lemma2_mismatch"
    outcome: str
    threshold: float
    runs: list[str]
    chunks: list[ChunkMismatch]


def mismatch_of(runs: Sequence[MismatchRun], level: float = 0.95, threshold: float = TV_SMALL) -> Lemma2Mismatch:
    """The third row over the runs' TV(m_k, g_k) (one run per seed; ``analyses.lemma2.data.mismatch_run``)."""
    logged = [r for r in runs if r.chunks]
    names = [r.run for r in logged]
    n_chunks = min((r.chunks for r in logged), default=0)
    chunks = []
    for k in range(1, n_chunks + 1):
        before = [float(r.untrained[k - 1]) for r in logged]
        after = [float(r.trained[k - 1]) for r in logged]
        chunks.append(ChunkMismatch(k, before, after, seed_interval(before, level), seed_interval(after, level)))
    intervals = [iv for c in chunks for iv in (c.untrained_interval, c.trained_interval)]
    if not chunks or any(iv is None for iv in intervals):
        outcome = "not testable"
    elif any(iv.low > threshold for iv in intervals):
        outcome = "far apart"
    elif all(iv.high < threshold for iv in intervals):
        outcome = "close"
    else:
        outcome = "undecided"
    return Lemma2Mismatch(outcome, threshold, names, chunks)


def lemma2_mismatch(frames: Mapping[str, pd.DataFrame], level: float = 0.95,
                    threshold: float = TV_SMALL) -> Lemma2Mismatch:
    """``mismatch_of`` the runs' metric tables (one run per seed, the ``lemma2`` probe's keys)."""
    return mismatch_of([mismatch_run(frame, name) for name, frame in frames.items()], level, threshold)


def mismatch_p_value(found: Lemma2Mismatch) -> float | None:
    """The row's two-sided p against ``threshold`` (module docstring); None when not testable."""
    if found.outcome not in MISMATCH_OUTCOMES[:3]:
        return None
    ps = [t_test_p(values, found.threshold) for c in found.chunks for values in (c.untrained, c.trained)]
    ps = [p for p in ps if p is not None]
    if not ps:
        return None
    return max(ps) if found.outcome == "close" else min(1.0, len(ps) * min(ps))


@dataclass(frozen=True)
class RunTrackingNull:
    """One run: r(m) − r(g) (means over chunks of exact TVs) and the same for its entropy-matched null."""

    run: str
    difference: float
    null_difference: float
    excess: float  # difference − null_difference
    temperatures: list[float]  # τ_k of the null, per chunk


@register
@dataclass(frozen=True)
class Lemma2Tracking(Result):
    """The descriptive tracking statistic next to its null; never a verdict."""

    kind = "lemma2_tracking"
    outcome: str
    trained: str
    runs: list[RunTrackingNull]
    difference: Interval | None
    null_difference: Interval | None
    excess: Interval | None
    reasons: list[str]


STATED = declare("lemma2_stated", Lemma2Stated)
IMPLEMENTED = declare("lemma2_implemented", Lemma2Implemented)
MISMATCH = declare("lemma2_mismatch", Lemma2Mismatch)
TRACKING = declare("lemma2_tracking", Lemma2Tracking)


def _reduction(start: float, end: float) -> float:
    return (start - end) / start if start > 0 else float("nan")


def _run_tracking(data: TrackingRun) -> RunTrackingNull | str:
    if not data.chunks:
        return f"{data.run}: no_null"
    m0, g0, m, g, null_m, null_g = (float(np.mean(v)) for v in (
        data.tv_m_initial, data.tv_g_initial, data.tv_m, data.tv_g, data.null_tv_m, data.null_tv_g))
    if not all(np.isfinite(v) for v in (m0, g0, m, g, null_m, null_g)):
        return f"{data.run}: missing_values"
    r_m, r_g = _reduction(m0, m), _reduction(g0, g)
    n_m, n_g = _reduction(m0, null_m), _reduction(g0, null_g)
    return RunTrackingNull(data.run, r_m - r_g, n_m - n_g, (r_m - r_g) - (n_m - n_g), data.null_temperature.tolist())


def tracking_of(runs: Sequence[TrackingRun], trained: str, level: float = 0.95) -> Lemma2Tracking:
    """r(m) − r(g) = (d_0(m) − d_T(m))/d_0(m) − (d_0(g) − d_T(g))/d_0(g) per seed (exact TVs, means over
    chunks), the same with d_T from the entropy-matched null, and their difference; t-intervals
    over seeds. The outcome is "descriptive only" whenever one run has the keys."""
    found, reasons = [], []
    for run in runs:
        got = _run_tracking(run)
        (reasons if isinstance(got, str) else found).append(got)
    outcome = TRACKING_OUTCOMES[0 if found else 1]
    return Lemma2Tracking(outcome, trained, found, seed_interval([r.difference for r in found], level),
                          seed_interval([r.null_difference for r in found], level),
                          seed_interval([r.excess for r in found], level), reasons)


def lemma2_tracking(frames: Mapping[str, pd.DataFrame], trained: str, level: float = 0.95) -> Lemma2Tracking:
    """``tracking_of`` the runs' metric tables (``analyses.lemma2.data.tracking_run``)."""
    return tracking_of([tracking_run(frame, name) for name, frame in frames.items()], trained, level)


