"""The Lemma 2 family's inputs, read from a run's metrics into arrays once.

Only the mismatch row and the descriptive tracking read runs (the other rows are exact
computations, and the fixed-point experiment reads its own files). Each reader takes one run's
metrics frame and returns a small frozen dataclass of numpy arrays over chunks 1..K, read through
the ``lemma2`` probe's declared keys (``zerolock_theory.records.LEMMA2``): the value at ω^0 is
the first logged value of the ``_initial`` key, the trained value the last logged value of the
plain key (``analyses.io.numeric_column``'s reading: ``RunDataError`` for a value that is not a
number; NaN where a chunk's key is absent or never logged). The statistics of
``analyses.lemma2.targets`` (``mismatch_of``, ``tracking_of``) take these, never a frame.

* ``mismatch_run``: TV(m_k, g_k) per chunk, untrained and trained;
* ``tracking_run``: TV(·, m_k) and TV(·, g_k) untrained and trained, the entropy-matched null's
  two distances and its temperature, per chunk.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.io import logged_chunks, numeric_column
from zerolock_theory.records import INITIAL, LEMMA2

__all__ = ["MismatchRun", "TrackingRun", "mismatch_run", "tracking_run"]


def _values(frame: pd.DataFrame, column: str, run: str) -> np.ndarray:
    if column not in frame.columns:
        return np.array([])
    values = numeric_column(frame, column, where=run).to_numpy()
    return values[~np.isnan(values)]


def _first(frame: pd.DataFrame, column: str, run: str) -> float:
    values = _values(frame, column, run)
    return float(values[0]) if values.size else float("nan")


def _last(frame: pd.DataFrame, column: str, run: str) -> float:
    values = _values(frame, column, run)
    return float(values[-1]) if values.size else float("nan")


def _per_chunk(frame: pd.DataFrame, field: str, chunks: list[int], run: str) -> np.ndarray:
    """The first logged value per chunk for an ``_initial`` field, else the last."""
    read = _first if field.endswith(INITIAL) else _last
    return np.array([read(frame, LEMMA2.key(k, field), run) for k in chunks], dtype=float)


@dataclass(frozen=True)
class MismatchRun:
    """TV(m_k, g_k) of one run per chunk 1..K: at ω^0 and at the last record; K = 0 without the keys."""

    run: str
    untrained: np.ndarray  # [chunk], ``probe/lemma2/{k}/tv_m_g_initial``'s first value
    trained: np.ndarray  # [chunk], ``probe/lemma2/{k}/tv_m_g``'s last value

    @property
    def chunks(self) -> int:
        return len(self.untrained)


def mismatch_run(frame: pd.DataFrame, run: str = "run") -> MismatchRun:
    """``probe/lemma2/{k}/tv_m_g`` (``_initial`` and trained) for every chunk, when logged for all."""
    chunks = logged_chunks(frame, LEMMA2, "tv_m_g" + INITIAL)
    return MismatchRun(run, _per_chunk(frame, "tv_m_g" + INITIAL, chunks, run),
                       _per_chunk(frame, "tv_m_g", chunks, run))


@dataclass(frozen=True)
class TrackingRun:
    """One run's tracking distances per chunk (each [chunk]); no chunk without the null's keys."""

    run: str
    chunks: tuple[int, ...]  # the chunks with ``probe/lemma2/{k}/null_tv_m``; empty: the null was not logged
    tv_m_initial: np.ndarray
    tv_g_initial: np.ndarray
    tv_m: np.ndarray
    tv_g: np.ndarray
    null_tv_m: np.ndarray
    null_tv_g: np.ndarray
    null_temperature: np.ndarray


def tracking_run(frame: pd.DataFrame, run: str = "run") -> TrackingRun:
    """The ``lemma2`` probe's distances and null per chunk (module docstring)."""
    chunks = logged_chunks(frame, LEMMA2, "null_tv_m")
    fields = ("tv_m" + INITIAL, "tv_g" + INITIAL, "tv_m", "tv_g", "null_tv_m", "null_tv_g", "null_temperature")
    return TrackingRun(run, tuple(chunks), *(_per_chunk(frame, f, chunks, run) for f in fields))
