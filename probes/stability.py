"""Probe ``stability``: Assumption 5's stability ratio, online (docs/MATH.md, "Assumption 5").

Record t (the update ω^t → ω^{t+1}) holds, on the probe batch, for both objectives

* ``paper``: R(ω^t; p̃) = (1/N) Σ_n Σ_k KL(p_k ‖ g_k(p_{k-1})), g_k built from p_y^ε with
  ε = ``method.epsilon`` when > 0, else this probe's ``epsilon`` (default 0.1). With ε = 0
  (one-hot p_y) R is +inf: ``paper/defined`` is false with a ``reason``, values are "inf";
* ``implemented``: R̄(ω^t; p̃) = (1/N) Σ_n Σ_k KL(m_k(p_{k-1}) ‖ p_k), m_k built from the
  trained target p_y^{method.epsilon}; computed whichever direction is trained,

per chunk k and in total: φ_t, q_t = (1/N) Σ_n ‖Δp̃_t(n)‖², ρ_t = max(φ_t, 0)/q_t, the actual change
R(ω^t; p̃^{t+1}) − R(ω^t; p̃^t) and the remainder (actual − φ_t). p̃^t is rows 0..K-1 of the
readouts at ω^t (kept from the previous ``after_step``, or computed by ``on_start``),
p̃^{t+1} rows 0..K-1 at ω^{t+1}, and the chunk outputs p_k(ω^t) rows 1..K at ω^t, held
fixed. α comes from ``method.alpha``. The formulas are ``zerolock_theory.theory.stability``'s;
they are evaluated by the fused float32 kernels of ``probes.kernels`` (tested against that
float64 reference), which also compute the minimizer terms in the same pass; α = 1 and a
one-hot p_y in the paper's R (ε = 0) use the reference itself.

Undefined values are null, never NaN: ρ = 0/0 (Δp_{k-1} = 0, e.g. chunk 1 with the frozen
embedding readout p_0). Resumable without state: ``on_start`` recomputes p̃ at the start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from probes.base import Probe
from probes.kernels import KernelSums, cached_sums, supported
from probes.minimizers import kernel_minimizer_metrics
from probes.readout_pass import (
    DEFAULT_N_POSITIONS,
    objective_smoothing,
    objective_targets,
    probe_batch,
    readouts,
)
from probes.registry import register
from zerolock_theory.config import one_alpha
from zerolock_theory.records import STABILITY, STABILITY_FIELDS, STABILITY_FLAG
from zerolock_theory.theory import stability as reference
from zerolock_theory.theory.stability import StabilityTerms, as_metric, stability_terms
from zerolock_theory.training.hooks import HookContext

__all__ = ["FIELDS", "OBJECTIVES", "StabilityProbe", "kernel_metrics", "stability_metrics"]

FIELDS = STABILITY_FIELDS
OBJECTIVES = ("paper", "implemented")


def stability_metrics(terms: StabilityTerms, objective: str) -> dict[str, Any]:
    """``probe/stability/{objective}/{k|total}/{field}`` plus ``defined`` (and ``reason``)."""
    out: dict[str, Any] = {}
    for name in (*FIELDS, "phi_autograd"):
        values = getattr(terms, name)
        if values is None:
            continue
        for k in range(terms.num_chunks):
            out[STABILITY.key(objective, k + 1, name)] = as_metric(values[k])
        out[STABILITY.key(objective, "total", name)] = as_metric(getattr(terms, f"{name}_total"))
    out[STABILITY_FLAG.key(objective, "defined")] = terms.defined
    if not terms.defined:
        out[STABILITY_FLAG.key(objective, "reason")] = terms.reason
    return out


def kernel_terms(sums: KernelSums, alpha: float, objective: str) -> StabilityTerms:
    """``StabilityTerms`` of one objective from the kernels' per-chunk sums (same assembly as the reference)."""
    pre = "paper" if objective == "paper" else "impl"
    r_before, actual = sums[f"{pre}_r"], sums[f"{pre}_actual"]
    q = sums["dp_sq"]
    rows = {"r_before": r_before, "r_after": r_before + actual, "phi": sums[f"{pre}_phi"], "auto": None, "q": q, "dp": q}
    return reference._assemble(rows, float(alpha), objective)  # noqa: SLF001 (one assembly rule)


