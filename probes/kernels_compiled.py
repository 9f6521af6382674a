"""The compiled kernels (``probes.kernels``): ``_one_pass`` through ``torch.compile``, and when
to use it (``use_compiled``).
"""

from __future__ import annotations

import math
import warnings

import torch

from probes.kernels_base import F64, MINIMIZER, STABILITY, _at, _Consts, _dot, _expm1_pair, _sum
from zerolock_theory.probe_config import COMPILE_MODES

__all__ = ["AUTO_MIN_STEPS", "use_compiled"]


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

