"""The Theorem 1 family's inputs, read from a run's metrics into arrays once.

Every statistic of ``analyses.theorem1`` takes arrays: the bound test and the rate description
take ``(T, G)`` series (``bound_test``, ``describe_rate``), the drift budget ``(step, η, drift,
descent)`` (``drift_budget``). The readers here turn one run's metrics frame into them:

* ``series_from_table``: ``(T, G, n_missing)`` of one column, T = step + 1 at the rows with a
  value, sorted; ``RunDataError`` for a missing or non-numeric column, ±inf, steps that are not
  distinct non-negative integers, or fewer than ``MIN_POINTS`` values;
* ``rate_series``: the same as a frozen ``Series`` that keeps the reason when the column cannot
  be read (``Series.pair`` raises it), the noise floor ‖g_t‖² − Ĝ_t derived on the way
  (``with_noise_floor``) when asked for ``FLOOR_COLUMN``;
* ``drift_run``: the proof probe's drift, η_t and descent, sorted by step, as a frozen
  ``DriftRun`` (``RunDataError`` naming the column at fault).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.io import RunDataError, numeric_column
from zerolock_theory.records import GRAD_NOISE_FLOOR, GRAD_NORM_SQ, GRAD_SQ_UNBIASED

__all__ = ["MIN_POINTS", "DriftRun", "Series", "drift_run", "rate_series", "series_from_table", "with_noise_floor"]

MIN_POINTS = 5
"""Values a series needs (and points a fit needs)."""


def with_noise_floor(frame: pd.DataFrame, biased: str = GRAD_NORM_SQ, unbiased: str = GRAD_SQ_UNBIASED
                     ) -> pd.DataFrame:
    """``frame`` with ``GRAD_NOISE_FLOOR`` = ``biased`` − ``unbiased`` (null where either is)."""
    return frame.assign(**{GRAD_NOISE_FLOOR: numeric_column(frame, biased) - numeric_column(frame, unbiased)})


def series_from_table(
    frame: pd.DataFrame, column: str, step_column: str = "step", *, where: str = "table"
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(T, G, n_missing)``: T = step + 1 of the rows where ``column`` is not null, sorted.

    Negative values are allowed (Ĝ_t can be negative). Raises ``RunDataError`` for a
    missing/non-numeric column, ±inf, non-integer or duplicated steps, or fewer than
    ``MIN_POINTS`` values.
    """
    values = numeric_column(frame, column, where=where)
    steps = numeric_column(frame, step_column, where=where)
    present = values.notna() & steps.notna()
    g = values[present].to_numpy()
    s = steps[present].to_numpy()
    if np.isinf(g).any():
        raise RunDataError(f"{where}: column {column!r} is infinite at {int(np.isinf(g).sum())} step(s)")
    if np.any(s != np.round(s)) or np.any(s < 0):
        raise RunDataError(f"{where}: column {step_column!r} must hold non-negative integers")
    order = np.argsort(s, kind="stable")
    s, g = s[order], g[order]
    if np.any(np.diff(s) == 0):
        raise RunDataError(f"{where}: column {step_column!r} has duplicated steps")
    if g.size < MIN_POINTS:
        raise RunDataError(f"{where}: column {column!r}: too few rows ({g.size} < {MIN_POINTS})")
    return (s + 1).astype(np.int64), g, int((~present).sum())


@dataclass(frozen=True)
class Series:
    """One run's series of one column: T = step + 1 and its values, or why it cannot be read."""

    name: str
    column: str
    t: np.ndarray | None  # int64, sorted; None when ``missing``
    g: np.ndarray | None
    n_missing: int = 0  # rows without a value
    missing: str = ""  # the ``RunDataError`` message reading it gave

    def pair(self) -> tuple[np.ndarray, np.ndarray]:
        """``(T, G)``; ``RunDataError`` with ``missing`` when the series could not be read."""
        if self.t is None or self.g is None:
            raise RunDataError(self.missing)
        return self.t, self.g


def rate_series(frame: pd.DataFrame, column: str, name: str = "run") -> Series:
    """``series_from_table`` of ``column`` (``GRAD_NOISE_FLOOR``: derived by ``with_noise_floor``)."""
    try:
        source = with_noise_floor(frame) if column == GRAD_NOISE_FLOOR else frame
        t, g, n_missing = series_from_table(source, column, where=name)
    except RunDataError as exc:
        return Series(name, column, None, None, 0, str(exc))
    return Series(name, column, t, g, n_missing)


@dataclass(frozen=True)
class DriftRun:
    """One run's pathwise drift inputs, sorted by step (all finite, η_t > 0)."""

    name: str
    step: np.ndarray
    lr: np.ndarray
    drift: np.ndarray
    descent: np.ndarray | None  # None when no descent column was asked for

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """``(step, η, drift, descent or None)``, what ``drift_budget`` takes per seed."""
        return self.step, self.lr, self.drift, self.descent


def drift_run(frame: pd.DataFrame, columns: dict[str, str | None], step_column: str = "step",
              where: str = "run") -> DriftRun:
    """The columns named in ``columns`` (keys ``drift``, ``lr``, ``descent``) at the rows where all have a
    value, sorted by step; ``RunDataError`` naming the column at fault."""
    present = {k: c for k, c in columns.items() if c is not None}
    values = {k: numeric_column(frame, c, where=where) for k, c in present.items()}
    steps = numeric_column(frame, step_column, where=where)
    keep = steps.notna()
    for v in values.values():
        keep &= v.notna()
    if int(keep.sum()) < 2:
        raise RunDataError(f"{where}: fewer than 2 rows with {', '.join(map(repr, present.values()))}")
    s = steps[keep].to_numpy(dtype=float)
    if np.any(s != np.round(s)) or np.any(s < 0):
        raise RunDataError(f"{where}: column {step_column!r} must hold non-negative integers")
    order = np.argsort(s, kind="stable")
    if np.any(np.diff(s[order]) == 0):
        raise RunDataError(f"{where}: column {step_column!r} has duplicated steps")
    out = {k: v[keep].to_numpy(dtype=float)[order] for k, v in values.items()}
    for k, v in out.items():
        if not np.isfinite(v).all():
            raise RunDataError(f"{where}: column {present[k]!r} is not finite")
    if np.any(out["lr"] <= 0):
        raise RunDataError(f"{where}: column {present['lr']!r} must be positive (step sizes)")
    return DriftRun(where, s[order], out["lr"], out["drift"], out.get("descent"))
