"""Probe ``scaling``: Assumption 5 by step scaling (docs/MATH.md, "Assumption 5", step scaling).

At every ``every``-th step t the probe keeps ω^t (``before_step``), and after the update
takes the actual step Δω_t = ω^{t+1} − ω^t of every trainable parameter (all chunks). For
each factor c in ``factors`` (default 1, 1/2, …, 1/64) it loads ω^t + c·Δω_t, computes the
readouts p̃(c) on the probe batch and, with the chunk outputs p_k(ω^t) held fixed, the
totals over chunks of

* φ(c) = ⟨∇_p̃ R(ω^t; p̃^t), p̃(c) − p̃^t⟩ and q(c) = (1/N) Σ_n ‖p̃(c)(n) − p̃^t(n)‖²,
* ρ(c) = max(φ(c), 0)/q(c),

for both objectives: ``paper`` (R, g_k from p_y^ε with ε = ``method.epsilon`` when > 0,
else this probe's ``epsilon``) and ``implemented`` (R̄, m_k from the trained p_y^{method.epsilon}).
The formulas are ``zerolock_theory.theory.stability``'s. c = 1 uses the exact ω^{t+1}.

First order means φ(c) ≈ c·φ′ and q(c) ≈ c²·q″, so the probe also logs the estimates at the
smallest factor c_min: ``phi_prime`` = φ(c_min)/c_min and ``q_second`` = q(c_min)/c_min².

Keys (``zerolock_theory.metric_keys``): ``probe/scaling/{obj}/c={c}/{phi,q,ratio}``,
``probe/scaling/{obj}/{phi_prime,q_second,defined}``. Undefined values are null.

Cost per probed step: ``len(factors) − 1`` extra forward passes of the probe batch through
the model (c = 1 reuses the readouts at ω^{t+1}), and 2·len(factors) evaluations of the
stability terms on [K, N, V] arrays; nothing at the other steps. Parameters are restored
by copying the saved ω^{t+1} back, so training is bitwise unaffected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from probes.batch import (
    DEFAULT_N_POSITIONS,
    label_targets,
    probe_batch,
    readouts,
    readouts_now,
    smoothing_for_g,
)
from probes.registry import register
from zerolock_theory.metric_keys import scaling_key, scaling_step_key
from zerolock_theory.theory.stability import as_metric, stability_terms
from zerolock_theory.training.hooks import HookContext

__all__ = ["DEFAULT_FACTORS", "ScalingProbe"]

DEFAULT_FACTORS: tuple[float, ...] = tuple(2.0**-i for i in range(7))


def _trainable(ctx: HookContext) -> list[torch.Tensor]:
    return [p for p in ctx.chunked.model.parameters() if p.requires_grad]


@register("scaling")
@dataclass
class ScalingProbe:
    """φ(c), q(c), ρ(c) at ω^t + c·Δω_t for both objectives, every ``every`` steps."""

    name: ClassVar[str] = "scaling"
    every: int = 10
    factors: tuple[float, ...] = field(default=DEFAULT_FACTORS)
    epsilon: float = 0.1  # ε of p_y in the paper's R (g_k) when method.epsilon = 0
    n_positions: int = DEFAULT_N_POSITIONS
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError(f"scaling.every must be >= 1, got {self.every}")
        if not 0.0 <= self.epsilon < 1.0:
            raise ValueError(f"scaling.epsilon must lie in [0, 1), got {self.epsilon}")
        factors = tuple(float(c) for c in self.factors)
        if len(factors) < 2 or any(not 0.0 < c <= 1.0 for c in factors) or len(set(factors)) != len(factors):
            raise ValueError(f"scaling.factors must be >= 2 distinct values in (0, 1], got {list(self.factors)}")
        self.factors = tuple(sorted(factors, reverse=True))
        self.saved: list[torch.Tensor] | None = None  # ω^t when step t is due
        self.before: torch.Tensor | None = None  # p̃ at ω^t, float64 [K+1, N, V]
        self.targets: dict[str, torch.Tensor] = {}

    def on_start(self, ctx: HookContext) -> None:
        """Nothing kept across steps."""
        self.saved = self.before = None

    def before_step(self, ctx: HookContext, step: int) -> None:
        """Keep ω^t and p̃^t when step t is due."""
        if step % self.every:
            self.saved = self.before = None
            return
        self.saved = [p.detach().clone() for p in _trainable(ctx)]
        self.before = readouts(ctx, step, self.n_positions, self.seed).double().exp()

    def after_step(self, ctx: HookContext, step: int, metrics: dict[str, Any]) -> dict[str, Any]:
        """The scaled terms of step t, then ω^{t+1} restored exactly."""
        if self.saved is None or self.before is None:
            return {}
        start, before = self.saved, self.before
        self.saved = self.before = None
        params = _trainable(ctx)
        final = [p.detach().clone() for p in params]
        scaled: dict[float, torch.Tensor] = {}
        try:
            for c in self.factors:
                if c == 1.0:
                    scaled[c] = readouts(ctx, step + 1, self.n_positions, self.seed).double().exp()
                    continue
                with torch.no_grad():
                    for p, w0, w1 in zip(params, start, final, strict=True):
                        p.copy_(w0 + c * (w1 - w0))
                scaled[c] = readouts_now(ctx, self.n_positions, self.seed).double().exp()
        finally:
            with torch.no_grad():
                for p, w1 in zip(params, final, strict=True):
                    p.copy_(w1)
        return self._metrics(ctx, before, scaled)

    def _targets(self, ctx: HookContext, vocab: int) -> dict[str, torch.Tensor]:
        """p_y per objective, [N, V] float64."""
        if not self.targets:
            method = ctx.config.method
            labels = probe_batch(ctx, self.n_positions, self.seed).targets
            eps = {"paper": smoothing_for_g(method.epsilon, self.epsilon), "implemented": method.epsilon}
            self.targets = {obj: label_targets(labels, vocab, e) for obj, e in eps.items()}
        return self.targets

    def _metrics(self, ctx: HookContext, before: torch.Tensor, scaled: dict[float, torch.Tensor]) -> dict[str, Any]:
        alpha = ctx.config.method.alpha
        out: dict[str, Any] = {}
        c_min = self.factors[-1]
        for objective, p_y in self._targets(ctx, before.shape[-1]).items():
            defined = True
            for c, after in scaled.items():
                terms = stability_terms(before[:-1], after[:-1], before[1:], p_y, alpha, objective)  # type: ignore[arg-type]
                defined &= bool(torch.isfinite(terms.phi_total))
                out[scaling_key(objective, c, "phi")] = as_metric(terms.phi_total)
                out[scaling_key(objective, c, "q")] = as_metric(terms.q_total)
                out[scaling_key(objective, c, "ratio")] = as_metric(terms.ratio_total)
            phi_min, q_min = out[scaling_key(objective, c_min, "phi")], out[scaling_key(objective, c_min, "q")]
            out[scaling_step_key(objective, "phi_prime")] = None if phi_min is None else phi_min / c_min
            out[scaling_step_key(objective, "q_second")] = None if q_min is None else q_min / c_min**2
            out[scaling_step_key(objective, "defined")] = defined
        return out

    def on_checkpoint(self, ctx: HookContext, step: int) -> dict[str, Any]:
        """Nothing to save: ω^t is taken again before the next due step."""
        return {}

    def on_end(self, ctx: HookContext) -> None:
        """Drop the kept parameters and readouts."""
        self.saved = self.before = None
