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
  (paper) and m log m differences through log(m^{t+1}/m^t) (implemented);
* ``compiled=True`` (the ``[probes] compile`` setting, ``use_compiled``) runs each block
  through ``torch.compile`` of ``_one_pass``: the same quantities arranged so that every sum
  over V is of elementwise functions of the inputs (label terms as float64 corrections, no
  scatter, nothing kept between steps), with expm1 in a form inductor keeps exact. The
  eager path (``_block``) instead keeps features from one step for the next.

``step_sums`` returns per-chunk float64 means over positions; ``probes.stability`` and
``probes.minimizers`` turn them into metrics. q_t = ‖Δp̃_t‖² is the per-position mean
(1/N) Σ_n Σ_k ‖Δp_{k-1}(n)‖². α = 1 and ε_g = 0 (where R is +inf) are left to the
reference: ``supported`` says whether the fast path applies.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import torch

from zerolock_theory.probe_config import COMPILE_MODES

__all__ = ["BLOCK_ELEMS", "COMPILE_MODES", "KernelSums", "cached_sums", "step_sums", "supported", "use_compiled"]

BLOCK_ELEMS = 1 << 20  # float32 coordinates per block, all rows (4 MiB per array)
KEEP_BYTES = 512 << 20  # keep at most this much of one step's features for the next
_KEPT_UP = ("U", "Z", "d_po", "r_paper", "r_impl")  # upstream-row features reused as next step's "before"
_KEPT_EXTRA = ("o_minus_g",)  # also kept when four [K+1, N, V] float32 arrays fit in KEEP_BYTES
F64, _RUN = torch.float64, 64  # float32 partial sums over runs of _RUN coordinates, then float64

STABILITY = ("paper_r", "paper_phi", "paper_actual", "impl_r", "impl_phi", "impl_actual", "dp_sq")
MINIMIZER = ("kl_p_g", "kl_m_p", "tv_g", "tv_m", "ce")


def _expm1(x: torch.Tensor) -> torch.Tensor:
    """expm1(x), also inside ``torch.compile``.

    Inductor's CPU code computes expm1 as exp(x) − 1, which loses every digit as x → 0 (a
    relative error of 1 at |x| = 1e-8, measured with torch 2.13). Compiled, small |x| take
    Kahan's form (u − 1)·x / log u with u = exp(x), accurate to a few ulps because the
    rounding of u cancels between numerator and denominator; |x| ≥ ½ take u − 1 (no
    cancellation there). Eager calls ``torch.expm1``.
    """
    if not torch.compiler.is_compiling():
        return torch.expm1(x)
    u = torch.exp(x)
    small = torch.where(u == 1.0, x, (u - 1.0) * x / torch.log(u))
    return torch.where(x.abs() < 0.5, small, u - 1.0)


