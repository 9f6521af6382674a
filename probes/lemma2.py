"""Probe ``lemma2``: the two targets and the readouts, exactly (docs/MATH.md, "Lemma 2 on the implemented loss").

On the probe batch, over the FULL vocabulary (never the top-k store), per chunk k = 1..K,
means over the N positions, with ONE ε for both targets (``method.epsilon`` when > 0, else
this probe's ``epsilon``, default 0.1) and α = ``method.alpha``
(``zerolock_theory.theory.lemma2.readout_distances``):

* ``probe/lemma2/{k}/tv_m_g`` = TV(m_k, g_k): how far apart the forward loss's minimizer
  m_k = α·p_y^ε + (1-α)·p_{k-1} and Lemma 2's g_k ∝ (p_y^ε)^α·p_{k-1}^{1-α} are;
* ``.../tv_m`` = TV(p_k, m_k), ``.../tv_g`` = TV(p_k, g_k), ``.../entropy`` = H(p_k) (nats);

at ω^{t+1} every ``every`` steps and at the last step; the same four with the suffix
``_initial`` at ω^0 (the untrained model), in the first record of a run that starts at
step 0. With ``null = true`` the last record also holds the entropy-matched null of the
descriptive tracking statistic: ``null_temperature`` τ_k, the temperature at which the
untrained p_k^0 has the mean entropy of the trained p_k, and ``null_tv_m`` / ``null_tv_g``,
the distances of the tempered untrained readouts to the targets built from the tempered
untrained p_{k-1} (row 0, p_0, is frozen and stays at τ = 1). A resumed run has no
untrained readouts in memory and writes no null. The probe keeps log p̃^0 (float32,
(K+1)·N·V) for the null.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from probes.base import Probe
from probes.readout_pass import DEFAULT_N_POSITIONS, probe_batch, readouts, smoothing_for_g
from probes.registry import register
from zerolock_theory.config import one_alpha
from zerolock_theory.records import INITIAL, LEMMA2, LEMMA2_STEP
from zerolock_theory.theory.lemma2 import entropy_matching_temperature, readout_distances, temper
from zerolock_theory.training.hooks import HookContext

__all__ = ["Lemma2Probe", "lemma2_metrics", "null_metrics"]

NULL_TOLERANCE = 1e-6
"""Bisection tolerance of the null's temperature (in log τ)."""


def lemma2_metrics(log_p: torch.Tensor, labels: torch.Tensor, alpha: float, epsilon: float,
                   suffix: str = "") -> dict[str, float]:
    """The four keys per chunk from log p̃ [K+1, N, V] and labels [N] (module docstring)."""
    out: dict[str, float] = {}
    for k in range(1, log_p.shape[0]):
        values = readout_distances(log_p[k - 1], log_p[k], labels, alpha, epsilon)
        for name, value in values.items():
            out[LEMMA2.key(k, name + suffix)] = float(value.mean())
    return out


def null_metrics(untrained: torch.Tensor, trained: torch.Tensor, labels: torch.Tensor, alpha: float,
                 epsilon: float) -> dict[str, float]:
    """The entropy-matched null at the last step (module docstring), from log p̃^0 and log p̃^T."""
    out: dict[str, float] = {}
    tempered = [untrained[0].double()]
    for k in range(1, untrained.shape[0]):
        target = float(readout_distances(trained[k - 1], trained[k], labels, alpha, epsilon)["entropy"].mean())
        tau = entropy_matching_temperature(untrained[k], target, tol=NULL_TOLERANCE)
        tempered.append(temper(untrained[k], tau))
        values = readout_distances(tempered[k - 1], tempered[k], labels, alpha, epsilon)
        out[LEMMA2.key(k, "null_temperature")] = tau
        out[LEMMA2.key(k, "null_tv_m")] = float(values["tv_m"].mean())
        out[LEMMA2.key(k, "null_tv_g")] = float(values["tv_g"].mean())
    return out


@register("lemma2")
@dataclass
class Lemma2Probe(Probe):
    """TV(m_k, g_k), TV(p_k, m_k), TV(p_k, g_k) and H(p_k) over the full vocabulary, and the null."""

    name: ClassVar[str] = "lemma2"
    every: int = 1
    epsilon: float = 0.1  # ε of p_y in both targets when method.epsilon = 0
    null: bool = True  # keep log p̃^0 and write the entropy-matched null at the last step
    n_positions: int = DEFAULT_N_POSITIONS
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError(f"lemma2.every must be >= 1, got {self.every}")
        if not 0.0 < self.epsilon < 1.0:
            raise ValueError(f"lemma2.epsilon must lie in (0, 1), got {self.epsilon}")
        self.pending: dict[str, float] = {}
        self.untrained: torch.Tensor | None = None

    def _settings(self, ctx: HookContext) -> tuple[torch.Tensor, float, float]:
        method = ctx.config.method
        labels = probe_batch(ctx, self.n_positions, self.seed).targets
        return labels, one_alpha(method, "the lemma2 probe"), smoothing_for_g(method.epsilon, self.epsilon)

    def on_start(self, ctx: HookContext) -> None:
        """At ω^0 of a fresh run: the ``_initial`` keys (written with the first record), log p̃^0 kept."""
        self.pending, self.untrained = {}, None
        if ctx.start_step != 0:
            return
        labels, alpha, eps = self._settings(ctx)
        log_p = readouts(ctx, 0, self.n_positions, self.seed)
        with torch.no_grad():
            self.pending = {LEMMA2_STEP.key("epsilon"): eps, **lemma2_metrics(log_p, labels, alpha, eps, INITIAL)}
        if self.null:
            self.untrained = log_p.detach().clone()

    def after_step(self, ctx: HookContext, step: int, metrics: dict[str, Any]) -> dict[str, Any]:
        """The keys at ω^{t+1} every ``every`` steps and at the last step; the null at the last step."""
        out, self.pending = self.pending, {}
        last = step + 1 == ctx.config.run.steps
        if step % self.every and not last:
            return out
        labels, alpha, eps = self._settings(ctx)
        log_p = readouts(ctx, step + 1, self.n_positions, self.seed)
        with torch.no_grad():
            out.update(lemma2_metrics(log_p, labels, alpha, eps))
            if last and self.untrained is not None:
                out.update(null_metrics(self.untrained, log_p, labels, alpha, eps))
        return out


    def on_end(self, ctx: HookContext) -> None:
        """Release log p̃^0."""
        self.untrained = None
