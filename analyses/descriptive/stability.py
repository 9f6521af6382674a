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

from analyses.descriptive.data import StabilityTerms, stability_labels, stability_terms
from analyses.io import RunDataError
from analyses.results import NotMeasured, Result, declare, register
from zerolock_theory.records import STABILITY
from zerolock_theory.vocab import OBJECTIVES

__all__ = ["OBJECTIVES", "RatioStats", "StabilitySummary", "stability_chunks", "stability_summary",
           "summarize_stability"]

_key = STABILITY.key


def _check_objective(obj: str) -> None:
    if obj not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {obj!r}")


def stability_chunks(frame: pd.DataFrame, obj: str) -> list[str]:
    """The chunk labels ``"1".."K"`` (K from the run's config) then ``"total"``; none when the
    run has no stability terms for ``obj``."""
    return stability_labels(frame, obj)


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


def summarize_stability(terms: Sequence[StabilityTerms], obj: str, *, trained: str = "") -> StabilitySummary:
    """Median, p95 and max of ρ_t, share of steps with φ_t > 0, and undefined counts.

    Pools the probed steps of every run in ``terms`` (``analyses.descriptive.data.stability_terms``)
    that has terms for ``obj``, over the first such run's chunks. Rows where
    ``probe/stability/{obj}/defined`` is false are excluded and counted. Raises ``NotMeasured``
    when no run carries the keys or the objective is undefined at every probed step (with the
    probe's reason); ``RunDataError`` when a run lacks a chunk of the first.
    """
    _check_objective(obj)
    usable = [t for t in terms if t.chunks]
    if not usable:
        raise NotMeasured(f"no run has probe/stability/{obj}/* keys")
    chunks = usable[0].chunks
    cols: dict[str, list[np.ndarray]] = {c: [] for c in chunks}
    n_undefined_obj, reasons = 0, []
    for run in usable:
        ok = run.defined
        n_undefined_obj += int((~ok).sum())
        if not ok.all():
            reasons.append(run.reason)
        for chunk in chunks:
            if chunk not in run.chunks:
                raise RunDataError(f"{run.run}: missing column {_key(obj, chunk, 'q')!r}")
            j = run.chunks.index(chunk)
            stacked = np.stack([run.phi[:, j], run.q[:, j], run.ratio[:, j], run.remainder[:, j]])[:, ok]
            cols[chunk].append(stacked)
    stats = [_stats(c, *np.concatenate(cols[c], axis=1)) for c in chunks]
    if all(s.n_probe == 0 for s in stats):
        raise NotMeasured(reasons[0] if reasons else f"{STABILITY.key(obj, 'total', 'q')}: no probed step")
    return StabilitySummary(obj, [t.run for t in usable], stats, n_undefined_obj, trained)


def stability_summary(
    frames: Sequence[pd.DataFrame],
    obj: str,
    names: Sequence[str] | None = None,
    *,
    trained: str = "",
) -> StabilitySummary:
    """``summarize_stability`` over metrics frames (named ``names``, else ``run i``)."""
    _check_objective(obj)
    names = list(names) if names is not None else [f"run {i}" for i in range(len(frames))]
    terms = [stability_terms(f, obj, n) for f, n in zip(frames, names, strict=True)]
    return summarize_stability(terms, obj, trained=trained)
