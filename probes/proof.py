"""Probe ``proof``: Theorem 1's proof on this run, descent and drift of the surrogate (docs/MATH.md, "Theorem 1" (b)).

On the fixed probe batch, for both objectives, with chunk k's frozen input h^t_{k-1} and
targets built from the frozen readouts p^t_{k-1} at ω^t (``zerolock_theory.theory.surrogate``):

* ``paper``: R^t(ω) = Σ_k mean_n KL(p_k(ω_k; h^t_{k-1}) ‖ g^t_k), g_k built from p_y^ε with
  ε = ``method.epsilon`` when > 0, else this probe's ``epsilon`` (the shared ``probes.epsilon``,
  default 0.1): so forward runs (ε = 0) are measured at ε = 0.1 by default. With ε = 0 and
  α > 0 the paper's R is +inf: its values are null, ``defined`` false with a ``reason``;
* ``implemented``: R̄^t(ω) = Σ_k mean_n KL(m^t_k ‖ p_k(ω_k; h^t_{k-1})), m_k from the trained
  p_y^{method.epsilon};

the record of step t (the update ω^t → ω^{t+1}) holds, per chunk and in total,

* ``surrogate`` = R^t(ω^t) (chunk k's readout p^t_k of the chained forward),
* ``descent`` = R^t(ω^{t+1}) − R^t(ω^t): chunk k at its new parameters on its OLD input
  h^t_{k-1}, against its OLD target;
* ``drift`` = R^{t+1}(ω^{t+1}) − R^t(ω^{t+1}): the surrogate moving because inputs and targets
  moved,

so that R^T(ω^T) − R^0(ω^0) = Σ_t descent_t + Σ_t drift_t exactly (each R^t(ω^t) is computed once
and used by both of its neighbours). ``probe/proof/lr_sum`` and ``lr_sq_sum`` carry η_t and
η_t² (the schedule's ``train/lr``) so an analysis forms S1 = Σ η_t and S2 = Σ η_t².

Smoothness (``smoothness_every`` = s > 0, a multiple of ``every``): at the start of every s-th
step the gradient ∇R^t(ω^t) on the probe batch is taken by one backward per objective
(autograd, no ``.grad``), and after the update ``directional`` = ⟨∇R^t(ω^t), Δω_t⟩,
``smoothness`` L_t = 2·(descent_t − directional)/‖Δω_t‖² (the second-order remainder along the
step; negative where R^t curves down) and ``eta_smoothness`` = η_t·L_t (the regime asks ≤ 1).

``every`` = s > 1: probed spans [t_0, t_0 + s) with t_0 ≡ 0 (mod s); the record of the span's
last step t_0 + s − 1 holds the span's descent R^{t_0}(ω^{t_0+s}) − R^{t_0}(ω^{t_0}) and drift
R^{t_0+s}(ω^{t_0+s}) − R^{t_0}(ω^{t_0+s}), ``span`` = s and the span's Σ η and Σ η². The identity
still telescopes over the spans, but a span's drift nets its steps' drifts, so Σ max(drift, 0)
over spans is at most the per-step one: use every = 1 for the proof's verdict.

Cost per probed step (every = 1): K − 1 chunk forwards on the probe batch and K − 1 readouts
(R^t(ω^{t+1}); chunk 1's is the shared readout p̃_1 itself, its input h_0 being frozen) besides the
shared readouts p̃ (reused from ``probes.readout_pass.readouts`` with their hidden states), and
float64 KL passes over [N, V] (chunk 1's targets are kept: p_0 never moves; the implemented targets'
m_k = exp(log m_k) and Σ m_k log m_k are taken once per span, so each KL(m_k ‖ p_k) reads p_k once;
with ε = 0 their log-mixture is summed at the labels only); with smoothness, one more forward and
two backwards. In a population, ``prepare_members`` runs the readouts and the chunk forwards of
every member in one stacked forward each (``probes.population_pass``).
Resumable without state: ``on_start`` begins a span at the start step when it is aligned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from probes.base import Probe
from probes.population_pass import member_chunk_outputs, prefetch_readouts
from probes.readout_pass import (
    DEFAULT_N_POSITIONS,
    hidden_states,
    label_targets,
    objective_smoothing,
    probe_batch,
    readouts,
)
from probes.registry import register
from zerolock_theory.config import one_alpha
from zerolock_theory.records import LR, OBJECTIVES, PROOF, PROOF_FIELDS, PROOF_STEP
from zerolock_theory.theory.surrogate import frozen_targets
from zerolock_theory.training.hooks import HookContext, ProbeCache

__all__ = ["ProofProbe", "chunk_targets", "chunk_terms"]


def chunk_targets(log_y: torch.Tensor, upstream: Any, alpha: float, objective: str,
                  labels: torch.Tensor | None = None) -> list[torch.Tensor]:
    """Frozen log-targets per chunk, float64 [N, V]: log g_k (paper) or log m_k (implemented).

    ``log_y`` [N, V] log p_y; ``upstream`` K tensors [N, V] log p_{k-1}
    (``theory.surrogate.frozen_targets``, one chunk at a time). ``labels`` [N], given when p_y
    is one-hot at them (ε = 0): log m_k = log(1-α) + log p_{k-1} off the label, and the
    log-sum only at the label (``_one_hot_mixture``: the same values up to one rounding at the
    label, where torch's vectorised and scalar ``logaddexp`` may differ in the last bit).
    """
    if labels is not None and objective == "implemented" and 0.0 < alpha < 1.0:
        return [_one_hot_mixture(prev.double(), labels, alpha) for prev in upstream]
    return [frozen_targets(log_y, [prev.double()], alpha, objective, log_input=True)[0]  # type: ignore[arg-type]
            for prev in upstream]


def _one_hot_mixture(log_prev: torch.Tensor, labels: torch.Tensor, alpha: float) -> torch.Tensor:
    """log(α e_y + (1-α) p_{k-1}), float64: ``theory.surrogate``'s log-mixture for a one-hot p_y.

    Off the label that mixture's ``logaddexp(-inf, b)`` is b exactly; at the label log e_y = 0,
    so its first term is log α exactly and only the ``logaddexp``'s own rounding can differ."""
    out = log_prev + math.log1p(-alpha)
    idx = labels.to(out.device).long().unsqueeze(-1)
    at = out.gather(-1, idx)
    return out.scatter_(-1, idx, torch.logaddexp(torch.full_like(at, math.log(alpha)), at))


def chunk_terms(targets: list[torch.Tensor], outputs: Any, objective: str,
                target_probs: list[torch.Tensor] | None = None,
                target_plogp: list[torch.Tensor] | None = None) -> torch.Tensor:
    """Per-chunk terms [K], float64: mean_n KL(p_k ‖ g_k) (paper) or mean_n KL(m_k ‖ p_k) (implemented).

    ``outputs`` K tensors [N, V] log p_k (differentiable when they are). The terms of
    ``theory.surrogate.chunk_surrogate_terms`` (same clamp at 0 per position). A product 0·(±inf)
    counts 0 (``nansum``): the convention 0·log 0 = 0 of both KLs. ``target_probs`` and
    ``target_plogp`` (implemented only, when already at hand): m_k = exp(log m_k) and
    Σ_v m_k log m_k [N] per chunk; KL(m_k ‖ p_k) = Σ_v m_k log m_k − Σ_v m_k log p_k, so a call
    with both reads each output once.
    """
    terms = []
    for k, (target, out) in enumerate(zip(targets, outputs, strict=True)):
        if objective == "paper":
            out = out.double()
            div = (out.exp() * (out - target)).nansum(-1)
        else:
            m = target.exp() if target_probs is None else target_probs[k]
            plogp = (m * target).nansum(-1) if target_plogp is None else target_plogp[k]
            div = plogp - (m * out).nansum(-1)  # out promoted to float64 element by element
        terms.append(div.clamp_min(0.0).mean())
    return torch.stack(terms)


def plogp_terms(targets: list[torch.Tensor], probs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Σ_v m_k log m_k [N] per chunk (0·log 0 = 0): the part of KL(m_k ‖ p_k) that the outputs do not move."""
    return [(m * target).nansum(-1) for target, m in zip(targets, probs, strict=True)]


_Implemented = tuple[list[torch.Tensor], list[torch.Tensor]]
"""The implemented targets' m_k = exp(log m_k), float64 [N, V], and Σ_v m_k log m_k, float64 [N], per chunk."""


def _implemented_args(objective: str, implemented: _Implemented | None) -> tuple[Any, Any]:
    """``chunk_terms``' ``target_probs`` and ``target_plogp`` for ``objective``."""
    return implemented if objective == "implemented" and implemented is not None else (None, None)


@dataclass
class _Span:
    """What a probed span keeps from its start t_0 (the model held ω^{t_0})."""

    step: int
    log_p: torch.Tensor  # log p̃ at ω^{t_0}, [K+1, N, V] float32 (shared, not copied)
    inputs: list[torch.Tensor]  # h^{t_0}_0 .. h^{t_0}_{K-1}, whole rows
    targets: dict[str, list[torch.Tensor]]  # objective -> frozen log-targets of R^{t_0}, float64 [N, V] per chunk
    terms: dict[str, torch.Tensor]  # objective -> R^{t_0}(ω^{t_0}) per chunk, float64 [K]
    implemented: _Implemented | None  # the implemented targets' m_k and Σ_v m_k log m_k
    lr: list[float] = field(default_factory=list)  # η of each step of the span
    weights: list[torch.Tensor] | None = None  # ω^{t_0} when smoothness is due
    grads: dict[str, list[torch.Tensor]] | None = None  # objective -> ∇R^{t_0}(ω^{t_0})


@register("proof")
@dataclass
class ProofProbe(Probe):
    """descent_t, drift_t and R^t(ω^t) for R (paper) and R̄ (implemented); optionally L_t."""

    name: ClassVar[str] = "proof"
    every: int = 1
    smoothness_every: int = 0  # steps between smoothness estimates; 0 = off
    epsilon: float = 0.1  # ε of p_y in the paper's R (g_k) when method.epsilon = 0
    n_positions: int = DEFAULT_N_POSITIONS
    seed: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.every, int) or self.every < 1:
            raise ValueError(f"proof.every must be an integer >= 1, got {self.every!r}")
        s = self.smoothness_every
        if not isinstance(s, int) or s < 0 or (s and s % self.every):
            raise ValueError(f"proof.smoothness_every must be 0 or a multiple of every={self.every}, got {s!r}")
        if not 0.0 <= self.epsilon < 1.0:
            raise ValueError(f"proof.epsilon must lie in [0, 1), got {self.epsilon}")
        self.span: _Span | None = None
        self.moved: tuple[int, int, list[torch.Tensor]] | None = None  # (end, skip, outputs): ``prepare_members``'
        self.stacked_cache = ProbeCache()  # a population's stacked probe batches (member 0's probe keeps it)
        self.log_y: dict[str, torch.Tensor] = {}
        # log p_0, chunk 1's log-targets per objective, and its implemented target's m_1 and Σ m_1 log m_1
        self.first_targets: tuple[torch.Tensor, dict[str, torch.Tensor], tuple[torch.Tensor, torch.Tensor] | None] | None = None

    # -- pieces -------------------------------------------------------------------------------

    def _eps(self, ctx: HookContext) -> dict[str, float]:
        return objective_smoothing(ctx.config.method.epsilon, self.epsilon)

    def _objectives(self, ctx: HookContext) -> list[str]:
        """The objectives that are finite: the paper's R needs ε > 0 when α > 0."""
        alpha = one_alpha(ctx.config.method, "the proof probe")
        return [obj for obj in OBJECTIVES if not (obj == "paper" and self._eps(ctx)[obj] == 0.0 and alpha > 0)]

    def _log_y(self, ctx: HookContext, vocab: int) -> dict[str, torch.Tensor]:
        if not self.log_y:
            labels = probe_batch(ctx, self.n_positions, self.seed).targets
            self.log_y = {obj: label_targets(labels, vocab, e).log() for obj, e in self._eps(ctx).items()}
        return self.log_y

    def _frozen(self, ctx: HookContext, log_p: torch.Tensor) -> tuple[dict[str, list[torch.Tensor]], dict[str, torch.Tensor],
                                                                       _Implemented | None]:
        """Per objective: the targets from ``log_p`` rows 0..K-1 and the terms of rows 1..K (R^t(ω^t));
        and the implemented targets' m_k and Σ_v m_k log m_k, read again by R^t(ω^{t+1}).

        Row 0 (p_0: the frozen embeddings' readout, or uniform) is the same at every step, so
        chunk 1's targets (and its m_1) are kept and reused while it is bitwise unchanged."""
        log_y, alpha = self._log_y(ctx, log_p.shape[-1]), one_alpha(ctx.config.method, "the proof probe")
        one_hot = probe_batch(ctx, self.n_positions, self.seed).targets if self._eps(ctx)["implemented"] == 0.0 else None
        rows = log_p.double()  # once for both objectives
        kept = self.first_targets
        if kept is None or not torch.equal(kept[0], log_p[0]):
            kept = self.first_targets = (log_p[0].clone(), {}, None)
        targets = {}
        for obj in self._objectives(ctx):
            if obj not in kept[1]:
                kept[1][obj] = chunk_targets(log_y[obj], rows[:1], alpha, obj, one_hot)[0]
            targets[obj] = [kept[1][obj], *chunk_targets(log_y[obj], rows[1:-1], alpha, obj, one_hot)]
        implemented = None
        if "implemented" in targets:
            if kept[2] is None:
                first = kept[1]["implemented"].exp()
                kept = self.first_targets = (kept[0], kept[1], (first, plogp_terms([kept[1]["implemented"]], [first])[0]))
            rest = targets["implemented"][1:]
            probs = [t.exp() for t in rest]
            implemented = ([kept[2][0], *probs], [kept[2][1], *plogp_terms(rest, probs)])
        terms = {obj: chunk_terms(t, rows[1:], obj, *_implemented_args(obj, implemented)) for obj, t in targets.items()}
        return targets, terms, implemented

    def _chunk_outputs(self, ctx: HookContext, inputs: list[torch.Tensor], grad: bool = False,
                       start: int = 1) -> list[torch.Tensor]:
        """log p_k(ω_k; h_{k-1}) for k = start, start + 1, … at the probe positions, for the current ω and
        the given inputs h_{start-1}, …: float32 [N, V] each."""
        batch = probe_batch(ctx, self.n_positions, self.seed)
        chunked, autocast = ctx.chunked, ctx.step_fn.autocast
        out = []
        with torch.set_grad_enabled(grad):
            with autocast(), torch.no_grad():
                _, embed_ctx = chunked.embed(batch.input_ids, batch.attention_mask)
            for k, h_in in enumerate(inputs, start=start):
                with autocast():
                    hidden = chunked.forward_chunk(k, h_in.detach(), embed_ctx)
                    logits = chunked.readout(hidden[batch.mask])
                out.append(torch.log_softmax(logits.float(), dim=-1))
        return out

    def _begin(self, ctx: HookContext, step: int, frozen: tuple[dict, dict, _Implemented | None] | None = None) -> _Span:
        """A span starting at ω^step (the model holds it now); ``frozen``: ``_frozen``'s values, when at hand."""
        log_p = readouts(ctx, step, self.n_positions, self.seed)
        inputs = hidden_states(ctx, step, self.n_positions, self.seed)[:-1]
        targets, terms, implemented = self._frozen(ctx, log_p) if frozen is None else frozen
        span = _Span(step, log_p, inputs, targets, terms, implemented)
        if self.smoothness_every and step % self.smoothness_every == 0:
            params = [p for ps in ctx.step_fn.params for p in ps]
            span.weights = [p.detach().clone() for p in params]
            outputs = self._chunk_outputs(ctx, inputs, grad=True)
            grads, objectives = {}, list(targets)
            for i, obj in enumerate(objectives):
                total = chunk_terms(targets[obj], outputs, obj).sum()
                keep = i + 1 < len(objectives)
                grads[obj] = [g.detach() for g in torch.autograd.grad(total, params, retain_graph=keep)]
            span.grads = grads
        return span

    # -- hook ---------------------------------------------------------------------------------

    @staticmethod
    def prepare_members(probes: list[ProofProbe], ctxs: list[HookContext], step: int) -> None:
        """A population's step (``training.hooks``): at a span's end ω^{step+1}, every member's readouts
        and its chunks at ω^{step+1} on their old inputs, each in one forward over the stacked probe
        batches (``probes.population_pass``); each member's ``after_step`` reads them."""
        first, end = probes[0], step + 1
        spans = [p.span for p in probes]
        if end % first.every or (end >= ctxs[0].config.run.steps and all(span is None for span in spans)):
            return
        if not prefetch_readouts(ctxs, end, first.stacked_cache):
            return
        if any(span is None or span.step != end - first.every for span in spans):
            return
        skips = {int(torch.equal(hidden_states(ctx, end)[0], span.inputs[0])) for ctx, span in zip(ctxs, spans, strict=True)}
        skip = skips.pop()
        if skips or skip >= len(spans[0].inputs):  # members disagree, or nothing to run (K = 1)
            return
        moved = member_chunk_outputs(ctxs, [span.inputs[skip:] for span in spans], 1 + skip)
        for probe, outputs in zip(probes, moved or [], strict=False):
            probe.moved = (end, skip, outputs)

    def on_start(self, ctx: HookContext) -> None:
        """Begin a span at the start step when it is aligned (recomputed on resume)."""
        start = ctx.start_step
        self.span = self._begin(ctx, start) if start % self.every == 0 and start < ctx.config.run.steps else None

    def after_step(self, ctx: HookContext, step: int, metrics: dict[str, Any]) -> dict[str, Any]:
        """Keep η_t; at a span's last step, the span's terms, then begin the next span at ω^{t+1}."""
        span, end = self.span, step + 1
        if span is not None:
            span.lr.append(float(metrics[LR]))
        if end % self.every:
            return {}
        out: dict[str, Any] = {}
        frozen = None
        if span is not None and span.step == end - self.every:
            out, frozen = self._finish(ctx, span, end)
        self.span = self._begin(ctx, end, frozen) if end < ctx.config.run.steps else None
        return out

    def _finish(self, ctx: HookContext, span: _Span, end: int) -> tuple[dict[str, Any], tuple[dict, dict, _Implemented | None]]:
        """Metrics of the span ending at ω^end, and the targets and R^end(ω^end) of the next span."""
        log_p = readouts(ctx, end, self.n_positions, self.seed)
        # Chunk 1 at ω^end on its old input h^t_0 is chunk 1 of the chained forward at ω^end whenever
        # h_0 did not move (frozen embeddings): the same computation, so its row is reused.
        same_h0 = torch.equal(hidden_states(ctx, end, self.n_positions, self.seed)[0], span.inputs[0])
        skip = int(same_h0)
        kept, self.moved = self.moved, None
        if kept is not None and kept[:2] == (end, skip):
            moved = kept[2]
        else:
            with torch.no_grad():
                moved = self._chunk_outputs(ctx, span.inputs[skip:], start=1 + skip)
        moved = [m.double() for m in (*log_p[1:1 + skip], *moved)]  # once for both objectives
        mid = {obj: chunk_terms(targets, moved, obj, *_implemented_args(obj, span.implemented))
               for obj, targets in span.targets.items()}
        frozen = self._frozen(ctx, log_p)
        after = frozen[1]
        out: dict[str, Any] = {
            PROOF_STEP.key("span"): end - span.step,
            PROOF_STEP.key("lr_sum"): sum(span.lr),
            PROOF_STEP.key("lr_sq_sum"): sum(lr * lr for lr in span.lr),
        }
        for obj in OBJECTIVES:
            if obj not in span.terms:
                for name in PROOF_FIELDS:
                    out[PROOF.key(obj, name)] = None
                out[PROOF.key(obj, "defined")] = False
                out[PROOF.key(obj, "reason")] = "epsilon = 0: KL(p || e_y) is +inf; set probes.epsilon > 0"
                continue
            values = {"surrogate": span.terms[obj], "descent": mid[obj] - span.terms[obj], "drift": after[obj] - mid[obj]}
            for name, per_chunk in values.items():
                out[PROOF.key(obj, name)] = float(per_chunk.sum())
                for k, value in enumerate(per_chunk.tolist(), start=1):
                    out[PROOF.key(obj, name, k)] = value
            out[PROOF.key(obj, "defined")] = True
            if span.grads is not None and span.weights is not None:
                out.update(self._smoothness(ctx, span, obj, out[PROOF.key(obj, "descent")]))
        return out, frozen

    def _smoothness(self, ctx: HookContext, span: _Span, obj: str, descent: float) -> dict[str, Any]:
        """⟨∇R^t(ω^t), Δω_t⟩, L_t = 2·(descent − ⟨∇R, Δω⟩)/‖Δω‖² and η_t·L_t."""
        assert span.grads is not None and span.weights is not None
        params = [p for ps in ctx.step_fn.params for p in ps]
        directional, step_sq = 0.0, 0.0
        for p, w0, g in zip(params, span.weights, span.grads[obj], strict=True):
            delta = (p.detach() - w0).double()
            step_sq += float(delta.pow(2).sum())
            directional += float((g.double() * delta).sum())
        smooth = 2.0 * (descent - directional) / step_sq if step_sq > 0 else None
        return {
            PROOF.key(obj, "directional"): directional,
            PROOF.key(obj, "smoothness"): smooth,
            PROOF.key(obj, "eta_smoothness"): None if smooth is None else span.lr[0] * smooth,
        }


    def on_end(self, ctx: HookContext) -> None:
        """Drop the kept span."""
        self.span = self.moved = None
