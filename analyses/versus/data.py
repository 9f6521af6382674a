"""The versus family's inputs, read from a run's metrics into arrays once.

Each reader takes one run's metrics frame and returns a small frozen dataclass of numpy arrays;
the statistics of ``analyses.versus`` (``pilot``, ``tuned``, ``tuned_versus``, ``tuning``) take
these, never a frame. A quantity a run lacks keeps the reason (the ``RunDataError`` message
that reading it gave), so a statistic can note it or raise it.

* ``ce_curve``: a held-out CE column (``eval/ce``, ``test/ce``): the steps with a value, the
  values, and the last of them (``CECurve.last``);
* ``versus_run``: one seed of the pilot comparison: its global Ĝ_t series
  (``analyses.theorem1.convergence.series_from_table``) and its held-out CE;
* ``tuned_data``: one run of a tune directory: validation and test CE, the test-split curve
  with each chunk's test CE, the values at ω^0, and the measured training seconds
  (``train/step_time_s``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.io import RunDataError, layout, logged_chunks, numeric_column
from analyses.theorem1.convergence import series_from_table
from zerolock_theory.records import (
    EVAL_CE,
    GLOBAL_GRAD_SQ_UNBIASED,
    STEP_TIME_S,
    TEST_CE,
    TEST_CHUNK,
    initial,
)

__all__ = ["CECurve", "TunedData", "VersusRun", "ce_curve", "tuned_data", "versus_run"]


@dataclass(frozen=True)
class CECurve:
    """One CE column of a run: the steps that have a value and the values, in step order."""

    column: str
    steps: np.ndarray  # int
    ce: np.ndarray
    logged: bool  # the column is in the metrics
    missing: str = ""  # why there is no value (then ``steps`` is empty)

    def last(self) -> tuple[int, float]:
        """``(step, CE)`` of the last value; ``RunDataError`` with ``missing`` when there is none."""
        if self.missing:
            raise RunDataError(self.missing)
        return int(self.steps[-1]), float(self.ce[-1])

    def last_or_nan(self) -> float:
        """The last value, NaN when there is none."""
        return math.nan if self.missing else float(self.ce[-1])


def ce_curve(frame: pd.DataFrame, column: str = EVAL_CE, *, where: str = "run") -> CECurve:
    """``column`` of one run at the steps where it has a value (``analyses.io.numeric_column``'s reading)."""
    logged = column in frame.columns
    try:
        ce = numeric_column(frame, column, where=where)
    except RunDataError as exc:
        return CECurve(column, np.array([], int), np.array([]), logged, str(exc))
    ok = ce.notna().to_numpy()
    if not ok.any():
        return CECurve(column, np.array([], int), np.array([]), logged, f"{where}: no value in column {column!r}")
    return CECurve(column, frame["step"].to_numpy()[ok].astype(int), ce.to_numpy()[ok], logged)


@dataclass(frozen=True)
class VersusRun:
    """One seed of the pilot comparison: its global Ĝ_t series and its held-out CE."""

    name: str
    t: np.ndarray | None  # T = step + 1; None when the series cannot be read
    g: np.ndarray | None
    rate_missing: str  # why the series cannot be read
    ce: CECurve


def versus_run(frame: pd.DataFrame, name: str = "run", *, column: str = GLOBAL_GRAD_SQ_UNBIASED,
               ce_column: str = EVAL_CE) -> VersusRun:
    """The rate series of ``column`` and the held-out CE ``ce_column`` of one seed."""
    try:
        t, g, _ = series_from_table(frame, column, where=name)
    except RunDataError as exc:
        t, g, why = None, None, str(exc)
    else:
        why = ""
    return VersusRun(name, t, g, why, ce_curve(frame, ce_column, where=name))


@dataclass(frozen=True)
class TunedData:
    """One run of a tune directory: its CE on both splits, the test curve and its training time."""

    validation: CECurve  # ``eval/ce``, on the validation split
    test: CECurve  # ``test/ce``
    test_initial: float  # ``test/ce_initial`` on the first row; NaN when not logged
    chunks: tuple[int, ...]  # chunks with ``test/chunk/{k}/ce`` (empty when not logged)
    chunk_ce: np.ndarray  # [test step, chunk] at ``test.steps``
    chunk_initial: np.ndarray  # [chunk] on the first row, NaN where not logged
    wall: np.ndarray  # the training seconds up to each of ``test.steps`` (sum of ``train/step_time_s``)
    seconds: float  # the run's training seconds; NaN without ``train/step_time_s``
    no_layout: str = ""  # why the chunks could not be read (the metrics carry no layout)


def _first(frame: pd.DataFrame, key: str) -> float:
    value = frame.iloc[0].get(key, math.nan) if len(frame) else math.nan
    return math.nan if value is None else float(value)


def tuned_data(frame: pd.DataFrame, where: str = "run") -> TunedData:
    """``tuned_data`` of one tune run's metrics (module docstring)."""
    validation, test = ce_curve(frame, EVAL_CE, where=where), ce_curve(frame, TEST_CE, where=where)
    try:
        layout(frame)
    except RunDataError as exc:
        chunks, no_layout = (), str(exc)
    else:
        chunks, no_layout = tuple(logged_chunks(frame, TEST_CHUNK, "ce")), ""
    rows = np.flatnonzero(frame["step"].isin(test.steps).to_numpy()) if test.steps.size else np.array([], int)
    chunk_ce = np.array([[float(frame[TEST_CHUNK.key(k, "ce")].iloc[i]) for k in chunks] for i in rows])
    timed = STEP_TIME_S in frame.columns
    times = pd.to_numeric(frame[STEP_TIME_S], errors="coerce") if timed else pd.Series(np.nan, index=frame.index)
    return TunedData(
        validation, test, _first(frame, initial(TEST_CE)), chunks,
        chunk_ce.reshape(len(rows), len(chunks)),
        np.array([_first(frame, initial(TEST_CHUNK.key(k, "ce"))) for k in chunks]),
        times.cumsum().to_numpy()[rows], float(times.sum()) if timed else math.nan, no_layout,
    )
