"""The verdict table's multiplicity correction: Holm over the rows an interval decides.

docs/MATH.md, "Statistics for every verdict". Each row that ran a seed-level test states the
two-sided p-value of its decisive test (``Evidence.p_value``; ``None`` for analytic, descriptive
and not-measured rows, and for not-testable rows that ran no test). The family is every row that
states a p, whatever its outcome word: a not-testable row whose interval ran but could not tell
the outcomes apart is in it (it rejects nothing; leaving it out after seeing its p would choose
the family from the data). Over the m rows that have a p, Holm's step-down adjustment (Holm 1979)
controls the family-wise error rate at 1 − level under any dependence between the rows:

    sort p_(1) ≤ … ≤ p_(m);   p̃_(i) = max_{j ≤ i} min(1, (m − j + 1)·p_(j)).

A row **survives** when p̃ ≤ 1 − level: its interval's decision stands for the whole table. A row
whose own p is already above 1 − level rejected nothing (its outcome says no difference, or an
undecided interval): there is nothing to correct (``survives`` None). A row with p ≤ 1 − level and
p̃ > 1 − level **does not survive**: the table reads it as undecided, and the bottom line does
not count it.

``t_test_p`` is the p-value of the t-interval ``analyses.stats.seeds.seed_interval`` builds: the
interval at ``level`` excludes ``null`` exactly when ``t_test_p(values, null) < 1 − level``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["Multiplicity", "holm", "multiplicity", "t_test_p"]


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order (module docstring); each in [p, 1]."""
    p = np.asarray(p_values, dtype=float)
    if p.size == 0:
        return []
    if not np.all((p >= 0) & (p <= 1)):
        raise ValueError(f"p-values must lie in [0, 1], got {list(p_values)}")
    order = np.argsort(p, kind="stable")
    m = p.size
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.maximum.accumulate(scaled)
    out = np.empty(m)
    out[order] = adjusted
    return [float(x) for x in out]


def t_test_p(values: Iterable[float], null: float = 0.0) -> float | None:
    """Two-sided one-sample t-test p of mean = ``null`` over the finite per-seed ``values``; None below 2.

    With every value equal the test is degenerate: p = 0 when they differ from ``null``, else 1.
    """
    x = np.asarray([float(v) for v in values], dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return None
    sd = float(x.std(ddof=1))
    if sd == 0.0:
        return 0.0 if float(x.mean()) != null else 1.0
    t = (float(x.mean()) - null) / (sd / math.sqrt(x.size))
    return float(2.0 * stats.t.sf(abs(t), df=x.size - 1))


@dataclass(frozen=True)
class Multiplicity:
    """One row's place in the correction: its p, the Holm-adjusted p over the ``family`` rows with
    a p, and whether its decision survives (None: nothing rejected, nothing to correct)."""

    p_value: float
    adjusted: float
    family: int
    alpha: float

    @property
    def survives(self) -> bool | None:
        """True: p̃ ≤ α; False: p ≤ α < p̃ (the decision does not survive); None: p > α."""
        if self.p_value > self.alpha:
            return None
        return self.adjusted <= self.alpha

    @property
    def label(self) -> str:
        """The table's cell: "survives", "does not survive" or "nothing rejected", with p and p̃."""
        word = {True: "survives", False: "does not survive", None: "nothing rejected"}[self.survives]
        return f"{word} (p = {self.p_value:.2g}, Holm {self.adjusted:.2g} of {self.family})"


def multiplicity(p_values: Sequence[float | None], level: float = 0.95) -> list[Multiplicity | None]:
    """One ``Multiplicity`` per row that has a p (Holm over those rows), None for the others."""
    have = [i for i, p in enumerate(p_values) if p is not None and math.isfinite(p)]
    adjusted = holm([float(p_values[i]) for i in have])  # type: ignore[arg-type]
    out: list[Multiplicity | None] = [None] * len(p_values)
    for i, a in zip(have, adjusted, strict=True):
        out[i] = Multiplicity(float(p_values[i]), a, len(have), round(1.0 - level, 12))  # type: ignore[arg-type]
    return out
