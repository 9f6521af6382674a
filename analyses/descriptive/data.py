"""The descriptive family's inputs, read from a run's metrics into arrays once.

Each reader takes one run's metrics frame (``analyses.io.load_run``) and returns a small frozen
dataclass of numpy arrays, read through the declared quantities of ``zerolock_theory.records``
(``Quantity.read``: a value that is missing or not a number reads as NaN). The statistics of
``analyses.descriptive`` take these arrays, never a frame. A run without a quantity gives its
arrays empty and ``missing`` set to the reason, which the statistic raises as ``NotMeasured``.

``RunData`` holds one run's frame and reads each quantity on first use, then keeps it, so
analyses that share a quantity read it once.

* ``held_out``: ``eval/ce`` at the steps that have it and ``eval/ce_initial`` (outcome);
* ``stability_terms``: φ, q, ρ and the remainder per chunk and in total, with the probe's
  ``defined`` flag (stability summary);
* ``stability_totals``: φ and q in total (the drift check);
* ``distances``: ``probe/minimizer/{k}/{kl_m_p, kl_p_g, tv_m, tv_g}`` (movement table);
* ``task_ce``: CE by chunk and δ_k (depth);
* ``chunk_pairs``: CE_k, δ_k and their values at ω^0 (the rising pairs);
* ``readouts``: the stored p̃ at step 0 and the last step, and the probe batch's labels (tracking).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from analyses.io import RunDataError, layout, logged_chunks
from zerolock_theory.readout_store import ReadoutStore
from zerolock_theory.records import (
    CHUNK,
    EVAL_CHUNK,
    MINIMIZER,
    MINIMIZER_INITIAL,
    STABILITY,
    STABILITY_FLAG,
    Layout,
    Quantity,
)
from zerolock_theory.records import EVAL as EVAL_QUANTITY

__all__ = [
    "DISTANCES", "ChunkPairs", "Distances", "DriftTotals", "HeldOut", "Readouts", "RunData", "StabilityTerms",
    "TaskCE", "chunk_pairs", "distances", "held_out", "readouts", "stability_labels", "stability_terms",
    "stability_totals", "task_ce",
]

DISTANCES = ("kl_m_p", "kl_p_g", "tv_m", "tv_g")
"""The metric axis of ``Distances.values``."""
CE_SOURCES = (EVAL_CHUNK, CHUNK)  # their "ce": held out when the run has it, else the training minibatch
_FIXED = Layout(1)  # for a read with every axis fixed: the layout is never consulted


def _one(quantity: Quantity, frame: pd.DataFrame, field_: str, **fixed: object) -> np.ndarray:
    """One key of ``quantity`` (every axis in ``fixed``) as a float array over steps; NaN where absent."""
    return quantity.read(frame, _FIXED, field_, **fixed)


def _has(quantity: Quantity, frame: pd.DataFrame, field_: str, **fixed: object) -> bool:
    return quantity.key(**fixed, field=field_) in frame.columns


def _steps(frame: pd.DataFrame) -> np.ndarray:
    return frame["step"].to_numpy()


@dataclass(frozen=True)
class HeldOut:
    """Held-out CE of the final chunk: the eval steps that have a value, and the value at ω^0."""

    run: str
    steps: np.ndarray  # int, the steps with an ``eval/ce`` value, in order
    ce: np.ndarray
    initial: float | None  # the first ``eval/ce_initial`` value, when logged
    missing: str = ""


def held_out(frame: pd.DataFrame, run: str = "run") -> HeldOut:
    """``eval/ce`` and ``eval/ce_initial`` of one run (no layout needed)."""
    key = EVAL_QUANTITY.key("ce")
    empty = HeldOut(run, np.array([], int), np.array([]), None)
    if key not in frame.columns:
        return HeldOut(run, empty.steps, empty.ce, None, f"{run}: no {key} column")
    ce = _one(EVAL_QUANTITY, frame, "ce")
    rows = ~np.isnan(ce)
    if not rows.any():
        return HeldOut(run, empty.steps, empty.ce, None, f"{run}: {key} is null at every step")
    initial = _one(EVAL_QUANTITY, frame, "ce_initial")
    initial = initial[~np.isnan(initial)]
    return HeldOut(run, _steps(frame)[rows].astype(int), ce[rows], float(initial[0]) if initial.size else None)


def stability_labels(frame: pd.DataFrame, obj: str) -> list[str]:
    """The chunk labels ``"1".."K"`` (K from the run's config) then ``"total"``; none when the
    run has no stability terms for ``obj``."""
    chunks = [str(k) for k in logged_chunks(frame, STABILITY, "q", objective=obj)]
    return chunks + (["total"] if _has(STABILITY, frame, "q", objective=obj, chunk="total") else [])


@dataclass(frozen=True)
class StabilityTerms:
    """One run's stability terms for one objective: [step, chunk] arrays over ``chunks``."""

    run: str
    objective: str
    chunks: tuple[str, ...]  # "1".."K" then "total", those logged; empty: the run has no terms
    phi: np.ndarray
    q: np.ndarray
    ratio: np.ndarray  # logged ρ_t, else max(φ, 0)/q where q > 0
    remainder: np.ndarray  # NaN where not logged
    defined: np.ndarray  # bool per step: the objective could be evaluated
    reason: str  # the probe's reason for an undefined step


def _defined(frame: pd.DataFrame, obj: str) -> tuple[np.ndarray, str]:
    """Rows where ``probe/stability/{obj}/defined`` is not false, and the probe's reason."""
    column, why = STABILITY_FLAG.key(obj, "defined"), STABILITY_FLAG.key(obj, "reason")
    if column in frame.columns:
        ok = np.array([not (isinstance(v, (bool, np.bool_)) and not v) for v in frame[column]], dtype=bool)
    else:
        ok = np.ones(len(frame), dtype=bool)
    reasons = frame[why].dropna() if why in frame.columns else ()
    return ok, str(reasons.iloc[0]) if len(reasons) else f"{column} is false"


def stability_terms(frame: pd.DataFrame, obj: str, run: str = "run") -> StabilityTerms:
    """φ, q, ρ and the remainder per logged chunk and in total (``stability_labels``)."""
    chunks = tuple(stability_labels(frame, obj))
    columns: dict[str, list[np.ndarray]] = {"phi": [], "q": [], "ratio": [], "remainder": []}
    for chunk in chunks:
        phi, q = (_one(STABILITY, frame, f, objective=obj, chunk=chunk) for f in ("phi", "q"))
        if _has(STABILITY, frame, "ratio", objective=obj, chunk=chunk):
            rho = _one(STABILITY, frame, "ratio", objective=obj, chunk=chunk)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                rho = np.where(q > 0, np.clip(phi, 0.0, None) / q, np.nan)
        rem = _one(STABILITY, frame, "remainder", objective=obj, chunk=chunk)
        for name, values in zip(columns, (phi, q, rho, rem), strict=True):
            columns[name].append(values)
    arrays = {n: np.stack(v, axis=1) if v else np.zeros((len(frame), 0)) for n, v in columns.items()}
    ok, reason = _defined(frame, obj)
    return StabilityTerms(run, obj, chunks, defined=ok, reason=reason, **arrays)


@dataclass(frozen=True)
class DriftTotals:
    """φ_t and q_t in total over one run's rows, for one objective."""

    run: str
    objective: str
    steps: np.ndarray
    phi: np.ndarray
    q: np.ndarray
    missing: str = ""


def stability_totals(frame: pd.DataFrame, obj: str, run: str = "run") -> DriftTotals:
    """``probe/stability/{obj}/total/{phi,q}`` (no layout needed)."""
    if not all(_has(STABILITY, frame, f, objective=obj, chunk="total") for f in ("phi", "q")):
        return DriftTotals(run, obj, np.array([], int), np.array([]), np.array([]),
                           f"{run}: no {STABILITY.key(obj, 'total', 'phi')}")
    phi, q = (_one(STABILITY, frame, f, objective=obj, chunk="total") for f in ("phi", "q"))
    return DriftTotals(run, obj, _steps(frame), phi, q)


@dataclass(frozen=True)
class Distances:
    """The minimizers probe's distances: ``values`` [step, chunk, metric] (metrics: ``DISTANCES``)."""

    run: str
    chunks: tuple[int, ...]  # empty: the probe was off
    values: np.ndarray


def distances(frame: pd.DataFrame, run: str = "run") -> Distances:
    """``probe/minimizer/{k}/{kl_m_p, kl_p_g, tv_m, tv_g}`` for every chunk (when ``tv_m`` is logged)."""
    chunks = tuple(logged_chunks(frame, MINIMIZER, "tv_m"))
    if not chunks:
        return Distances(run, (), np.zeros((len(frame), 0, len(DISTANCES))))
    found = layout(frame)
    return Distances(run, chunks, np.stack([MINIMIZER.read(frame, found, m) for m in DISTANCES], axis=-1))


@dataclass(frozen=True)
class TaskCE:
    """Task CE by chunk (held out when the run has it) and the local gaps δ_k, per row."""

    run: str
    source: str  # the key pattern read, ``eval/chunk/{k}/ce`` or ``chunk/{k}/ce``
    chunks: tuple[int, ...]
    steps: np.ndarray
    ce: np.ndarray  # [step, chunk]
    gap: np.ndarray | None  # [step, chunk] of ``probe/minimizer/{k}/gap``; None when not logged
    missing: str = ""


def task_ce(frame: pd.DataFrame, run: str = "run") -> TaskCE:
    """CE_k from ``eval/chunk/{k}/ce`` when logged for every chunk, else ``chunk/{k}/ce``; δ_k."""
    found = layout(frame)
    source = next((s for s in CE_SOURCES if s.present(frame, found, "ce")), None)
    if source is None or found.chunks < 2:
        return TaskCE(run, "", (), np.array([], int), np.zeros((0, 0)), None,
                      f"{run}: no per-chunk CE (eval/chunk/{{k}}/ce or chunk/{{k}}/ce)")
    gap = MINIMIZER.read(frame, found, "gap") if MINIMIZER.present(frame, found, "gap") else None
    return TaskCE(run, source.pattern.format(chunk="{k}", field="ce"), tuple(found.coordinates("chunk")),
                  _steps(frame), source.read(frame, found, "ce"), gap)


@dataclass(frozen=True)
class ChunkPairs:
    """CE_k of chunks ``first``..K and δ_k of the pairs' chunks ``ks`` (k = first+1..K), per row."""

    run: str
    first: int  # 0 when CE of p_0 is logged, else 1
    ks: tuple[int, ...]
    steps: np.ndarray
    ce: np.ndarray  # [step, first..K]
    gap: np.ndarray  # [step, ks]
    initial_ce: np.ndarray | None  # at ω^0 (``probe/minimizer/initial``), chunks first..K
    initial_gap: np.ndarray | None  # at ω^0, chunks ks
    missing: str = ""


def _initial_pairs(frame: pd.DataFrame, first: int, ks: tuple[int, ...]) -> tuple[np.ndarray | None, ...]:
    """The first row with CE_k and δ_k at ω^0 for every chunk, if logged."""
    chunks = [first, *ks]
    if not all(_has(MINIMIZER_INITIAL, frame, "ce", chunk=k) for k in chunks) or not all(
            _has(MINIMIZER_INITIAL, frame, "gap", chunk=k) for k in ks):
        return None, None
    ce = np.stack([_one(MINIMIZER_INITIAL, frame, "ce", chunk=k) for k in chunks], axis=1)
    gap = np.stack([_one(MINIMIZER_INITIAL, frame, "gap", chunk=k) for k in ks], axis=1)
    rows = np.flatnonzero(~np.isnan(ce).any(axis=1) & ~np.isnan(gap).any(axis=1))
    return (ce[rows[0]], gap[rows[0]]) if rows.size else (None, None)


def chunk_pairs(frame: pd.DataFrame, run: str = "run") -> ChunkPairs:
    """``probe/minimizer/{k}/{ce,gap}`` (CE_0 when logged) and their values at ω^0."""
    chunks = logged_chunks(frame, MINIMIZER, "gap")

    def without(why: str) -> ChunkPairs:
        return ChunkPairs(run, 1, (), np.array([], int), np.zeros((0, 0)), np.zeros((0, 0)), None, None, why)

    if not _has(MINIMIZER, frame, "ce", chunk=1) or len(chunks) < 1:
        return without(f"{run}: no probe/minimizer/{{k}}/ce and gap (probe 'minimizers' off)")
    first = 0 if _has(MINIMIZER, frame, "ce", chunk=0) else 1
    ks = tuple(k for k in chunks if k - 1 >= first)
    if not ks:
        return without(f"{run}: fewer than two chunks with CE")
    ce = np.stack([_one(MINIMIZER, frame, "ce", chunk=k) for k in [first, *ks]], axis=1)
    gap = np.stack([_one(MINIMIZER, frame, "gap", chunk=k) for k in ks], axis=1)
    steps = _steps(frame) if "step" in frame.columns else np.arange(len(frame))
    return ChunkPairs(run, first, ks, steps, ce, gap, *_initial_pairs(frame, first, ks))


@dataclass(frozen=True)
class Readouts:
    """The readouts store at step 0 (untrained) and its last step: p̃ [K+1, N, V], renormalized."""

    run: str
    step: int  # the last stored step
    first: np.ndarray
    last: np.ndarray
    labels: np.ndarray  # the probe batch's labels, ignored positions (-100) removed
    exact: bool  # False: a top-k store (the tail spread evenly over the rest)
    missing: str = ""


def _normalized(store: ReadoutStore, step: int) -> np.ndarray:
    probs = store.dense(step).astype(np.float64)
    return probs / probs.sum(-1, keepdims=True)  # stored float16/float32: renormalize


def readouts(run_dir: str | Path, run: str = "run") -> Readouts:
    """The run's readouts store and probe batch; ``RunDataError`` when they cannot be read."""
    root = Path(run_dir)

    def without(why: str) -> Readouts:
        return Readouts(run, 0, np.zeros((0, 0, 0)), np.zeros((0, 0, 0)), np.array([], int), True, why)

    if not (root / "readouts").is_dir() or not (root / "probe_batch.json").is_file():
        return without(f"{run}: no readouts store (probe 'readouts' off)")
    try:
        store = ReadoutStore(root / "readouts")
        labels = np.asarray(json.loads((root / "probe_batch.json").read_text())["labels"]).reshape(-1)
    except (OSError, ValueError, KeyError) as exc:
        raise RunDataError(f"{root}: unreadable readouts store or probe batch: {exc}") from exc
    if len(store.steps) < 2 or store.steps[0] != 0:
        return without(f"{run}: the readouts store needs step 0 and a later step")
    try:
        first, last = _normalized(store, 0), _normalized(store, store.steps[-1])
    except ValueError as exc:  # a damaged shard (``zerolock analyze`` names it on stderr)
        return without(f"{run}: unreadable readout shard: {exc}")
    return Readouts(run, store.steps[-1], first, last, labels[labels != -100], store.mode == "full")


@dataclass(frozen=True, eq=False)
class RunData:
    """One run's metrics; each property reads its quantity on first use and keeps the arrays."""

    name: str
    frame: pd.DataFrame
    _by_objective: dict[tuple[str, str], object] = field(default_factory=dict, repr=False)

    @cached_property
    def held_out(self) -> HeldOut:
        return held_out(self.frame, self.name)

    @cached_property
    def distances(self) -> Distances:
        return distances(self.frame, self.name)

    @cached_property
    def task_ce(self) -> TaskCE:
        return task_ce(self.frame, self.name)

    @cached_property
    def chunk_pairs(self) -> ChunkPairs:
        return chunk_pairs(self.frame, self.name)

    def stability(self, obj: str) -> StabilityTerms:
        """``stability_terms`` of one objective."""
        if ("terms", obj) not in self._by_objective:
            self._by_objective["terms", obj] = stability_terms(self.frame, obj, self.name)
        return self._by_objective["terms", obj]  # type: ignore[return-value]

    def totals(self, obj: str) -> DriftTotals:
        """``stability_totals`` of one objective."""
        if ("totals", obj) not in self._by_objective:
            self._by_objective["totals", obj] = stability_totals(self.frame, obj, self.name)
        return self._by_objective["totals", obj]  # type: ignore[return-value]
