"""Probe ``scaling``: Assumption 5 by step scaling (docs/MATH.md, "Assumption 5", step scaling).

At every ``every``-th step t the probe keeps ω^t (``before_step``), and after the update
takes the actual step Δω_t = ω^{t+1} − ω^t of every trainable parameter (all chunks). For
each factor c in ``factors`` (default 1, 1/2, …, 1/64) it loads ω^t + c·Δω_t, computes the
readouts p̃(c) and chunk outputs p(c) on the probe batch and the totals over chunks of

* φ(c) = ⟨∇_p̃ R(ω^t; p̃^t), p̃(c) − p̃^t⟩ and q(c) = (1/N) Σ_n ‖p̃(c)(n) − p̃^t(n)‖², with the
  chunk outputs p_k(ω^t) held fixed,
* ρ(c) = max(φ(c), 0)/q(c),
* the drift at the scaled outputs, drift(c) = R(p(c); p̃(c)) − R(p(c); p̃^t), where
  R(outputs; upstream) = Σ_k (1/N) Σ_n ``chunk_divergence(upstream_k, output_k, p_y, α)``: how
  much R changes when the upstream readouts move, the chunk outputs being those of ω^t + c·Δω_t.
  As c → 0, drift(c)/c → φ′ like φ(c)/c (∇_p̃ R at p(c) differs from the one at p(0) by O(c)),

for both objectives: ``paper`` (R, g_k from p_y^ε with ε = ``method.epsilon`` when > 0,
else this probe's ``epsilon``) and ``implemented`` (R̄, m_k from the trained p_y^{method.epsilon}).
The formulas are ``zerolock_theory.theory.stability``'s (``FirstOrder`` and ``shared_totals``: the
totals of ``stability_terms`` bit for bit, with the target and gradient at ω^t computed once per
probed step for every direction and factor, and Δ shared by both objectives; the drift's R is
``chunk_divergence``'s, regrouped by ``Drift`` with what depends on ω^t built once; all float64).
c = 1 uses the exact ω^{t+1}.

First order means φ(c) ≈ c·φ′ and q(c) ≈ c²·q″, so the probe also logs the estimates at the
smallest factor c_min: ``phi_prime`` = φ(c_min)/c_min and ``q_second`` = q(c_min)/c_min².

**Random-direction baseline** (``random_baseline``, on by default): at the same step, the
same terms at ω^t + c·u_t for every factor c (c = 1 included), where u_t is a Gaussian
direction rescaled to the norm of the actual update chunk by chunk: ‖u_{t,k}‖ = ‖Δω_{t,k}‖
over the trainable parameters of chunk k (trainable parameters outside every chunk form one
more group). u_t is drawn on the CPU from a private generator seeded by
``direction_seed(run.seed, t)``: reproducible, the same on resume, and the training RNG is
never touched. It answers "would any update of this size move the targets like this?".

**Antithetic direction** (``antithetic``, on by default; only with ``random_baseline``): the
same terms at ω^t + c·(−u_t) for every factor c. φ′ is linear in the direction, so
φ′(−u_t) = −φ′(u_t): of each ±u_t pair exactly one has φ′ > 0 (unless φ′(u_t) = 0), and
φ(c)/c of the pair agree in size up to O(c).

Keys (``zerolock_theory.records.SCALING`` and ``SCALING_STEP``): ``probe/scaling/{obj}/c={c}/{phi,q,ratio,drift}``,
``probe/scaling/{obj}/{phi_prime,q_second,defined}``, and the same under
``probe/scaling/{obj}/random/...`` for the baseline and ``probe/scaling/{obj}/antithetic/...``
for −u_t. Undefined values are null; so is a non-finite drift.

Cost per probed step: ``len(factors) − 1`` extra forward passes of the probe batch through
the model (c = 1 reuses the readouts at ω^{t+1}), ``len(factors)`` more for the baseline and
``len(factors)`` more for the antithetic direction; once per step, both objectives' target and
gradient of R at ω^t; per point, one float64 exponential of its float32 [K+1, N, V] log-readouts
(the log-readout itself, in float64, is the drift's log p: no logarithm is taken) and a few passes over
them per objective (φ, q, ρ and the drift; ``benchmarks/scaling_maths.py`` times them against the
definition's form); nothing at the other steps. Parameters are restored by copying the saved
ω^{t+1} back, so training is bitwise unaffected.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch

from probes.base import Probe
from probes.readout_pass import (
    DEFAULT_N_POSITIONS,
    objective_targets,
    probe_batch,
    readouts,
    readouts_now,
)
from probes.registry import register
from zerolock_theory.config import one_alpha
from zerolock_theory.probe_config import DEFAULT_FACTORS, scaling_directions
from zerolock_theory.records import SCALING, SCALING_STEP
from zerolock_theory.theory.stability import (
    FirstOrder,
    FirstOrderTotals,
    as_metric,
    first_order_totals,
    in_readout_range,
    shared_totals,
)
from zerolock_theory.theory.targets import arithmetic_target, geometric_target
from zerolock_theory.training.hooks import HookContext

__all__ = ["DEFAULT_FACTORS", "Drift", "ScalingProbe", "chunk_groups", "direction_seed", "drift_values", "random_direction"]

TINY = torch.finfo(torch.float64).tiny  # below it the short form's Z has lost precision (subnormal)
RANDOM_STREAM = 0x5CA1E  # tags the baseline's seed sequence apart from every other use of the run seed


def _trainable(ctx: HookContext) -> list[torch.Tensor]:
    return [p for p in ctx.chunked.model.parameters() if p.requires_grad]


def direction_seed(run_seed: int, step: int) -> int:
    """The seed of u_t: a 63-bit integer from ``SeedSequence((RANDOM_STREAM, run_seed, step))``."""
    state = np.random.SeedSequence((RANDOM_STREAM, int(run_seed), int(step))).generate_state(2, np.uint32)
    return int((int(state[0]) << 31) ^ int(state[1]))


def chunk_groups(ctx: HookContext, params: Sequence[torch.Tensor]) -> list[int]:
    """The group of each trainable parameter: its chunk k (1..K), or 0 outside every chunk."""
    chunked = ctx.chunked
    owner: dict[int, int] = {}
    for k in range(1, int(getattr(chunked, "num_chunks", 0)) + 1):
        owner.update({id(p): k for p in chunked.chunk_parameters(k)})
    return [owner.get(id(p), 0) for p in params]


def random_direction(
    deltas: Sequence[torch.Tensor], groups: Sequence[int], seed: int
) -> list[torch.Tensor]:
    """u with the shapes of ``deltas``: standard normal entries (CPU generator seeded by ``seed``),
    rescaled per group so that ‖u_group‖ = ‖Δω_group‖ (float64 norms; u = 0 where Δω = 0)."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    draws = [torch.randn(d.shape, generator=gen, dtype=torch.float64) for d in deltas]
    out = []
    for g in sorted(set(groups)):
        members = [i for i, x in enumerate(groups) if x == g]
        target = torch.sqrt(sum(deltas[i].double().square().sum().cpu() for i in members))
        drawn = torch.sqrt(sum(draws[i].square().sum() for i in members))
        scale = target / drawn if float(drawn) > 0 else torch.zeros((), dtype=torch.float64)
        for i in members:
            draws[i] = draws[i] * scale
    for d, u in zip(deltas, draws, strict=True):
        out.append(u.to(device=d.device, dtype=d.dtype))
    return out


