"""Assumption 5: the stability ratio ρ_t and its scaling with the step (MATH.md).

Reads the probe keys ``probe/stability/{obj}/{k}/{phi,q,ratio,actual,remainder}``,
obj ∈ {paper, implemented} (R with D_k = KL(p_k ‖ g_k); R̄ with D_k = KL(m_k ‖ p_k)),
k ∈ {1..K, total}. ρ_t = max(φ_t, 0) / ‖Δp̃_t‖² (``ratio``; null when undefined).

Scaling diagnostic: the slope s of log ρ_t on log ‖Δp̃_t‖ = ½·log q, least squares over
the steps with ρ_t > 0 pooled across the runs of a learning-rate sweep; 95% interval by a
moving-block bootstrap of (x, y) pairs over steps within each run (L = round(n^{1/3})).

Verdict on s (``StabilityScaling.verdict``), with interval [lo, hi]:

* ``"unbounded"`` — hi < 0: ρ_t grows as the step shrinks, so no constant C_fo(α) bounds it
  uniformly over step sizes (Assumption 5 refuted). ``first_order`` records whether the
  interval contains −1, the generic first-order behaviour φ_t ∝ ‖Δp̃_t‖.
* ``"bounded"`` — hi ≥ 0 and lo > −0.5: no growth of ρ_t as ‖Δp̃‖ → 0 is detected and the
  first-order regime is excluded (consistent with Assumption 5). Also when φ_t ≤ 0 at every
  probed step (ρ_t ≡ 0).
* ``"inconclusive"`` — otherwise (the interval covers 0 and reaches −0.5 or below).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyses.bootstrap import block_indices, block_length, ols_slope, percentile_interval
from analyses.io import numeric_column
from analyses.results import Interval, NotMeasured, Result, register

__all__ = [
    "OBJECTIVES",
    "RatioStats",
    "StabilityScaling",
    "StabilitySummary",
    "SweepPoints",
    "stability_chunks",
    "stability_scaling",
    "stability_summary",
]

OBJECTIVES: tuple[str, ...] = ("paper", "implemented")
PREFIX = "probe/stability"
MIN_POINTS = 10
SCATTER_POINTS = 300


def _key(obj: str, chunk: str, field: str) -> str:
    return f"{PREFIX}/{obj}/{chunk}/{field}"


def _check_objective(obj: str) -> None:
    if obj not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {obj!r}")


def stability_chunks(frame: pd.DataFrame, obj: str) -> list[str]:
    """The chunk labels ``"1".."K"`` (numeric order) then ``"total"`` present for ``obj``."""
    pattern = re.compile(rf"^{PREFIX}/{obj}/([^/]+)/q$")
    found = {m.group(1) for c in frame.columns if (m := pattern.match(str(c)))}
    numeric = sorted((c for c in found if c.isdigit()), key=int)
    return numeric + (["total"] if "total" in found else [])


def _defined_mask(frame: pd.DataFrame, obj: str) -> pd.Series:
    """Rows where the objective could be evaluated (``probe/stability/{obj}/defined``)."""
    column = f"{PREFIX}/{obj}/defined"
    if column not in frame.columns:
        return pd.Series(True, index=frame.index)
    undefined = frame[column].map(lambda v: isinstance(v, (bool, np.bool_)) and not v)
    return ~undefined.astype(bool)


def _undefined_reason(frame: pd.DataFrame, obj: str) -> str:
    column = f"{PREFIX}/{obj}/reason"
    if column in frame.columns:
        reasons = frame[column].dropna()
        if len(reasons):
            return str(reasons.iloc[0])
    return f"probe/stability/{obj}/defined is false"


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
        raise NotMeasured(f"no run has {PREFIX}/{obj}/* keys")
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
        raise NotMeasured(reasons[0] if reasons else f"{PREFIX}/{obj}: no probed step")
    return StabilitySummary(obj, [n for _, n in usable], stats, n_undefined_obj, trained)


@dataclass(frozen=True)
class SweepPoints:
    """The (log ‖Δp̃_t‖, log ρ_t) points of one run of the sweep (thinned for plotting)."""

    run: str
    lr: float
    n_positive: int
    n_zero: int
    median_log_dp: float
    median_log_rho: float
    log_dp: list[float]
    log_rho: list[float]


@register
@dataclass(frozen=True)
class StabilityScaling(Result):
    """Slope s of log ρ_t on log ‖Δp̃_t‖ across a learning-rate sweep, with its verdict."""

    kind = "stability_scaling"
    objective: str
    chunk: str
    slope: Interval
    intercept: float
    n_points: int
    n_runs: int
    lrs: list[float]
    block_length: int
    n_boot: int
    verdict: str
    first_order: bool
    points: list[SweepPoints]
    trained: str = ""


def scaling_verdict(slope: Interval) -> str:
    """``unbounded`` / ``bounded`` / ``inconclusive`` from s's interval (module docstring)."""
    if slope.high < 0:
        return "unbounded"
    if slope.low > -0.5:
        return "bounded"
    return "inconclusive"


