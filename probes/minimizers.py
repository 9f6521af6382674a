"""Probe ``minimizers``: which target does each chunk track? (docs/MATH.md, "Proposition 1 and depth").

After step t (at ω^{t+1}), on the probe batch, per chunk k = 1..K, averaged over the N
positions:

* ``kl_p_g`` = KL(p_k ‖ g_k), ``tv_g`` = TV(p_k, g_k), g_k = p_y^α p_{k-1}^{1-α} / Z_k with
  p_y label-smoothed by ε = ``method.epsilon`` when > 0, else this probe's ``epsilon``
  (default 0.1: with a one-hot p_y, g_k = e_y for every α > 0 and KL(p_k ‖ e_y) = +inf);
* ``kl_m_p`` = KL(m_k ‖ p_k), ``tv_m`` = TV(p_k, m_k), m_k = α·p_y + (1-α)·p_{k-1} with the
  trained target p_y^{method.epsilon};
* ``gap`` = δ_k of the trained direction: ``kl_p_g`` (reverse) or ``kl_m_p`` (forward);
  for the backprop baseline, that of ``method.direction`` (a diagnostic, not its loss);
* ``ce`` = CE(e_y, p_k), also for k = 0 (the readout p_0: Proposition 1's CE_0).

A run that starts at step 0 also logs, in the record of step 0, ``ce`` (k = 0..K) and
``gap`` (k = 1..K) at the untrained ω^0 under ``probe/minimizer/initial/{k}/{ce,gap}``
(Proposition 1's step-0 baseline), computed by ``minimizer_metrics`` in ``on_start``.

Units: nats (KL, CE), TV in [0, 1]. α comes from ``method.alpha``. ``minimizer_metrics`` is
the float64 reference; the probe evaluates the same quantities with the fused kernels of
``probes.kernels`` (shared with the stability probe at the same step; α = 1 uses the reference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from probes.base import Probe
from probes.kernels import MINIMIZER, KernelSums, cached_sums, supported
from probes.readout_pass import DEFAULT_N_POSITIONS, probe_batch, readouts, smoothing_for_g
from probes.registry import register
from zerolock_theory import records
from zerolock_theory.config import one_alpha
from zerolock_theory.records import MINIMIZER_INITIAL
from zerolock_theory.training.hooks import HookContext

__all__ = ["MinimizerProbe", "minimizer_metrics"]

_key = records.MINIMIZER.key


def gap_field(direction: str) -> str:
    """The local gap δ_k's distance: KL(p_k ‖ g_k) for reverse training, KL(m_k ‖ p_k) for forward."""
    return "kl_p_g" if direction == "reverse" else "kl_m_p"


def _label_values(vocab: int, epsilon: float) -> tuple[float, float]:
    """(off-label, on-label) values of p_y^ε = (1-ε)·e_y + ε/V."""
    return epsilon / vocab, 1.0 - epsilon + epsilon / vocab


def minimizer_metrics(
    log_p: torch.Tensor, targets: torch.Tensor, eps_g: float, eps_m: float, alpha: float, direction: str
) -> dict[str, float]:
    """The keys of the module docstring from log p̃ [K+1, N, V] and labels [N], in float64.

    p_y^ε takes two values (on and off the label), so g_k and m_k are built in one pass
    each: log g_k = α·log p_y^ε + (1-α)·log p_{k-1} − log Z_k and
    m_k = (1-α)·p_{k-1} + α·p_y^ε. ``eps_g`` > 0 smooths p_y in g_k, ``eps_m`` in m_k.
    """
    if eps_g <= 0.0:
        raise ValueError("g_k needs a label-smoothed p_y (eps_g > 0)")
    vocab = log_p.shape[-1]
    idx = targets.long().unsqueeze(-1)
    off_g, on_g = _label_values(vocab, eps_g)
    off_m, on_m = _label_values(vocab, eps_m)
    out: dict[str, float] = {}
    log_prev = log_p[0].double()
    prev = log_prev.exp()
    out[_key(0, "ce")] = float(-log_prev.gather(-1, idx).squeeze(-1).mean())  # CE_0 for Proposition 1
    for k in range(1, log_p.shape[0]):
        log_pk = log_p[k].double()
        p_k = log_pk.exp()
        log_g = (1.0 - alpha) * log_prev + alpha * math.log(off_g)
        log_g.scatter_add_(-1, idx, torch.full_like(idx, alpha * math.log(on_g / off_g), dtype=log_g.dtype))
        log_g -= torch.logsumexp(log_g, dim=-1, keepdim=True)
        g = log_g.exp()
        m = (1.0 - alpha) * prev + alpha * off_m
        m.scatter_add_(-1, idx, torch.full_like(idx, alpha * (on_m - off_m), dtype=m.dtype))
        log_m = torch.where(m > 0, m, torch.ones_like(m)).log()
        values = {
            "kl_p_g": (p_k * (log_pk - log_g)).sum(-1).clamp_min(0.0),
            "kl_m_p": (m * (log_m - log_pk)).sum(-1).clamp_min(0.0),
            "tv_g": 0.5 * (p_k - g).abs().sum(-1),
            "tv_m": 0.5 * (p_k - m).abs().sum(-1),
            "ce": -log_pk.gather(-1, idx).squeeze(-1),
        }
        for name, value in values.items():
            out[_key(k, name)] = float(value.mean())
        out[_key(k, "gap")] = out[_key(k, gap_field(direction))]
        log_prev, prev = log_pk, p_k
    return out