def _kl(p: torch.Tensor, log_p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """Σ_v p (log p − log q) with 0·log 0 = 0, +inf where q misses mass of p: ``chunk_divergence``'s form."""
    return torch.where(p > 0, p * (log_p - log_q), torch.zeros_like(p)).sum(-1)


class Drift:
    """drift(c) = R(p(c); p̃(c)) − R(p(c); p̃^t) at one ω^t, for any number of scaled points, where
    R(outputs; upstream) = Σ_k (1/N) Σ_n ``chunk_divergence(upstream_k, output_k, p_y, alpha, objective)``.

    ``before`` and every point are float64 readouts [K+1, N, V] (``[:-1]`` upstream p̃, ``[1:]`` the
    chunk outputs p). What depends on ω^t alone is built once. A point whose readouts (and
    ``before``'s, and for ``paper`` with α > 0 p_y) lie in (0, 1] everywhere takes the short form: the
    same sums regrouped, equal to the definition up to summation order (~1e-14 nats), with log p
    the only logarithm over the vocabulary:

    * ``implemented``, m = α p_y + (1−α) p̃: KL(m‖p) − KL(m^t‖p) = H(m) − H(m^t) − (1−α) Σ_v (p̃ − p̃^t)
      log p, with H(m) = Σ_v m log m. For a one-hot p_y (label y, α < 1), H(m) = (1−α)[log(1−α) Σ_v p̃
      + Σ_v p̃ log p̃] − (1−α) p̃_y (log(1−α) + log p̃_y) + m_y log m_y, from log p̃ alone; otherwise
      H(m) takes log m;
    * ``paper``: KL(p‖g) − KL(p‖g^t) = Σ_v p (log g^t − log g)
      = (1−α) Σ_v p (log p̃^t − log p̃) − (log Z^t − log Z) Σ_v p, with Z = Σ_v p_y^α p̃^{1−α}
      (one exponential per point; a square root at α = ½).

    Any other point, or one whose short form is not finite (a ``paper`` Z below the smallest normal
    float64 counts as not finite), takes the long form: ``implemented``
    both KL(m ‖ p) as ``chunk_divergence`` computes them (the same bits); ``paper`` Σ_v p_k
    (log g_k^t − log g_k(c)), the p_k log p_k terms cancelled exactly, non-finite exactly where the
    difference of the two KLs is. A non-finite drift is ``None``.
    """

    def __init__(self, before: torch.Tensor, p_y: torch.Tensor, alpha: float, objective: str) -> None:
        p_y = p_y.expand(before.shape[1:])  # [N, V], whatever broadcasts to it
        self.before, self.p_y, self.alpha, self.objective = before, p_y, float(alpha), objective
        self.short = bool(in_readout_range(before)) and (objective == "implemented" or self.alpha == 0.0
                                                          or bool(p_y.amin() > 0))
        self._long: torch.Tensor | None = None  # log g^t (paper) or m^t (implemented), built when first needed
        if not self.short:
            return
        if objective == "paper":
            self.y_pow = p_y.pow(self.alpha)
        else:
            nonzero = (p_y != 0).sum(-1)
            self.labels = p_y.argmax(-1, keepdim=True) if self.alpha < 1.0 and bool(
                ((nonzero == 1) & (p_y.amax(-1) == 1.0)).all()) else None
        self.t = self._at_upstream(before, torch.log(before))

    def _at_upstream(self, p: torch.Tensor, log_p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What the short form needs of a point's upstream p̃: (p̃, log Z) for ``paper``, (p̃, H(m)) for
        ``implemented``; both [K, N] but p̃ itself."""
        up, log_up = p[:-1], log_p[:-1]
        a = 1.0 - self.alpha
        if self.objective == "paper":  # Z summed directly: NaN (the long form) where it underflows
            w = torch.sqrt(up) if self.alpha == 0.5 else torch.exp(log_up * a)
            z = w.mul_(self.y_pow).sum(-1)
            return log_up, torch.where(z < TINY, torch.full_like(z, math.nan), torch.log(z))
        if self.labels is None:
            m = torch.mul(up, a).add_(self.p_y, alpha=self.alpha)
            h = (torch.special.xlogy(m, m) if self.alpha == 1.0 else m * torch.log(m)).sum(-1)
            return up, h
        labels = self.labels.expand(up.shape[0], -1, -1)
        up_y, log_y = up.gather(-1, labels).squeeze(-1), log_up.gather(-1, labels).squeeze(-1)
        m_y = self.alpha + a * up_y
        log_a = math.log(a)
        h = a * (log_a * up.sum(-1) + (up * log_up).sum(-1)) - a * up_y * (log_a + log_y) + m_y * torch.log(m_y)
        return up, h

    def _short(self, p: torch.Tensor, log_p: torch.Tensor) -> torch.Tensor:
        out, log_out = p[1:], log_p[1:]
        up_t, level_t = self.t
        up, level = self._at_upstream(p, log_p)
        a = 1.0 - self.alpha
        if self.objective == "paper":  # up: log p̃, level: log Z
            moved = torch.sub(up_t, up).mul_(out).sum(-1).mul_(a)
            return (moved - (level_t - level) * out.sum(-1)).mean(-1).sum()
        cross = torch.sub(up, up_t).mul_(log_out).sum(-1).mul_(a)  # level: H(m)
        return (level - level_t - cross).mean(-1).sum()

    def _long_form(self, p: torch.Tensor) -> torch.Tensor:
        upstream, out = self.before[:-1], p[1:]
        if self.objective == "paper":
            if self._long is None:
                self._long = geometric_target(self.p_y, upstream, self.alpha)[0]
            log_g = geometric_target(self.p_y, p[:-1], self.alpha)[0]
            return torch.where(out > 0, out * (self._long - log_g), torch.zeros_like(out)).sum(-1).mean(-1).sum()
        if self._long is None:
            self._long = arithmetic_target(self.p_y, upstream, self.alpha)
        m_t, log_out = self._long, torch.log(out)
        m = arithmetic_target(self.p_y, p[:-1], self.alpha)
        return _kl(m, torch.log(m), log_out).mean(-1).sum() - _kl(m_t, torch.log(m_t), log_out).mean(-1).sum()

    def values(self, scaled: Sequence[torch.Tensor]) -> list[float | None]:
        """drift at every point of ``scaled``, in order (``drift_values`` with this one drift)."""
        return drift_values([self], scaled)[0]


def drift_values(drifts: Sequence[Drift], scaled: Sequence[torch.Tensor],
                 logs: Sequence[torch.Tensor] | None = None) -> list[list[float | None]]:
    """Each drift's values at every point of ``scaled``, in order: one logarithm per point (none with
    ``logs``), shared by the drifts (built on the same ``before``, e.g. one per objective), held for one
    point at a time; a few host transfers for all of them.

    ``logs[i]``, when given, is the log-readout of which ``scaled[i]`` is the exponential (the probe's
    float32 log p̃, ``scaled[i] = exp(logs[i].double())``): the short form then takes it, in float64,
    as its log p instead of recomputing ``log(scaled[i])`` (which returns it up to one rounding)."""
    points = list(scaled)
    if not points:
        return [[] for _ in drifts]
    if logs is not None and len(logs) != len(points):
        raise ValueError(f"{len(logs)} log-readouts for {len(points)} points")
    short = (torch.stack([in_readout_range(p) for p in points]).tolist() if any(d.short for d in drifts)
             else [False] * len(points))
    rows: list[list[torch.Tensor | None]] = [[None] * len(points) for _ in drifts]
    for i, p in enumerate(points):
        if short[i]:
            log_p = torch.log(p) if logs is None else logs[i].to(p.dtype)
            for j, drift in enumerate(drifts):
                rows[j][i] = drift._short(p, log_p) if drift.short else None
    found = [r for row in rows for r in row if r is not None]
    if found:
        finite = iter(torch.isfinite(torch.stack(found)).tolist())
        rows = [[r if r is None or next(finite) else None for r in row] for row in rows]
    out = []
    for drift, row in zip(drifts, rows, strict=True):
        value = torch.stack([drift._long_form(p) if r is None else r for p, r in zip(points, row, strict=True)])
        value = torch.where(torch.isfinite(value), value, torch.full_like(value, math.nan))
        out.append([as_metric(x) for x in value.cpu().tolist()])
    return out


@register("scaling")
@dataclass
class ScalingProbe(Probe):
    """φ(c), q(c), ρ(c) at ω^t + c·Δω_t for both objectives, every ``every`` steps."""

    name: ClassVar[str] = "scaling"
    every: int = 10
    factors: tuple[float, ...] = field(default=DEFAULT_FACTORS)
    epsilon: float = 0.1  # ε of p_y in the paper's R (g_k) when method.epsilon = 0
    n_positions: int = DEFAULT_N_POSITIONS
    seed: int | None = None
    random_baseline: bool = True  # also scale a random direction of the same norm per chunk
    antithetic: bool = True  # with random_baseline: also scale −u_t (direction "antithetic")

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

    @property
    def directions(self) -> tuple[str, ...]:
        """The directions scaled each probed step (``records.SCALING_DIRECTIONS``)."""
        return scaling_directions(self.random_baseline, self.antithetic)

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
        deltas = [w1 - w0 for w0, w1 in zip(start, final, strict=True)]
        out: dict[str, Any] = {}
        try:  # each direction's terms before the next one's readouts: one direction's [K+1, N, V] arrays at a time
            scaled: dict[float, torch.Tensor] = {}
            for c in self.factors:
                if c == 1.0:
                    scaled[c] = readouts(ctx, step + 1, self.n_positions, self.seed)
                    continue
                scaled[c] = self._at(ctx, params, start, deltas, c)
            shared = self._start(ctx, before)
            out.update(self._metrics(shared, before, scaled, "actual"))
            del scaled
            if self.random_baseline:
                u = random_direction(deltas, chunk_groups(ctx, params), direction_seed(ctx.config.run.seed, step))
                # ω^t + c·(−u_t) for the antithetic direction: (−c)·u is c·(−u) exactly (negation is exact)
                for direction in self.directions[1:]:
                    sign = -1.0 if direction == "antithetic" else 1.0
                    moved = {c: self._at(ctx, params, start, u, sign * c) for c in self.factors}
                    out.update(self._metrics(shared, before, moved, direction))
                    del moved
        finally:
            with torch.no_grad():
                for p, w1 in zip(params, final, strict=True):
                    p.copy_(w1)
        return out

    def _at(self, ctx: HookContext, params: list[torch.Tensor], start: list[torch.Tensor],
            direction: list[torch.Tensor], c: float) -> torch.Tensor:
        """log p̃ at ω^t + c·direction (float32 log-readouts); the caller restores the parameters."""
        with torch.no_grad():
            for p, w0, d in zip(params, start, direction, strict=True):
                p.copy_(w0 + c * d)
        return readouts_now(ctx, self.n_positions, self.seed)

    def _targets(self, ctx: HookContext, vocab: int) -> dict[str, torch.Tensor]:
        """p_y per objective, [N, V] float64."""
        if not self.targets:
            labels = probe_batch(ctx, self.n_positions, self.seed).targets
            self.targets = objective_targets(labels, vocab, ctx.config.method.epsilon, self.epsilon)
        return self.targets

    def _start(self, ctx: HookContext, before: torch.Tensor) -> dict[str, tuple[FirstOrder | None, Drift]]:
        """What every direction's terms share at ω^t, per objective: the first-order terms' setup
        (``None`` when p̃^t has a NaN: each direction then takes ``first_order_totals``) and the drift's."""
        alpha = one_alpha(ctx.config.method, "the scaling probe")
        nan = bool(torch.isnan(before).any())
        return {objective: (None if nan else FirstOrder(before[:-1], before[1:], p_y, alpha, objective),
                            Drift(before, p_y, alpha, objective))
                for objective, p_y in self._targets(ctx, before.shape[-1]).items()}

    def _metrics(
        self, start: dict[str, tuple[FirstOrder | None, Drift]], before: torch.Tensor,
        scaled: dict[float, torch.Tensor], direction: str
    ) -> dict[str, Any]:
        """Both objectives' terms of one direction. ``scaled[c]``: the log-readouts at factor c (the
        probe's float32 log p̃, [K+1, N, V]); each point's probabilities exp(log p̃) are formed in
        float64 one point at a time, and its log p̃ serves the drift as its log p."""
        out: dict[str, Any] = {}
        c_min = self.factors[-1]
        factors = list(scaled)
        drifts = [drift for _, drift in start.values()]
        orders = [first_order for first_order, _ in start.values()]
        every: list[list[FirstOrderTotals]] = [[] for _ in start]
        values: list[list[float | None]] = [[] for _ in start]
        # NaN in p̃ exactly where in log p̃: one host transfer for the direction, on the float32 logs
        nan = bool(torch.stack([scaled[c][:-1].isnan().any() for c in factors]).any())
        first = scaled[factors[0]]  # one pair of float64 buffers for every point: no fresh pages per point
        log_p = torch.empty(first.shape, dtype=torch.float64, device=first.device)
        p = torch.empty_like(log_p)
        for c in factors:
            torch.exp(log_p.copy_(scaled[c]), out=p)
            if nan or None in orders:  # the definition, not the shortcut
                point = [first_order_totals(before[:-1], [p[:-1]], before[1:], drift.p_y, drift.alpha, objective)  # type: ignore[arg-type]
                         for objective, (_, drift) in start.items()]
            else:
                point = shared_totals(orders, [p[:-1]])  # type: ignore[arg-type]
            for j, (terms, drift) in enumerate(zip(point, drift_values(drifts, [p], [log_p]), strict=True)):
                every[j] += terms
                values[j] += drift
        for (objective, _), totals, drift in zip(start.items(), every, values, strict=True):
            defined = True
            for c, terms in zip(factors, totals, strict=True):
                defined &= bool(torch.isfinite(terms.phi_total))
                out[SCALING.key(objective, c, "phi", direction)] = as_metric(terms.phi_total)
                out[SCALING.key(objective, c, "q", direction)] = as_metric(terms.q_total)
                out[SCALING.key(objective, c, "ratio", direction)] = as_metric(terms.ratio_total)
            phi_min = out[SCALING.key(objective, c_min, "phi", direction)]
            q_min = out[SCALING.key(objective, c_min, "q", direction)]
            out[SCALING_STEP.key(objective, "phi_prime", direction)] = None if phi_min is None else phi_min / c_min
            out[SCALING_STEP.key(objective, "q_second", direction)] = None if q_min is None else q_min / c_min**2
            out[SCALING_STEP.key(objective, "defined", direction)] = defined
            for c, value in zip(factors, drift, strict=True):
                out[SCALING.key(objective, c, "drift", direction)] = value
        return out

    def on_end(self, ctx: HookContext) -> None:
        """Drop the kept parameters and readouts."""
        self.saved = self.before = None
