"""The kernels' blocks (``probes.kernels``): readout rows with lazily built features, kept from one
step for the next; ``_block`` computes the sums of one block of positions. Plain torch
operations, the same on every device (no ``torch.compile``: ``benchmarks/kernel_choice.py``).
"""

from __future__ import annotations

import math

import torch

from probes.kernels_base import F64, STABILITY, _at, _Consts, _dot, _expm1_pair, _sum

__all__ = ["_Rows", "_block", "_blocks"]


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


def _blocks(n: int, vocab: int, rows: int, block_elems: int) -> list[slice]:
    """Slices of positions of about ``block_elems`` coordinates (the last one shorter)."""
    size = max(1, block_elems // max(1, vocab * rows))
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

    ``full``/``upper``: features of ``before`` kept from the previous step.
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

