"""The Assumption 5 family's inputs, read from a run's metrics into arrays once.

Every statistic of ``analyses.assumption5`` (the counts and trend of ``scaling``, the drift's
order of ``drift_order``, its sum of ``drift_sum``, ρ_t along the run of ``along_run``) reads
the ``scaling`` probe of one objective. ``scaling_run`` reads it once per run and objective into
a small frozen dataclass of numpy arrays; the statistics take it, never a frame. Values are read
with ``analyses.io.numeric_column`` (null → NaN; ``RunDataError`` for a value that is not a
number); a quantity the run did not log is ``None`` (or no factors, for a direction).

* ``Scaled``: one direction (``actual``, ``random``, ``antithetic``): the factors c (largest
  first, from the run's config), the rows that scaled a step, and φ(c) and ρ(c) at those rows;
* ``ScalingRun``: the three directions, and over every row of the run: the step, ``train/lr``,
  ρ(c = 1) and drift(c) at the actual direction's factors (when logged at each).

``scaling_factors`` (whether a run scaled a direction) is also what the suite asks to pick the
runs that have the probe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.io import layout, numeric_column
from zerolock_theory.records import LR, SCALING, SCALING_STEP

__all__ = ["DIRECTIONS", "Scaled", "ScalingRun", "read_scaled", "scaled_rows", "scaling_factors", "scaling_run"]

DIRECTIONS: tuple[str, ...] = ("actual", "random", "antithetic")


def scaling_factors(frame: pd.DataFrame, obj: str, direction: str = "actual") -> tuple[float, ...]:
    """The run's step-scaling factors c, largest first, from its config (``records.Layout``); none
    when the run did not scale ``direction`` or its metrics lack the columns for ``obj``."""
    found = layout(frame)
    if direction not in found.directions or not SCALING.present(frame, found, "phi", objective=obj,
                                                                  direction=direction):
        return ()
    return found.factors


def scaled_rows(frame: pd.DataFrame, obj: str, direction: str, factors: Sequence[float]) -> np.ndarray:
    """The rows of ``frame`` that scaled a step (bool, in order)."""
    flag = SCALING_STEP.key(obj, "defined", direction)
    if flag in frame.columns:  # a scaled step logs ``defined``, even where every φ(c) is null
        return np.asarray(frame[flag].notna())
    return np.asarray(pd.concat([frame[SCALING.key(obj, f, "phi", direction)] for f in factors], axis=1)
                      .notna().any(axis=1))


@dataclass(frozen=True)
class Scaled:
    """One direction of the ``scaling`` probe for one objective: φ(c) and ρ(c) [scaled step, factor]."""

    direction: str
    factors: np.ndarray  # c, largest first; empty: the run did not scale this direction
    rows: np.ndarray  # bool over the run's rows: those that scaled a step
    phi: np.ndarray
    rho: np.ndarray


def read_scaled(frame: pd.DataFrame, obj: str, direction: str, run: str = "run") -> Scaled:
    """``probe/scaling/{obj}/{c}/{phi,ratio}`` of one direction at its scaled rows."""
    factors = scaling_factors(frame, obj, direction)
    if not factors:
        return Scaled(direction, np.array([]), np.zeros(len(frame), bool), np.zeros((0, 0)), np.zeros((0, 0)))
    phi = np.stack([numeric_column(frame, SCALING.key(obj, f, "phi", direction), where=run) for f in factors], 1)
    rho = np.stack([numeric_column(frame, SCALING.key(obj, f, "ratio", direction), where=run) for f in factors], 1)
    rows = scaled_rows(frame, obj, direction, factors)
    return Scaled(direction, np.asarray(factors), rows, phi[rows], rho[rows])


@dataclass(frozen=True)
class ScalingRun:
    """One run's ``scaling`` probe for one objective, and the run's quantities the statistics pair with it."""

    run: str
    objective: str
    actual: Scaled
    random: Scaled
    antithetic: Scaled
    steps: np.ndarray  # float, every row
    lr: np.ndarray | None  # ``train/lr``, every row; None when not logged
    rho_one: np.ndarray | None  # ρ(c = 1) of the actual direction, every row; None when not logged
    drift: np.ndarray | None  # [row, factor] drift(c) at ``actual.factors``; None unless logged at each factor

    @property
    def rho_one_key(self) -> str:
        return SCALING.key(self.objective, 1.0, "ratio")


def scaling_run(frame: pd.DataFrame, obj: str, run: str = "run") -> ScalingRun:
    """The ``scaling`` probe of ``obj`` in every direction, with the steps, η_t, ρ(c = 1) and drift(c)."""
    actual, random, antithetic = (read_scaled(frame, obj, d, run) for d in DIRECTIONS)
    lr = numeric_column(frame, LR, where=run).to_numpy(dtype=float) if LR in frame.columns else None
    key = SCALING.key(obj, 1.0, "ratio")
    rho_one = numeric_column(frame, key, where=run).to_numpy(dtype=float) if key in frame.columns else None
    drift_cols = [SCALING.key(obj, f, "drift") for f in actual.factors]
    drift = (frame[drift_cols].to_numpy(dtype=float) if actual.factors.size and all(
        col in frame.columns for col in drift_cols) else None)
    return ScalingRun(run, obj, actual, random, antithetic, np.asarray(frame["step"], dtype=float), lr, rho_one, drift)
