"""Shared parts of the stability and minimizer kernels (``probes.kernels``): block and keep sizes,
the key names of the sums, float64-accumulating sums over V, the expm1 pair of a step, the
constants of p_y^ε and α, and ``KernelSums``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

__all__ = ["BLOCK_ELEMS", "F64", "KEEP_BYTES", "MINIMIZER", "STABILITY", "KernelSums", "supported"]

BLOCK_ELEMS = 1 << 20  # float32 coordinates per block, all rows (4 MiB per array)
KEEP_BYTES = 512 << 20  # keep at most this much of one step's features for the next
_KEPT_UP = ("U", "Z", "d_po", "r_paper", "r_impl")  # upstream-row features reused as next step's "before"
_KEPT_EXTRA = ("o_minus_g",)  # also kept when four [K+1, N, V] float32 arrays fit in KEEP_BYTES
F64, _RUN = torch.float64, 64  # float32 partial sums over runs of _RUN coordinates, then float64

STABILITY = ("paper_r", "paper_phi", "paper_actual", "impl_r", "impl_phi", "impl_actual", "dp_sq")
MINIMIZER = ("kl_p_g", "kl_m_p", "tv_g", "tv_m", "ce")


def _expm1_pair(delta: torch.Tensor, a: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(e^{a·δ} − 1, e^{δ} − 1); for a = ½ from one expm1, as h·(h + 2) with h = e^{δ/2} − 1
    (no cancellation)."""
    if a == 0.5:
        half = torch.expm1(delta * 0.5)
        return half, half * (half + 2.0)
    return torch.expm1(delta * a), torch.expm1(delta)


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
    ``tv_g``, ``tv_m``, ``ce`` (KLs clamped at 0 per position, as the reference does), and
    ``ce_0`` ([1]: CE of the readout p_0).
    """

    values: dict[str, torch.Tensor] = field(default_factory=dict)

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.values[name]

    def __contains__(self, name: str) -> bool:
        return name in self.values


def _sum(x: torch.Tensor) -> torch.Tensor:
    """Σ over the last axis of a float32 [..., V] array, float32 runs of 64 then float64: [...]."""
    v = x.shape[-1]
    head = v - v % _RUN
    out = x[..., :head].reshape(*x.shape[:-1], -1, _RUN).sum(-1).sum(-1, dtype=F64)
    if head < v:
        out = out + x[..., head:].sum(-1, dtype=F64)
    return out


def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Σ_v a·b over the last axis: fused float32 products over runs of 64, float64 across runs."""
    v = a.shape[-1]
    head = v - v % _RUN
    shape = (*a.shape[:-1], -1, _RUN)
    out = torch.mul(a[..., :head], b[..., :head]).reshape(shape).sum(-1).sum(-1, dtype=F64)
    if head < v:
        out = out + (a[..., head:] * b[..., head:]).sum(-1, dtype=F64)
    return out


def _at(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """x[..., n, y_n] as float64 [..., b]."""
    return x.gather(-1, idx.expand(*x.shape[:-1], 1)).squeeze(-1).to(F64)


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