def _sweep_points(frame: pd.DataFrame, obj: str, chunk: str, name: str, lr: float):
    phi, q, rho = _ratio(frame, obj, chunk)
    ok = _defined_mask(frame, obj) & q.gt(0) & rho.notna() & np.isfinite(rho)
    positive = ok & rho.gt(0)
    x = 0.5 * np.log(q[positive].to_numpy())
    y = np.log(rho[positive].to_numpy())
    pos = np.unique(np.linspace(0, x.size - 1, min(x.size, SCATTER_POINTS)).astype(int))
    nan = float("nan")
    pts = SweepPoints(
        run=name,
        lr=float(lr),
        n_positive=int(x.size),
        n_zero=int((ok & rho.eq(0)).sum()),
        median_log_dp=float(np.median(x)) if x.size else nan,
        median_log_rho=float(np.median(y)) if y.size else nan,
        log_dp=x[pos].tolist() if x.size else [],
        log_rho=y[pos].tolist() if y.size else [],
    )
    return pts, x, y


def stability_scaling(
    frames: Sequence[pd.DataFrame],
    lrs: Sequence[float],
    obj: str,
    *,
    chunk: str = "total",
    names: Sequence[str] | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    trained: str = "",
) -> StabilityScaling:
    """Fit s in log ρ_t = a + s·log ‖Δp̃_t‖ over a learning-rate sweep (module docstring).

    Guarantees: s is the pooled least-squares slope over steps with ρ_t > 0; the verdict
    follows ``scaling_verdict``; same ``seed``, same result. Raises ``NotMeasured`` with fewer
    than two distinct learning rates, or with 1..9 positive ratios in all.
    """
    _check_objective(obj)
    names = list(names) if names is not None else [f"run {i}" for i in range(len(frames))]
    runs = [
        (f, float(lr), n)
        for f, lr, n in zip(frames, lrs, names, strict=True)
        if _key(obj, chunk, "q") in f.columns
    ]
    distinct = sorted({lr for _, lr, _ in runs})
    if len(distinct) < 2:
        raise NotMeasured(
            f"{PREFIX}/{obj}/{chunk}: needs a learning-rate sweep (runs at >= 2 distinct "
            f"optim.lr with the probe), found {len(distinct)}"
        )
    if all(not _defined_mask(f, obj).any() for f, _, _ in runs):
        raise NotMeasured(_undefined_reason(runs[0][0], obj))
    built = [_sweep_points(f, obj, chunk, n, lr) for f, lr, n in runs]
    points = [b[0] for b in built]
    xs = [b[1] for b in built if b[1].size]
    ys = [b[2] for b in built if b[1].size]
    n_points = sum(x.size for x in xs)
    if n_points == 0 and sum(p.n_zero for p in points) > 0:
        nan = float("nan")
        return StabilityScaling(
            obj,
            chunk,
            Interval(nan, nan, nan, level),
            nan,
            0,
            len(runs),
            distinct,
            0,
            int(n_boot),
            "bounded",
            False,
            points,
            trained,
        )
    if n_points < MIN_POINTS:
        raise NotMeasured(
            f"{PREFIX}/{obj}/{chunk}: too few positive ratios ({n_points} < {MIN_POINTS})"
        )
    slope, intercept = ols_slope(np.concatenate(xs), np.concatenate(ys))
    rng = np.random.default_rng(seed)
    idx = [block_indices(x.size, n_boot, rng) for x in xs]
    bx = np.concatenate([x[i] for x, i in zip(xs, idx, strict=True)], axis=1)
    by = np.concatenate([y[i] for y, i in zip(ys, idx, strict=True)], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        boot, _ = ols_slope(bx, by)
    ci = percentile_interval(float(slope), boot, level)
    return StabilityScaling(
        objective=obj,
        chunk=chunk,
        slope=ci,
        intercept=float(intercept),
        n_points=int(n_points),
        n_runs=len(runs),
        lrs=distinct,
        block_length=max(block_length(x.size) for x in xs),
        n_boot=int(n_boot),
        verdict=scaling_verdict(ci),
        first_order=bool(ci.contains(-1.0)),
        points=points,
        trained=trained,
    )