def kernel_metrics(sums: KernelSums, alpha: float, *, stability: bool, direction: str | None) -> dict[str, Any]:
    """The logged keys from the kernels' per-chunk sums (``probes.kernels.cached_sums``), in one
    place for the online probes, ``ProbeSession`` and the offline recomputation: the stability
    keys of both objectives (``stability``: the sums hold a step t → t+1), then the minimizer
    keys at the ``after`` readouts of training direction ``direction`` (None: none)."""
    out: dict[str, Any] = {}
    if stability:
        for objective in OBJECTIVES:
            out.update(stability_metrics(kernel_terms(sums, alpha, objective), objective))
    if direction is not None:
        out.update(kernel_minimizer_metrics(sums, direction))
    return out


@register("stability")
@dataclass
class StabilityProbe(Probe):
    """φ_t, q_t, ρ_t, actual change and remainder for R (paper) and R̄ (implemented)."""

    name: ClassVar[str] = "stability"
    every: int = 1
    epsilon: float = 0.1  # ε of p_y in the paper's R (g_k) when method.epsilon = 0
    check_autograd: bool = False  # also log φ by autograd (``.../phi_autograd``)
    n_positions: int = DEFAULT_N_POSITIONS
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError(f"stability.every must be >= 1, got {self.every}")
        if not 0.0 <= self.epsilon < 1.0:
            raise ValueError(f"stability.epsilon must lie in [0, 1), got {self.epsilon}")
        self.previous: torch.Tensor | None = None  # log p̃ at ω^t (float32) when step t is due
        self.targets: dict[str, torch.Tensor] = {}

    def _log_probs(self, ctx: HookContext, t: int) -> torch.Tensor:
        """log p̃ at ω^t, float32 [K+1, N, V] (the shared readouts; kept by reference, not copied)."""
        return readouts(ctx, t, self.n_positions, self.seed)

    def _targets(self, ctx: HookContext, vocab: int) -> dict[str, torch.Tensor]:
        """p_y per objective, [N, V] float64."""
        if not self.targets:
            labels = probe_batch(ctx, self.n_positions, self.seed).targets
            self.targets = objective_targets(labels, vocab, ctx.config.method.epsilon, self.epsilon)
        return self.targets

    def on_start(self, ctx: HookContext) -> None:
        """Keep p̃ at the start step (recomputed on resume)."""
        start = ctx.start_step
        self.previous = self._log_probs(ctx, start) if start % self.every == 0 else None

    def after_step(self, ctx: HookContext, step: int, metrics: dict[str, Any]) -> dict[str, Any]:
        """The terms of step t from p̃^t (kept) and p̃^{t+1} (now)."""
        out: dict[str, Any] = {}
        due_now, due_next = step % self.every == 0, (step + 1) % self.every == 0
        current = self._log_probs(ctx, step + 1) if due_now or due_next else None
        if due_now and self.previous is not None and current is not None:
            out = self.terms(ctx, self.previous, current, step)
        self.previous = current if due_next else None
        return out

    def terms(self, ctx: HookContext, before: torch.Tensor, after: torch.Tensor, step: int = -1) -> dict[str, Any]:
        """Metrics of one step from log p̃ at ω^t (``before``) and ω^{t+1} (``after``): [K+1, N, V]."""
        method = ctx.config.method
        alpha = one_alpha(method, "the stability probe")
        eps = objective_smoothing(method.epsilon, self.epsilon)
        out: dict[str, Any] = {}
        if self.check_autograd or not supported(alpha, eps["paper"]):
            for objective, p_y in self._targets(ctx, before.shape[-1]).items():
                terms = stability_terms(
                    before[:-1], after[:-1], before[1:], p_y.log(), alpha, objective,  # type: ignore[arg-type]
                    log_input=True, check_autograd=self.check_autograd,
                )
                out.update(stability_metrics(terms, objective))
            return out
        labels = probe_batch(ctx, self.n_positions, self.seed).targets
        sums = cached_sums(ctx.cache, step, before, after, labels, alpha, eps["paper"], eps["implemented"])
        return kernel_metrics(sums, alpha, stability=True, direction=None)


    def on_end(self, ctx: HookContext) -> None:
        """Drop the kept readouts."""
        self.previous = None
