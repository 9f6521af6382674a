"""Theorem 1 (b): the drift's order in the step size, at fixed iterates (docs/THEOREM1.md).

The proof's drift step (Lemma 4) needs drift_t = R^{t+1}(ω^{t+1}) − R^t(ω^{t+1}) to be of second
order in the step. A slope of D⁺_T/Σ η_t² over time cannot tell: a second-order drift whose size
warms up reads first order, and zero-mean first-order noise makes D⁺ first order whatever the
mean. The order is a property at a fixed iterate, so it is decided there: the ``scaling`` probe
evaluates ω^t + c·Δω_t at c = 1 … 1/64 and logs

    drift(c) = R(p(c); p̃(c)) − R(p(c); p̃^t)

(the surrogate's change when the upstream readouts move, at the scaled chunk outputs). As
c → 0, drift(c)/c → φ′. Each scaled step's limit is extrapolated and classified by
``analyses.assumption5.step_limits.step_signs`` (Richardson through the three smallest factors; +1, −1, 0 at the
design's resolution, or unresolved). Runs recorded before ``drift`` was logged are read from
φ(c), which has the same limit (``source`` says which).

Per seed: resolved steps, non-zero limits, positive limits. A seed counts with ≥
``analyses.assumption5.step_limits.MIN_STEPS`` resolved steps. Over the counted seeds (``ORDER_OUTCOMES``):

* ``second order`` — every scaled step resolved and its limit zero at the resolution;
* ``first order, positive more often than chance`` / ``..., negative more often than chance`` /
  ``..., sign not distinguished from chance`` — some limit is non-zero (first order at those
  iterates); the sign words come from the pooled share of positive limits among the non-zero
  ones against ½ (seed-respecting Clopper–Pearson, ``analyses.stats.shares``). A positive first-order
  drift is what a pathwise drift step cannot absorb; a proof in expectation needs its mean;
* ``not testable`` — fewer than ``MIN_SEEDS`` counted seeds, or no non-zero limit but some step
  unresolved.

This decides the order at the scaled iterates of this run, not along the run, and says nothing
of the bound's unknown constant. ``p_value`` is the share's test against ½.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.assumption5.data import ScalingRun, scaling_run
from analyses.assumption5.step_limits import MIN_STEPS, step_signs, table_of
from analyses.results import Interval, NotMeasured
from analyses.stats.seeds import MIN_SEEDS
from analyses.stats.shares import cluster_share_interval, cluster_share_p

__all__ = ["ORDER_OUTCOMES", "DriftOrder", "SeedOrder", "drift_order", "seed_order", "seed_order_from_frame",
           "seed_order_of"]

ORDER_OUTCOMES: tuple[str, ...] = (
    "second order", "first order, positive more often than chance", "first order, negative more often than chance",
    "first order, sign not distinguished from chance", "not testable",
)


@dataclass(frozen=True)
class SeedOrder:
    """One seed's scaled steps: logged, resolved, with a non-zero limit, with a positive limit."""

    run: str
    n_steps: int
    n_resolved: int
    n_nonzero: int
    n_positive: int
    source: str  # "drift" or "phi"


@dataclass(frozen=True)
class DriftOrder:
    """The order over seeds: the share of non-zero limits, the share positive among them, the outcome."""

    seeds: list[SeedOrder]
    n_counted: int
    share_nonzero: Interval | None
    share_positive: Interval | None  # among the non-zero limits
    outcome: str
    reason: str
    p_value: float | None
    source: str


def seed_order(run: str, c: Sequence[float], drift: np.ndarray, source: str = "drift") -> SeedOrder:
    """Counts of one seed from drift(c) [steps, factors] at the factors ``c`` (largest first)."""
    signs = step_signs(c, drift)
    resolved = np.isfinite(signs)
    return SeedOrder(run, int(signs.size), int(resolved.sum()), int((signs[resolved] != 0).sum()),
                     int((signs[resolved] > 0).sum()), source)


def seed_order_of(data: ScalingRun) -> SeedOrder:
    """``seed_order`` from a run's ``scaling`` probe: drift(c) at the rows that logged it, else φ(c)."""
    run, obj = data.run, data.objective
    if not data.actual.factors.size:
        raise NotMeasured(f"{run}: no probe/scaling/{obj} keys (probe 'scaling' off)")
    c, phi, _ = table_of(data.actual, obj, run)
    if data.drift is not None:
        logged = ~np.isnan(data.drift).all(axis=1)
        return seed_order(run, c, data.drift[logged], "drift")
    return seed_order(run, c, phi, "phi")


def seed_order_from_frame(frame: pd.DataFrame, obj: str, run: str) -> SeedOrder:
    """``seed_order_of`` a run's metrics (``analyses.assumption5.data.scaling_run``)."""
    return seed_order_of(scaling_run(frame, obj, run))


def drift_order(seeds: Sequence[SeedOrder], level: float = 0.95, *, min_steps: int = MIN_STEPS,
                min_seeds: int = MIN_SEEDS) -> DriftOrder:
    """The outcome over the counted seeds (module docstring)."""
    seeds = list(seeds)
    counted = [s for s in seeds if s.n_resolved >= min_steps]
    nonzero = cluster_share_interval([s.n_nonzero for s in counted], [s.n_resolved for s in counted], level,
                                     min_seeds=min_seeds)
    signed = [s for s in counted if s.n_nonzero]
    x, n = [s.n_positive for s in signed], [s.n_nonzero for s in signed]
    positive = cluster_share_interval(x, n, level, min_seeds=min_seeds)
    p = cluster_share_p(x, n, level=level, min_seeds=min_seeds)
    source = "drift" if seeds and all(s.source == "drift" for s in seeds) else "phi"

    def result(outcome: str, reason: str) -> DriftOrder:
        return DriftOrder(seeds, len(counted), nonzero, positive, outcome, reason, p, source)

    if len(counted) < min_seeds:
        return result("not testable", "few_seeds")
    unresolved = sum(s.n_steps - s.n_resolved for s in seeds)
    if not any(s.n_nonzero for s in counted):
        return result("second order", "all_zero") if unresolved == 0 else result("not testable", "unresolved")
    if positive is None:
        return result("not testable", "few_signed_seeds")
    if positive.low > 0.5:
        return result("first order, positive more often than chance", "positive")
    if positive.high < 0.5:
        return result("first order, negative more often than chance", "negative")
    return result("first order, sign not distinguished from chance", "sign_chance")
