"""Fast stability and minimizer kernels on log-readouts (MATH.md, "Assumption 5", "Proposition 1").

The float64 reference is ``zerolock_theory.theory.stability`` (and the definitions of
``probes.minimizers``); this module computes the same numbers from float32 log p̃ at a cost
comparable to the probe forward:

* positions are processed in blocks of ``block_elems`` coordinates (cache-sized), so the
  working set is a few [block, V] float32 arrays whatever N is;
* everything elementwise is float32 and in log space: each readout row is exponentiated
  once (P = exp L); g_k's unnormalised U = p_y^α p_{k-1}^{1-α} = exp(log U) once per
  upstream row (a square root when α = 1/2); Δp = p·expm1(L^{t+1} − L^t) (one ``expm1``,
  exact for small changes); logs of m_k only when ε_m > 0 (otherwise log m = log(1-α) + L);
* every reduction accumulates in float64: products are summed in float32 over runs of 64
  coordinates, then the partial sums in float64;
* differences that cancel are taken analytically, never by subtracting two large sums:
  actual = R(ω^t; p̃^{t+1}) − R(ω^t; p̃^t) uses log(Z^{t+1}/Z^t) = log1p(Σ g^t·expm1((1-α)δ))
  (paper) and m log m differences through log(m^{t+1}/m^t) (implemented).

``step_sums`` returns per-chunk float64 means over positions; ``probes.stability`` and
``probes.minimizers`` turn them into metrics. q_t = ‖Δp̃_t‖² is the per-position mean
(1/N) Σ_n Σ_k ‖Δp_{k-1}(n)‖². α = 1 and ε_g = 0 (where R is +inf) are left to the
reference: ``supported`` says whether the fast path applies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

__all__ = ["BLOCK_ELEMS", "KernelSums", "step_sums", "supported"]

BLOCK_ELEMS = 1 << 16  # float32 coordinates per block (256 KiB per array)
F64 = torch.float64
_RUN = 64  # float32 partial sums over runs of this many coordinates

STABILITY = ("paper_r", "paper_phi", "paper_actual", "impl_r", "impl_phi", "impl_actual", "dp_sq")
MINIMIZER = ("kl_p_g", "kl_m_p", "tv_g", "tv_m", "ce")


def supported(alpha: float, eps_g: float) -> bool:
    """Whether the fast path applies: α < 1 (targets depend on p_{k-1}) and ε_g > 0 (R finite)."""
    return 0.0 <= alpha < 1.0 and eps_g > 0.0


@dataclass
class KernelSums:
    """Per-chunk [K] float64 means over positions (1/N Σ_n) of the stability and minimizer terms.

    Stability (None without ``before``): ``paper_r`` = R_k(ω^t; p̃^t) (paper),
    ``paper_phi`` = φ_k, ``paper_actual`` = R_k(ω^t; p̃^{t+1}) − R_k(ω^t; p̃^t); the same
    ``impl_*`` for the implemented objective; ``dp_sq`` = (1/N) Σ_n ‖Δp_{k-1}(n)‖².
    Minimizers at the ``after`` readouts (None unless asked): ``kl_p_g``, ``kl_m_p``,
    ``tv_g``, ``tv_m``, ``ce`` (KLs clamped at 0 per position, as the reference does).
    """

    values: dict[str, torch.Tensor] = field(default_factory=dict)

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.values[name]

    def __contains__(self, name: str) -> bool:
        return name in self.values


def _sum(x: torch.Tensor) -> torch.Tensor:
    """Σ over the last axis of a float32 [b, V] array, float32 runs of 64 then float64: [b]."""
    b, v = x.shape
    head = v - v % _RUN
    out = x[:, :head].reshape(b, -1, _RUN).sum(-1).sum(-1, dtype=F64)
    if head < v:
        out = out + x[:, head:].sum(-1, dtype=F64)
    return out


def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Σ_v a·b per position: float32 products, float64 accumulation (see ``_sum``)."""
    return _sum(a * b)