def kernel_minimizer_metrics(sums: KernelSums, direction: str) -> dict[str, float]:
    """The keys of ``minimizer_metrics`` from the kernels' per-chunk means."""
    out: dict[str, float] = {_key(0, "ce"): float(sums["ce_0"][0])}
    for k in range(1, sums["ce"].shape[0] + 1):
        for name in MINIMIZER:
            out[_key(k, name)] = float(sums[name][k - 1])
        out[_key(k, "gap")] = out[_key(k, gap_field(direction))]
    return out


@register("minimizers")
@dataclass
class MinimizerProbe(Probe):
    """KL and TV of each chunk's readout to g_k and m_k, its local gap and CE."""

    name: ClassVar[str] = "minimizers"
    every: int = 1
    epsilon: float = 0.1  # ε of p_y in g_k when method.epsilon = 0
    n_positions: int = DEFAULT_N_POSITIONS
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError(f"minimizers.every must be >= 1, got {self.every}")
        if not 0.0 < self.epsilon < 1.0:
            raise ValueError(f"minimizers.epsilon must lie in (0, 1), got {self.epsilon}")
        self.initial: dict[str, float] = {}  # CE_k and δ_k at ω^0, logged with step 0

    def on_start(self, ctx: HookContext) -> None:
        """Fix the probe batch; at step 0, CE_k and δ_k at the untrained ω^0 (module docstring)."""
        labels = probe_batch(ctx, self.n_positions, self.seed).targets
        self.initial = {}
        if ctx.start_step == 0:
            method = ctx.config.method
            log_p = readouts(ctx, 0, self.n_positions, self.seed)
            with torch.no_grad():
                found = minimizer_metrics(log_p, labels, smoothing_for_g(method.epsilon, self.epsilon),
                                          method.epsilon, one_alpha(method, "the minimizers probe"), method.direction)
            chunks = log_p.shape[0] - 1
            self.initial = {MINIMIZER_INITIAL.key(k, "ce"): found[_key(k, "ce")] for k in range(chunks + 1)}
            self.initial.update({MINIMIZER_INITIAL.key(k, "gap"): found[_key(k, "gap")]
                                 for k in range(1, chunks + 1)})

    def after_step(self, ctx: HookContext, step: int, metrics: dict[str, Any]) -> dict[str, Any]:
        """Metrics at ω^{t+1} every ``every`` steps."""
        initial, self.initial = self.initial, {}
        if step % self.every:
            return initial
        method = ctx.config.method
        log_p = readouts(ctx, step + 1, self.n_positions, self.seed)
        labels = probe_batch(ctx, self.n_positions, self.seed).targets
        eps_g, alpha = smoothing_for_g(method.epsilon, self.epsilon), one_alpha(method, "the minimizers probe")
        if not supported(alpha, eps_g):
            with torch.no_grad():
                return initial | minimizer_metrics(log_p, labels, eps_g, method.epsilon, alpha, method.direction)
        sums = cached_sums(ctx.cache, step, None, log_p, labels, alpha, eps_g, method.epsilon)
        return initial | kernel_minimizer_metrics(sums, method.direction)


