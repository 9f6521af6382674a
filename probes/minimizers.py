"""Probe ``minimizers``: which target does each chunk track? (MATH.md, "Proposition 1 and depth").

After step t (at ω^{t+1}), on the probe batch, per chunk k = 1..K, averaged over the N
positions:

* ``kl_p_g`` = KL(p_k ‖ g_k), ``tv_g`` = TV(p_k, g_k), g_k = p_y^α p_{k-1}^{1-α} / Z_k with
  p_y label-smoothed by ε = ``method.epsilon`` when > 0, else this probe's ``epsilon``
  (default 0.1: with a one-hot p_y, g_k = e_y for every α > 0 and KL(p_k ‖ e_y) = +inf);
* ``kl_m_p`` = KL(m_k ‖ p_k), ``tv_m`` = TV(p_k, m_k), m_k = α·p_y + (1-α)·p_{k-1} with the
  trained target p_y^{method.epsilon};
* ``gap`` = δ_k of the trained direction: ``kl_p_g`` (reverse) or ``kl_m_p`` (forward);
  for the backprop baseline, that of ``method.direction`` (a diagnostic, not its loss);
* ``ce`` = CE(e_y, p_k).

Units: nats (KL, CE), TV in [0, 1]. α comes from ``method.alpha``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from probes.batch import DEFAULT_N_POSITIONS, label_targets, probe_batch, readouts, smoothing_for_g
from probes.protocol import ProbeContext
from probes.registry import register
from zerolock_theory.divergences import kl, total_variation
from zerolock_theory.targets import arithmetic_target, geometric_target

__all__ = ["MinimizerProbe", "minimizer_metrics"]

PREFIX = "probe/minimizer"


def minimizer_metrics(
    log_p: torch.Tensor,
    targets: torch.Tensor,
    y_g: torch.Tensor,
    y_m: torch.Tensor,
    alpha: float,
    direction: str,
) -> dict[str, float]:
    """The keys of the module docstring from log p̃ [K+1, N, V], labels [N] and p_y for g and m ([N, V])."""
    out: dict[str, float] = {}
    for k in range(1, log_p.shape[0]):
        prev = log_p[k - 1].double().exp()
        log_pk = log_p[k].double()
        p_k = log_pk.exp()
        log_g, _ = geometric_target(y_g, prev, alpha)
        m = arithmetic_target(y_m, prev, alpha)
        values = {
            "kl_p_g": kl(log_pk, log_g, log_input=True),
            "kl_m_p": kl(m, p_k),
            "tv_g": total_variation(p_k, log_g.exp()),
            "tv_m": total_variation(p_k, m),
            "ce": -log_pk.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1),
        }
        for name, value in values.items():
            out[f"{PREFIX}/{k}/{name}"] = float(value.mean())
        out[f"{PREFIX}/{k}/gap"] = out[f"{PREFIX}/{k}/{'kl_p_g' if direction == 'reverse' else 'kl_m_p'}"]
    return out


@register("minimizers")
@dataclass
class MinimizerProbe:
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
        self.y: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    def on_start(self, ctx: ProbeContext) -> None:
        """Fix the probe batch."""
        probe_batch(ctx, self.n_positions, self.seed)

    def after_step(self, ctx: ProbeContext, step: int, metrics: dict[str, Any]) -> dict[str, Any]:
        """Metrics at ω^{t+1} every ``every`` steps."""
        if step % self.every:
            return {}
        method = ctx.config.method
        log_p = readouts(ctx, step + 1, self.n_positions, self.seed)
        if self.y is None:
            labels = probe_batch(ctx, self.n_positions, self.seed).targets
            vocab = log_p.shape[-1]
            eps_g = smoothing_for_g(method.epsilon, self.epsilon)
            self.y = (labels, label_targets(labels, vocab, eps_g), label_targets(labels, vocab, method.epsilon))
        labels, y_g, y_m = self.y
        with torch.no_grad():
            return minimizer_metrics(log_p, labels, y_g, y_m, method.alpha, method.direction)

    def on_checkpoint(self, ctx: ProbeContext, step: int) -> dict[str, Any]:
        """Stateless."""
        return {}

    def on_end(self, ctx: ProbeContext) -> None:
        """Nothing to release."""
        self.y = None