def _at(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """x[n, y_n] as float64 [b]."""
    return x.gather(1, idx).squeeze(1).to(F64)


@dataclass
class _Consts:
    """Scalars of p_y^ε and α shared by every block."""

    alpha: float
    lo_g: float  # log p_y^{ε_g} off the label
    lon_g: float  # ... on the label
    off_m: float  # p_y^{ε_m} off the label
    on_m: float

    @classmethod
    def make(cls, vocab: int, alpha: float, eps_g: float, eps_m: float) -> _Consts:
        off_g, on_g = eps_g / vocab, 1.0 - eps_g + eps_g / vocab
        return cls(alpha, math.log(off_g), math.log(on_g), eps_m / vocab, 1.0 - eps_m + eps_m / vocab)

    @property
    def a(self) -> float:
        return 1.0 - self.alpha


class _Row:
    """One readout row on a block of positions, with what its uses need, built lazily."""

    def __init__(self, log_p: torch.Tensor, idx: torch.Tensor, c: _Consts) -> None:
        self.L, self.idx, self.c = log_p, idx, c
        self._cache: dict[str, torch.Tensor] = {}

    def _get(self, name: str, make) -> torch.Tensor:
        if name not in self._cache:
            self._cache[name] = make()
        return self._cache[name]

    @property
    def P(self) -> torch.Tensor:  # noqa: N802 (the maths' name)
        return self._get("P", self.L.exp)

    @property
    def s(self) -> torch.Tensor:
        """Σ_v p (float64), ≈ 1."""
        return self._get("s", lambda: _sum(self.P))

    def _log_u(self) -> torch.Tensor:
        c = self.c
        out = torch.add(self.L, 0.0, alpha=1.0).mul_(c.a).add_(c.alpha * c.lo_g)
        return out.scatter_(1, self.idx, self.L.gather(1, self.idx) * c.a + c.alpha * c.lon_g)

    @property
    def log_u(self) -> torch.Tensor:
        """log U = (1-α)·L + α·log p_y^{ε_g}: log g_k = log U − log Z."""
        return self._get("log_u", self._log_u)

    @property
    def U(self) -> torch.Tensor:  # noqa: N802
        def make() -> torch.Tensor:
            c = self.c
            if c.alpha == 0.5:  # U = sqrt(p)·sqrt(p_y): a square root instead of an exponential
                u = self.P.sqrt().mul_(math.exp(0.5 * c.lo_g))
                on = (self.L.gather(1, self.idx) * 0.5).exp_().mul_(math.exp(0.5 * c.lon_g))
                return u.scatter_(1, self.idx, on)
            return self.log_u.exp()

        return self._get("U", make)

    @property
    def Z(self) -> torch.Tensor:  # noqa: N802
        return self._get("Z", lambda: _sum(self.U))

    def _m(self) -> torch.Tensor:
        c = self.c
        m = self.P * c.a
        if c.off_m:
            m.add_(c.alpha * c.off_m)
        return m.scatter_(1, self.idx, self.P.gather(1, self.idx) * c.a + c.alpha * c.on_m)

    @property
    def M(self) -> torch.Tensor:  # noqa: N802
        """m_k built on this row: (1-α)·p + α·p_y^{ε_m}."""
        return self._get("M", self._m)

    def _log_m(self) -> torch.Tensor:
        c = self.c
        if c.off_m:
            return self.M.log()
        out = self.L + math.log(c.a)  # off the label m = (1-α)·p exactly
        return out.scatter_(1, self.idx, self.M.gather(1, self.idx).log())

    @property
    def log_m(self) -> torch.Tensor:
        return self._get("log_m", self._log_m)


def _stability(p: _Row, o: _Row, n: _Row, out: dict[str, list[torch.Tensor]]) -> None:
    """Per-position terms of one chunk: upstream p (at t), output o (at t), upstream n (at t+1)."""
    c = p.c
    a = c.a
    delta = n.L - p.L
    e = torch.expm1(delta)
    d = p.P * e  # Δp = p^{t+1} − p^t, exact for small changes
    log_z = p.Z.log()
    out["paper_r"].append(_dot(o.P, o.L - p.log_u) + log_z * o.s)
    out["paper_phi"].append(a * (_dot(p.U, e) / p.Z - _dot(o.P, e)))
    ea = e / ((e + 1.0).sqrt_() + 1.0) if c.alpha == 0.5 else torch.expm1(delta * a)
    out["paper_actual"].append(-a * _dot(o.P, delta) + o.s * torch.log1p(_dot(p.U, ea) / p.Z))
    out["dp_sq"].append(_dot(d, d))
    out["impl_r"].append(_dot(p.M, p.log_m - o.L))
    out["impl_phi"].append(a * (_dot(p.log_m - o.L, d) + _sum(d)))
    # Σ m' log m' − m log m = Σ (m' − m)·log m' + m·log(m'/m), with m' − m = (1-α)·Δp.
    if c.off_m:
        ratio_term = _dot(p.M, torch.log1p(d * a / p.M))
    else:  # off the label log(m'/m) = δ; on it log1p((1-α)Δp_y / m_y)
        d_y, m_y = _at(d, p.idx), _at(p.M, p.idx)
        ratio_term = _dot(p.M, delta) + m_y * (torch.log1p(a * d_y / m_y) - _at(delta, p.idx))
    out["impl_actual"].append(a * _dot(d, n.log_m - o.L) + ratio_term)


def _minimizers(p: _Row, o: _Row, out: dict[str, list[torch.Tensor]]) -> None:
    """Per-position minimizer terms of one chunk at one step: upstream p, output o."""
    out["kl_p_g"].append((_dot(o.P, o.L - p.log_u) + p.Z.log() * o.s).clamp_min(0.0))
    out["kl_m_p"].append(_dot(p.M, p.log_m - o.L).clamp_min(0.0))
    out["tv_g"].append(0.5 * _sum((o.P - p.U * (1.0 / p.Z).float().unsqueeze(1)).abs_()))
    out["tv_m"].append(0.5 * _sum((o.P - p.M).abs_()))
    out["ce"].append(-_at(o.L, o.idx))


def _blocks(n: int, vocab: int, block_elems: int) -> list[slice]:
    size = max(1, block_elems // max(1, vocab))
    return [slice(i, min(n, i + size)) for i in range(0, n, size)]


@torch.no_grad()
def step_sums(
    before: torch.Tensor | None,
    after: torch.Tensor,
    labels: torch.Tensor,
    alpha: float,
    eps_g: float,
    eps_m: float,
    *,
    minimizers: bool = True,
    block_elems: int = BLOCK_ELEMS,
) -> KernelSums:
    """Stability terms of the step ``before`` → ``after`` and minimizer terms at ``after``.

    ``before``/``after``: log p̃ = (log p_0, …, log p_K) at ω^t and ω^{t+1}, [K+1, N, V]
    (float32; other dtypes are converted per block). ``labels``: [N] token ids. ε_g smooths
    p_y in g_k (> 0), ε_m in m_k. Requires ``supported(alpha, eps_g)``.
    (``torch.compile`` of a block was tried: 2.4x faster after ~100 s of compilation, and
    inductor's reordered reductions lose the 1e-6 agreement, so it is not used.)
    """
    if not supported(alpha, eps_g):
        raise ValueError(f"the fast kernels need 0 <= alpha < 1 and eps_g > 0, got {alpha}, {eps_g}")
    rows, n, vocab = after.shape
    if before is not None and before.shape != after.shape:
        raise ValueError(f"before {tuple(before.shape)} and after {tuple(after.shape)} differ")
    c = _Consts.make(vocab, float(alpha), float(eps_g), float(eps_m))
    names = (STABILITY if before is not None else ()) + (MINIMIZER if minimizers else ())
    acc = {name: torch.zeros(rows - 1, dtype=F64, device=after.device) for name in names}
    labels = labels.to(after.device).long()
    for sl in _blocks(n, vocab, block_elems):
        b = before[:, sl] if before is not None else None
        for name, value in _block(b, after[:, sl], labels[sl].unsqueeze(1), c, minimizers).items():
            acc[name] += value
    return KernelSums({name: value / n for name, value in acc.items()})


def _block(
    before: torch.Tensor | None, after: torch.Tensor, idx: torch.Tensor, c: _Consts, minimizers: bool
) -> dict[str, torch.Tensor]:
    """Per-chunk sums over one block of positions: {name: [K] float64}."""
    rows = after.shape[0]
    a_rows = [_Row(after[r].float(), idx, c) for r in range(rows)]
    b_rows = [_Row(before[r].float(), idx, c) for r in range(rows)] if before is not None else None
    out: dict[str, list[torch.Tensor]] = {}
    for k in range(1, rows):
        per: dict[str, list[torch.Tensor]] = {}
        if b_rows is not None:
            per.update({name: [] for name in STABILITY})
            _stability(b_rows[k - 1], b_rows[k], a_rows[k - 1], per)
            b_rows[k - 1] = None  # type: ignore[call-overload]  # free the block's arrays
        if minimizers:
            per.update({name: [] for name in MINIMIZER})
            _minimizers(a_rows[k - 1], a_rows[k], per)
        a_rows[k - 1] = None  # type: ignore[call-overload]
        for name, values in per.items():
            out.setdefault(name, []).append(values[0].sum())
    return {name: torch.stack(values) for name, values in out.items()}


_CACHE_KEY = "kernel_sums"


def cached_sums(
    cache: dict,
    step: int,
    before: torch.Tensor | None,
    after: torch.Tensor,
    labels: torch.Tensor,
    alpha: float,
    eps_g: float,
    eps_m: float,
) -> KernelSums:
    """``step_sums`` computed once per step and settings, shared by the probes through ``cache``.

    The stability probe (with ``before``) computes the minimizer terms in the same pass, so a
    minimizer probe asking afterwards (``before=None``) at the same step reuses them; in the
    other order only the missing stability terms are computed.
    """
    key = (step, float(alpha), float(eps_g), float(eps_m))
    hit = cache.get(_CACHE_KEY)
    have = hit[1] if hit is not None and hit[0] == key else KernelSums()
    need_stability = before is not None and "paper_phi" not in have
    need_minimizers = "ce" not in have and (before is None or not have.values)
    if need_stability or need_minimizers:
        fresh = step_sums(
            before if need_stability else None, after, labels, alpha, eps_g, eps_m, minimizers=need_minimizers
        )
        have = KernelSums({**have.values, **fresh.values})
        cache[_CACHE_KEY] = (key, have)
    return have