def _expm1_pair(delta: torch.Tensor, a: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(e^{a·δ} − 1, e^{δ} − 1); for a = ½ from one expm1, as h·(h + 2) with h = e^{δ/2} − 1
    (no cancellation)."""
    if a == 0.5:
        half = _expm1(delta * 0.5)
        return half, half * (half + 2.0)
    return _expm1(delta * a), _expm1(delta)


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

    @property
    def label_weight(self) -> float:
        """c_g = α·log(p_y^{ε_g}(y) / p_y^{ε_g}(v≠y)): log of g's extra weight on the label."""
        return self.alpha * (self.lon_g - self.lo_g)


class _Rows:
    """Readout rows [R, b, V] on a block of positions and their lazily built features.

    ``U`` is g's unnormalised numerator up to the constant (ε_g/V)^α: U = p^{1-α} off the
    label, (p_y^{ε_g}(y)/p_y^{ε_g}(v≠y))^α·p^{1-α} on it, so g = U / Z and
    log Z_true = α·log(ε_g/V) + log Z. ``M``/``log_m`` (m built on these rows) are
    materialised only when ε_m > 0.
    """

    def __init__(self, log_p: torch.Tensor, idx: torch.Tensor, c: _Consts, cache: dict | None = None) -> None:
        self.L, self.idx, self.c = log_p, idx, c
        self._cache: dict[str, torch.Tensor] = dict(cache or {})

    def _get(self, name: str, make) -> torch.Tensor:
        if name not in self._cache:
            self._cache[name] = make()
        return self._cache[name]

    def part(self, rows: slice) -> _Rows:
        """The same features on a subset of rows (views)."""
        return _Rows(self.L[rows], self.idx, self.c, {k: v[rows] for k, v in self._cache.items()})

    @property
    def P(self) -> torch.Tensor:  # noqa: N802 (the maths' name)
        return self._get("P", self.L.exp)

    @property
    def s(self) -> torch.Tensor:
        """Σ_v p per row and position (float64), ≈ 1."""
        return self._get("s", lambda: _sum(self.P))

    @property
    def negent(self) -> torch.Tensor:
        """Σ_v p log p (float64)."""
        return self._get("negent", lambda: _dot(self.P, self.L))

    def _u(self) -> torch.Tensor:
        c = self.c
        u = self.P.sqrt() if c.alpha == 0.5 else torch.exp(self.L * c.a)
        on = (self.L.gather(-1, self._idx()) * c.a).exp_().mul_(math.exp(c.alpha * (c.lon_g - c.lo_g)))
        return u.scatter_(-1, self._idx(), on)

    def _idx(self) -> torch.Tensor:
        return self.idx.expand(*self.L.shape[:-1], 1)

    @property
    def U(self) -> torch.Tensor:  # noqa: N802
        return self._get("U", self._u)

    def _z(self) -> torch.Tensor:
        c = self.c
        if c.alpha == 0.5:  # sqrt is correctly rounded: the float32 U sums without bias
            return _sum(self.U)
        # float32 exp(a·L) carries a ~1 ulp bias that log Z would turn into a bias of R: sum in float64
        l64 = self.L.to(F64)
        l_y = _at(self.L, self.idx)
        return torch.exp(l64 * c.a).sum(-1) + math.expm1(c.alpha * (c.lon_g - c.lo_g)) * torch.exp(l_y * c.a)

    @property
    def Z(self) -> torch.Tensor:  # noqa: N802
        return self._get("Z", self._z)

    def at(self, name: str) -> torch.Tensor:
        """A dense feature at the label, float64 [R, b]."""
        return _at(getattr(self, name), self.idx)

    @property
    def M(self) -> torch.Tensor:  # noqa: N802
        """m built on these rows: (1-α)·p + α·p_y^{ε_m} (materialised; ε_m > 0 path)."""

        def make() -> torch.Tensor:
            c = self.c
            m = (self.P * c.a).add_(c.alpha * c.off_m)
            return m.scatter_(-1, self._idx(), self.P.gather(-1, self._idx()) * c.a + c.alpha * c.on_m)

        return self._get("M", make)

    @property
    def log_m(self) -> torch.Tensor:
        return self._get("log_m", lambda: self.M.log())

    def m_y(self) -> torch.Tensor:
        """m at the label, float64 [R, b] (from float64 p_y)."""
        c = self.c
        return c.a * _at(self.L, self.idx).exp() + c.alpha * c.on_m


def _paper(p: _Rows, o: _Rows, d_po: torch.Tensor) -> torch.Tensor:
    """KL(o ‖ g(p)) per row and position; ``d_po`` = L_p − L_o."""
    c = p.c
    return -c.a * _dot(o.P, d_po) + c.alpha * o.negent - c.alpha * (c.lon_g - c.lo_g) * o.at("P") + p.Z.log() * o.s


def _implemented(p: _Rows, o: _Rows, d_po: torch.Tensor) -> torch.Tensor:
    """KL(m(p) ‖ o) per row and position; ``d_po`` = L_p − L_o."""
    c = p.c
    if c.off_m:
        return _dot(p.M, p.log_m - o.L)
    a, la = c.a, math.log(c.a)
    off = a * _dot(p.P, d_po) + a * la * p.s  # off the label m = (1-α)·p, log m = log(1-α) + L_p
    p_y, lo_y, dy = p.at("P"), _at(o.L, o.idx), _at(d_po, p.idx)
    m_y = p.m_y()
    return off - a * p_y * (dy + la) + m_y * (m_y.log() - lo_y)


def _stability(p: _Rows, o: _Rows, n: _Rows, out: dict[str, torch.Tensor]) -> None:
    """Per-chunk sums of one block: upstream p (at t), outputs o (at t), upstream n (at t+1)."""
    c = p.c
    a = c.a
    delta = n.L - p.L
    e_a, e = _expm1_pair(delta, a)
    d = p.P * e  # Δp = p^{t+1} − p^t, exact for small changes
    d_po = p._get("d_po", lambda: p.L - o.L)  # kept from the previous step's minimizers
    out["paper_r"] = p._get("r_paper", lambda: _paper(p, o, d_po))
    out["paper_phi"] = a * -_dot(_o_minus_g(p, o), e)  # ⟨g − o, e⟩ = −⟨o − g, e⟩ exactly (kept from the minimizers)
    out["paper_actual"] = -a * _dot(o.P, delta) + o.s * torch.log1p(_dot(p.U, e_a) / p.Z)
    out["dp_sq"] = _dot(d, d)
    out["impl_r"] = p._get("r_impl", lambda: _implemented(p, o, d_po))
    sum_d = _sum(d)
    if c.off_m:
        out["impl_phi"] = a * (_dot(p.log_m - o.L, d) + sum_d)
        lr = torch.log1p(d * a / p.M)
        out["impl_actual"] = a * _dot(d, n.log_m - o.L) + _dot(p.M, lr)
        return
    la = math.log(a)
    d_y, dpo_y, delta_y = _at(d, p.idx), _at(d_po, p.idx), _at(delta, p.idx)
    m_py = p.m_y()
    lm_py = m_py.log()
    # φ: Σ (log m_p − L_o + 1)·Δp; off the label log m_p − L_o = log(1-α) + (L_p − L_o).
    dd_po = _dot(d, d_po)
    out["impl_phi"] = a * (dd_po + (la + 1.0) * sum_d + (lm_py - la - _at(p.L, p.idx)) * d_y)
    # actual: Σ (m' − m)(log m' − L_o) + m·log(m'/m), m' − m = (1-α)Δp; off the label
    # log m' − L_o = log(1-α) + δ + (L_p − L_o) and log(m'/m) = δ, which add up to (1-α)·Σ p'·δ.
    off = a * (la * sum_d + dd_po + _dot(n.P, delta))
    lo_y = _at(o.L, o.idx)
    off_y = a * d_y * (la + delta_y + dpo_y) + a * p.at("P") * delta_y
    m_ny = m_py + a * d_y
    true_y = a * d_y * (m_ny.log() - lo_y) + m_py * torch.log1p(a * d_y / m_py)
    out["impl_actual"] = off - off_y + true_y


def _o_minus_g(p: _Rows, o: _Rows) -> torch.Tensor:
    """o − g(p) per coordinate, float32 (TV(o, g) at one step, φ of the paper's R at the next)."""
    return p._get("o_minus_g", lambda: torch.addcmul(o.P, p.U, (-1.0 / p.Z).float().unsqueeze(-1)))


def _stability_moving(p: _Rows, o: _Rows, n: _Rows, out: dict[str, torch.Tensor], still: int) -> None:
    """``_stability`` when the first ``still`` upstream rows are the same at t and t+1: zeros there."""
    if not still:
        return _stability(p, o, n, out)
    d_po = p._get("d_po", lambda: p.L - o.L)
    out["paper_r"] = p._get("r_paper", lambda: _paper(p, o, d_po))  # R before the step: every chunk
    out["impl_r"] = p._get("r_impl", lambda: _implemented(p, o, d_po))
    moving, part = slice(still, p.L.shape[0]), dict[str, torch.Tensor]()
    if still < p.L.shape[0]:
        _stability(p.part(moving), o.part(moving), n.part(moving), part)
    zeros = torch.zeros(still, p.L.shape[1], dtype=F64, device=p.L.device)
    out.update({k: torch.cat([zeros, part[k]]) if part else zeros for k in STABILITY if k not in out})


def _minimizers(p: _Rows, o: _Rows, out: dict[str, torch.Tensor]) -> None:
    """Per-chunk minimizer sums of one block at one step: upstream p, outputs o."""
    c = p.c
    d_po = p._get("d_po", lambda: p.L - o.L)
    out["kl_p_g"] = p._get("r_paper", lambda: _paper(p, o, d_po)).clamp_min(0.0)
    out["kl_m_p"] = p._get("r_impl", lambda: _implemented(p, o, d_po)).clamp_min(0.0)
    out["tv_g"] = 0.5 * _sum(_o_minus_g(p, o).abs())
    if c.off_m:
        out["tv_m"] = 0.5 * _sum((o.P - p.M).abs_())
    else:
        o_y, m_y = o.at("P"), p.m_y()
        out["tv_m"] = 0.5 * (_sum(torch.add(o.P, p.P, alpha=-c.a).abs_()) - (o_y - c.a * p.at("P")).abs() + (o_y - m_y).abs())
    out["ce"] = -_at(o.L, o.idx)


def _blocks(n: int, vocab: int, rows: int, block_elems: int, equal: bool = False) -> list[slice]:
    """Slices of positions of about ``block_elems`` coordinates; ``equal``: one size throughout when
    a divisor of ``n`` at least half the size exists (a compiled block then compiles once)."""
    size = max(1, block_elems // max(1, vocab * rows))
    if equal and n % size:
        size = next((d for d in range(size, size // 2, -1) if n % d == 0), size)
    return [slice(i, min(n, i + size)) for i in range(0, n, size)]


def _block(
    before: torch.Tensor | None,
    after: torch.Tensor,
    idx: torch.Tensor,
    c: _Consts,
    still: int,
    minimizers: bool,
    full: dict | None = None,
    upper: dict | None = None,
) -> tuple[dict[str, torch.Tensor], _Rows, _Rows]:
    """The sums of one block of positions ([R, b] each), and the ``after`` rows with their features.

    ``full``/``upper``: features of ``before`` kept from the previous step (eager path only).
    """
    up, down = slice(0, after.shape[0] - 1), slice(1, after.shape[0])
    out: dict[str, torch.Tensor] = {}
    new = _Rows(after.float(), idx, c)
    new.P, new.s, new.negent  # noqa: B018 (computed once for all rows, then sliced)
    new_up = new.part(up)
    if minimizers:
        _minimizers(new_up, new.part(down), out)
        out["ce_0"] = -_at(new.L[:1], idx)  # CE of the readout p_0 (Proposition 1's CE_0)
    if before is not None:
        old = _Rows(before.float(), idx, c, full)
        old.P, old.s, old.negent  # noqa: B018
        old_up = old.part(up)
        old_up._cache.update(upper or {})
        _stability_moving(old_up, old.part(down), new_up, out, still)
    return out, new, new_up


class _Chunk:
    """One chunk's rows at one step, as [b, V] float32 arrays, for ``_one_pass``: upstream
    ``Lp``/``Pp``, output ``Lo``/``Po``, g's numerator ``Up`` off the label, and float64 [b]
    values at the label (``lpy``, ``loy``). Label terms are exact float64 corrections of sums
    taken with the off-label formula everywhere, so no array is scattered."""

    def __init__(self, lp: torch.Tensor, lo: torch.Tensor, pp: torch.Tensor, po: torch.Tensor, idx: torch.Tensor,
                 c: _Consts) -> None:
        self.Lp, self.Lo, self.Pp, self.Po, self.c = lp, lo, pp, po, c
        self.Up = pp.sqrt() if c.alpha == 0.5 else torch.exp(lp * c.a)
        self.lpy, self.loy = _at(lp, idx), _at(lo, idx)
        self.p_y, self.o_y = self.lpy.exp(), self.loy.exp()
        self.u_y = torch.exp(self.lpy * c.a)  # Up at the label; g's numerator there is e^{c_g}·u_y
        self.m_y = c.a * self.p_y + c.alpha * c.on_m  # m at the label; mt_y off-label formula there
        self.mt_y = c.a * self.p_y + c.alpha * c.off_m
        self.d_po = lp - lo
        self.s_o = _sum(po)
        base = _sum(self.Up) if c.alpha == 0.5 else torch.exp(lp.to(F64) * c.a).sum(-1)  # see _Rows._z
        self.Z = base + math.expm1(c.label_weight) * self.u_y
        self.Mt = pp * c.a + c.alpha * c.off_m if c.off_m else None  # m off the label, ε_m > 0
        self.log_mt = self.Mt.log() if self.Mt is not None else None

    def paper(self) -> torch.Tensor:
        """KL(o ‖ g(p)) (``_paper``)."""
        c = self.c
        return (-c.a * _dot(self.Po, self.d_po) + c.alpha * _dot(self.Po, self.Lo) - c.label_weight * self.o_y
                + self.Z.log() * self.s_o)

    def implemented(self) -> torch.Tensor:
        """KL(m(p) ‖ o) (``_implemented``)."""
        c, loy = self.c, self.loy
        true = self.m_y * (self.m_y.log() - loy)
        if self.Mt is not None:
            return _dot(self.Mt, self.log_mt - self.Lo) - self.mt_y * (self.mt_y.log() - loy) + true
        a, la = c.a, math.log(c.a)
        return a * (_dot(self.Pp, self.d_po) + la * _sum(self.Pp)) - a * self.p_y * (self.lpy - loy + la) + true

    def minimizers(self, out: dict[str, list]) -> None:
        """Minimizer terms at this step (``_minimizers``)."""
        c, o_y = self.c, self.o_y
        out["kl_p_g"].append(self.paper().clamp_min(0.0))
        out["kl_m_p"].append(self.implemented().clamp_min(0.0))
        dense = _sum((self.Po - self.Up * (1.0 / self.Z).float().unsqueeze(-1)).abs())
        g_y = self.u_y / self.Z
        out["tv_g"].append(0.5 * (dense - (o_y - g_y).abs() + (o_y - g_y * math.exp(c.label_weight)).abs()))
        mt = self.Mt if self.Mt is not None else self.Pp * c.a
        out["tv_m"].append(0.5 * (_sum((self.Po - mt).abs()) - (o_y - self.mt_y).abs() + (o_y - self.m_y).abs()))
        out["ce"].append(-self.loy)

    def stability(self, new: _Chunk, out: dict[str, list]) -> None:
        """Stability terms of the step from these rows (at t) to ``new`` (upstream at t+1): ``_stability``."""
        c = self.c
        a, ew = c.a, math.expm1(c.label_weight)
        delta = new.Lp - self.Lp
        e_a, e = _expm1_pair(delta, a)
        d = self.Pp * e  # Δp, exact for small changes
        delta_y = new.lpy - self.lpy
        e_y, ea_y = torch.expm1(delta_y), torch.expm1(delta_y * a)
        d_y, z = self.p_y * e_y, self.Z
        out["paper_phi"].append(a * ((_dot(self.Up, e) + ew * self.u_y * e_y) / z - _dot(self.Po, e)))
        out["paper_actual"].append(
            -a * _dot(self.Po, delta) + self.s_o * torch.log1p((_dot(self.Up, e_a) + ew * self.u_y * ea_y) / z)
        )
        out["dp_sq"].append(_dot(d, d))
        sum_d, loy, m_y = _sum(d), self.loy, self.m_y
        m_new = m_y + a * d_y  # m at the label after the step
        true_y = a * d_y * (m_new.log() - loy) + m_y * torch.log1p(a * d_y / m_y)
        if self.Mt is not None:
            label = a * d_y * (m_y.log() - self.mt_y.log())  # the true log m at the label
            out["impl_phi"].append(a * (_dot(self.log_mt - self.Lo, d) + sum_d) + label)
            mt_new = self.mt_y + a * d_y
            dense = a * _dot(d, new.log_mt - self.Lo) + _dot(self.Mt, torch.log1p(d * a / self.Mt))
            off_y = a * d_y * (mt_new.log() - loy) + self.mt_y * torch.log1p(a * d_y / self.mt_y)
            out["impl_actual"].append(dense - off_y + true_y)
            return
        la, dd_po = math.log(a), _dot(d, self.d_po)
        out["impl_phi"].append(a * (dd_po + (la + 1.0) * sum_d + (m_y.log() - la - self.lpy) * d_y))
        dense = a * (la * sum_d + dd_po + _dot(new.Pp, delta))  # log m' − L_o = log(1-α) + δ + (L_p − L_o) off y
        off_y = a * d_y * (la + delta_y + self.lpy - loy) + a * self.p_y * delta_y
        out["impl_actual"].append(dense - off_y + true_y)


def _one_pass(before: torch.Tensor, after: torch.Tensor, idx: torch.Tensor, c: _Consts, still: int) -> dict:
    """Stability and minimizer sums of one block, as ``_block`` gives them, for ``torch.compile``.

    The same quantities in a form whose every sum over V is of elementwise functions of the
    inputs and per-row scalars (``_Chunk``): exp of each readout row once per call, no
    scatter, no array kept. Inductor then runs it in a few fused loops (measured on the
    embedded model: 28 ms per step in isolation, against 40 for compiling ``_block`` itself).
    """
    rows = after.shape[0]
    p_after = [after[r].exp() for r in range(rows)]
    p_before = [before[r].exp() for r in range(rows)]
    out: dict[str, list] = {name: [] for name in (*MINIMIZER, *STABILITY)}
    for k in range(1, rows):
        new = _Chunk(after[k - 1], after[k], p_after[k - 1], p_after[k], idx, c)
        new.minimizers(out)
        old = _Chunk(before[k - 1], before[k], p_before[k - 1], p_before[k], idx, c)
        out["paper_r"].append(old.paper())
        out["impl_r"].append(old.implemented())
        if k - 1 < still:  # the upstream row did not change: Δp = 0
            zero = torch.zeros_like(out["paper_r"][-1])
            for name in ("paper_phi", "paper_actual", "dp_sq", "impl_phi", "impl_actual"):
                out[name].append(zero)
        else:
            old.stability(new, out)
    sums = {name: torch.stack(values) for name, values in out.items()}
    sums["ce_0"] = -_at(after[0], idx).unsqueeze(0)
    return sums


_COMPILED: dict[str, object] = {}  # "fn": the compiled ``_one_pass``; "failed": why compiling did not work


def _compiled_block():
    if "fn" not in _COMPILED:
        _COMPILED["fn"] = torch.compile(_one_pass, dynamic=False)
    return _COMPILED["fn"]


AUTO_MIN_STEPS = 200  # "auto" compiles for runs of at least this many steps (compiling takes seconds)


def use_compiled(mode: str, device: torch.device | str, steps: int | None = None) -> bool:
    """Whether ``mode`` ("auto" | "on" | "off") runs the compiled kernels on ``device``.

    "auto": on a CPU, for runs of at least ``AUTO_MIN_STEPS`` steps (``steps`` None: unknown,
    taken as long), where compiling (seconds) pays for itself (measured in the probed loop
    of the embedded model: 79 → 32 ms per step); the eager kernels elsewhere. "on": always
    (falls back to eager, with a warning, if compiling fails). The two agree with the
    float64 reference within the same 1e-6 (tested).
    """
    if mode not in COMPILE_MODES:
        raise ValueError(f"probes.compile must be one of {COMPILE_MODES}, got {mode!r}")
    if mode == "auto":
        return torch.device(device).type == "cpu" and (steps is None or steps >= AUTO_MIN_STEPS)
    return mode == "on"


def _run_compiled(before: torch.Tensor, after: torch.Tensor, idx: torch.Tensor, c: _Consts, still: int):
    """The compiled block, or None (and a one-line warning, once) where compiling fails."""
    if "failed" in _COMPILED:
        return None
    try:
        return _compiled_block()(before, after, idx, c, still)
    except Exception as exc:  # noqa: BLE001 (no C++ compiler, unsupported backend, ...)
        _COMPILED["failed"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        warnings.warn(f"probes: torch.compile of the kernels failed ({_COMPILED['failed']}); "
                      "using the eager kernels", RuntimeWarning, stacklevel=3)
        return None


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
    keep: dict | None = None,
    skip_unchanged: bool = True,
    compiled: bool = False,
) -> KernelSums:
    """Stability terms of the step ``before`` → ``after`` and minimizer terms at ``after``.

    ``before``/``after``: log p̃ = (log p_0, …, log p_K) at ω^t and ω^{t+1}, [K+1, N, V]
    (float32; other dtypes are converted per block). ``labels``: [N] token ids. ε_g smooths
    p_y in g_k (> 0), ε_m in m_k. Requires ``supported(alpha, eps_g)``. All K chunks of a
    block of positions are processed together ([K, b, V] arrays). ``keep`` (a dict the caller
    holds between steps): the features of ``after`` (p, g's numerator, …) are kept there, up
    to ``KEEP_BYTES``, and reused when the next call's ``before`` is the same tensor.
    Leading readout rows equal bit for bit in ``before`` and ``after`` (p_0: the frozen
    embedding readout, or uniform) have Δp = 0, so their chunks' φ, actual change and q are
    exact zeros and are not computed (``skip_unchanged=False`` computes them anyway).

    ``compiled``: a step with ``before`` and minimizers runs each block through
    ``torch.compile`` of ``_one_pass`` (inductor fuses its elementwise work into a few loops;
    nothing is kept between steps), in blocks of one size so that it compiles once per shape.
    Measured on the embedded model (N = 256, V = 4096, 1 thread): 98 → 28 ms per step in
    isolation, 79 → 32 ms inside the probed loop (compiling ``_block`` itself took 40 and
    46 ms). Its sums differ from the eager ones by float32 rounding and agree with the
    float64 reference within the same 1e-6 (tested).
    """
    if not supported(alpha, eps_g):
        raise ValueError(f"the fast kernels need 0 <= alpha < 1 and eps_g > 0, got {alpha}, {eps_g}")
    rows, n, vocab = after.shape
    if before is not None and before.shape != after.shape:
        raise ValueError(f"before {tuple(before.shape)} and after {tuple(after.shape)} differ")
    c = _Consts.make(vocab, float(alpha), float(eps_g), float(eps_m))
    acc: dict[str, torch.Tensor] = {}
    labels = labels.to(after.device).long()
    still = 0  # leading upstream rows that did not change
    while skip_unchanged and before is not None and still < rows - 1 and torch.equal(before[still], after[still]):
        still += 1
    fused = compiled and before is not None and minimizers
    same = not fused and keep is not None and before is not None and keep.get("of") is before and keep.get("consts") == c
    reuse = keep["features"] if same else None  # type: ignore[index]
    kept: list[tuple[dict, dict]] = []
    size = after.numel() * 4  # p and U (all rows), L_{k-1} − L_k, and o − g when it fits
    kept_up = (*_KEPT_UP, *_KEPT_EXTRA) if 4 * size <= KEEP_BYTES else _KEPT_UP if 3 * size <= KEEP_BYTES else None
    keep_now = not fused and keep is not None and kept_up is not None
    for i, sl in enumerate(_blocks(n, vocab, rows, block_elems, equal=fused)):
        idx = labels[sl].unsqueeze(-1)
        out = None
        if fused:
            out = _run_compiled(before[:, sl].float(), after[:, sl].float(), idx, c, still)  # type: ignore[index]
        if out is None:
            full, upper = reuse[i] if reuse is not None else ({}, {})
            out, new, new_up = _block(
                None if before is None else before[:, sl], after[:, sl], idx, c, still, minimizers, full, upper
            )
            if keep_now:
                kept.append((new._cache, {k: v for k, v in new_up._cache.items() if k in (kept_up or ())}))
        for name, value in out.items():
            acc[name] = acc.get(name, 0.0) + value.sum(-1)
    if keep is not None:
        keep.clear()
        if keep_now:
            keep.update(of=after, consts=c, features=kept)
    return KernelSums({name: value / n for name, value in acc.items()})


_CACHE_KEY, _KEEP_KEY = "kernel_sums", "kernel_features"


def cached_sums(
    cache: dict,
    step: int,
    before: torch.Tensor | None,
    after: torch.Tensor,
    labels: torch.Tensor,
    alpha: float,
    eps_g: float,
    eps_m: float,
    *,
    compiled: bool = False,
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
            before if need_stability else None, after, labels, alpha, eps_g, eps_m,
            minimizers=need_minimizers, keep=cache.setdefault(_KEEP_KEY, {}), compiled=compiled,
        )
        have = KernelSums({**have.values, **fresh.values})
        cache[_CACHE_KEY] = (key, have)
    return have
