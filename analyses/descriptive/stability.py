"""Assumption 5: the stability ratio ρ_t along training, per chunk (docs/MATH.md, "Assumption 5").

Reads the probe keys ``probe/stability/{obj}/{k}/{phi,q,ratio,actual,remainder}`` (declared as
``zerolock_theory.records.STABILITY``), obj ∈ {paper (R, D_k = KL(p_k ‖ g_k)),
implemented (R̄, D_k = KL(m_k ‖ p_k))}, k ∈ {1..K, total}; ρ_t = max(φ_t, 0)/q_t (null when
undefined), q_t = (1/N) Σ_n ‖Δp̃_t(n)‖².

This summary is descriptive. The verdict on Assumption 5 comes from step scaling
(``analyses.assumption5.scaling``): a pooled slope across the steps of a run is dominated by
step-to-step noise and cannot decide it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.io import logged_chunks, numeric_column
from analyses.results import NotMeasured, Result, declare, register
from zerolock_theory.records import STABILITY, STABILITY_FLAG
from zerolock_theory.vocab import OBJECTIVES

__all__ = ["OBJECTIVES", "RatioStats", "StabilitySummary", "stability_chunks", "stability_summary"]

_key = STABILITY.key


def _check_objective(obj: str) -> None:
    if obj not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {obj!r}")


def stability_chunks(frame: pd.DataFrame, obj: str) -> list[str]:
    """The chunk labels ``"1".."K"`` (K from the run's config) then ``"total"``; none when the
    run has no stability terms for ``obj``."""
    chunks = [str(k) for k in logged_chunks(frame, STABILITY, "q", objective=obj)]
    return chunks + (["total"] if _key(obj, "total", "q") in frame.columns else [])


def _defined_mask(frame: pd.DataFrame, obj: str) -> pd.Series:
    """Rows where the objective could be evaluated (``probe/stability/{obj}/defined``)."""
    column = STABILITY_FLAG.key(obj, "defined")
    if column not in frame.columns:
        return pd.Series(True, index=frame.index)
    undefined = frame[column].map(lambda v: isinstance(v, (bool, np.bool_)) and not v)
    return ~undefined.astype(bool)


def _undefined_reason(frame: pd.DataFrame, obj: str) -> str:
    column = STABILITY_FLAG.key(obj, "reason")
    if column in frame.columns:
        reasons = frame[column].dropna()
        if len(reasons):
            return str(reasons.iloc[0])
    return f"{STABILITY_FLAG.key(obj, 'defined')} is false"


def _ratio(frame: pd.DataFrame, obj: str, chunk: str) -> tuple[pd.Series, pd.Series, pd.Series]:
    """(φ, q, ρ) for one chunk; ρ recomputed as max(φ,0)/q if ``ratio`` is absent."""
    phi = numeric_column(frame, _key(obj, chunk, "phi"), where=obj)
    q = numeric_column(frame, _key(obj, chunk, "q"), where=obj)
    if _key(obj, chunk, "ratio") in frame.columns:
        rho = numeric_column(frame, _key(obj, chunk, "ratio"), where=obj)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = (phi.clip(lower=0.0) / q).where(q > 0)
    return phi, q, rho


@dataclass(frozen=True)
class RatioStats:
    """Distribution of ρ_t for one chunk (or ``total``) pooled over runs."""

    chunk: str
    n_probe: int
    n_defined: int
    n_undefined: int
    median: float
    p95: float
    max: float
    share_phi_positive: float
    remainder_ratio_median: float


@register
@dataclass(frozen=True)
class StabilitySummary(Result):
    """ρ_t per chunk and total for one objective (R: ``paper``, R̄: ``implemented``)."""

    kind = "stability_summary"
    objective: str
    runs: list[str]
    chunks: list[RatioStats]
    n_steps_undefined_objective: int
    trained: str = ""

    def total(self) -> RatioStats | None:
        return next((c for c in self.chunks if c.chunk == "total"), None)


STABILITY_SUMMARY = {o: declare(f"stability_{o}", StabilitySummary, builtin=True) for o in OBJECTIVES}
"""The stability summary of each objective's runs."""


def _stats(
    chunk: str, phi: np.ndarray, q: np.ndarray, rho: np.ndarray, rem: np.ndarray
) -> RatioStats:
    probe = ~np.isnan(q)
    defined = probe & ~np.isnan(rho)
    values = rho[defined]
    finite = values[np.isfinite(values)]
    phis = phi[probe & ~np.isnan(phi)]
    with np.errstate(divide="ignore", invalid="ignore"):
        rem_ratio = np.abs(rem) / q
    rem_ratio = rem_ratio[probe & np.isfinite(rem_ratio)]
    nan = float("nan")
    return RatioStats(
        chunk=chunk,
        n_probe=int(probe.sum()),
        n_defined=int(defined.sum()),
        n_undefined=int((probe & np.isnan(rho)).sum()),
        median=float(np.median(finite)) if finite.size else nan,
        p95=float(np.percentile(finite, 95)) if finite.size else nan,
        max=float(values.max()) if values.size else nan,
        share_phi_positive=float((phis > 0).mean()) if phis.size else nan,
        remainder_ratio_median=float(np.median(rem_ratio)) if rem_ratio.size else nan,
    )


def stability_summary(
    frames: Sequence[pd.DataFrame],
    obj: str,
    names: Sequence[str] | None = None,
    *,
    trained: str = "",
) -> StabilitySummary:
    """Median, p95 and max of ρ_t, share of steps with φ_t > 0, and undefined counts.

    Pools the probed steps of all ``frames``. Rows where ``probe/stability/{obj}/defined`` is
    false are excluded and counted. Raises ``NotMeasured`` when no run carries the keys or the
    objective is undefined at every probed step (with the probe's reason).
    """
    _check_objective(obj)
    names = list(names) if names is not None else [f"run {i}" for i in range(len(frames))]
    usable = [(f, n) for f, n in zip(frames, names, strict=True) if stability_chunks(f, obj)]
    if not usable:
        raise NotMeasured(f"no run has probe/stability/{obj}/* keys")
    chunks = stability_chunks(usable[0][0], obj)
    cols: dict[str, list[np.ndarray]] = {c: [] for c in chunks}
    n_undefined_obj, reasons = 0, []
    for frame, _ in usable:
        ok = _defined_mask(frame, obj).to_numpy()
        n_undefined_obj += int((~ok).sum())
        if not ok.all():
            reasons.append(_undefined_reason(frame, obj))
        for chunk in chunks:
            phi, q, rho = _ratio(frame, obj, chunk)
            rem_key = _key(obj, chunk, "remainder")
            rem = numeric_column(frame, rem_key) if rem_key in frame.columns else phi * np.nan
            stacked = np.stack([phi, q, rho, rem]).astype(float)[:, ok]
            cols[chunk].append(stacked)
    stats = [_stats(c, *np.concatenate(cols[c], axis=1)) for c in chunks]
    if all(s.n_probe == 0 for s in stats):
        raise NotMeasured(reasons[0] if reasons else f"{STABILITY.key(obj, 'total', 'q')}: no probed step")
    return StabilitySummary(obj, [n for _, n in usable], stats, n_undefined_obj, trained)
