"""Probe ``scaling_batched``: the step-scaling probe with every scaled point in one batched forward.

The same terms, keys and values as ``scaling`` (``ScalingProbe``; docs/MATH.md, "Assumption 5",
step scaling). ``ScalingProbe`` loads ω^t + c·d into the model and runs the probe batch once per
(factor, direction) point: with the default factors and both random directions, 20 forwards per
probed step. The points differ only in their LoRA adapters, so here they are the members of a
population (``models.population``) on one frozen base shared with the run's model: the probe
batch, repeated once per point, goes through the model in one forward per chunk, each point's
rows through its own adapters. c = 1 of the actual direction still reads ω^{t+1}'s cached
readouts. The run's own parameters are never moved.

Each point's adapters are formed as ``ScalingProbe`` forms them (w0 + c·d, in the parameters'
dtype), and each row's readout is the same computation, so the values equal ``scaling``'s (a test
holds them equal on a real run). Memory: the readouts of all points at once, float32
[K+1, P·N, V] for P points, where ``scaling`` holds one direction's at a time. A run that trains
full layers (no LoRA) falls back to ``scaling``'s loop.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from probes.readout_pass import log_readouts, probe_batch, readouts
from probes.registry import register
from probes.scaling import ScalingProbe, chunk_groups, direction_seed, random_direction
from zerolock_theory.models.chunking import ChunkedLM
from zerolock_theory.models.population import Population, stack_adapters
from zerolock_theory.training.hooks import HookContext

__all__ = ["BatchedScalingProbe", "shared_population"]


def shared_population(chunked: ChunkedLM, size: int) -> Population:
    """A population of ``size`` members on a copy of ``chunked`` that shares its frozen weights
    (only the adapters are new tensors), in eval mode, every member holding the current adapters."""
    model = chunked.model
    memo = {id(p): p for p in model.parameters() if not p.requires_grad}  # deepcopy keeps these as they are
    twin = ChunkedLM(copy.deepcopy(model, memo), chunked.num_chunks, chunked.boundaries)
    state = {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
    population = stack_adapters(twin, [state] * size)
    for p in twin.model.parameters():
        p.requires_grad_(False)
    twin.eval()
    return population


@register("scaling_batched")
@dataclass
class BatchedScalingProbe(ScalingProbe):
    """``ScalingProbe``'s terms, all scaled points of a step in one batched forward."""

    name: ClassVar[str] = "scaling_batched"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.population: Population | None = None

    def after_step(self, ctx: HookContext, step: int, metrics: dict[str, Any]) -> dict[str, Any]:
        """The scaled terms of step t from one forward over every point; ω^{t+1} is never moved."""
        if self.saved is None or self.before is None or not ctx.config.model.lora.enabled:
            return super().after_step(ctx, step, metrics)
        start, before = self.saved, self.before
        self.saved = self.before = None
        named = [(n, p) for n, p in ctx.chunked.model.named_parameters() if p.requires_grad]
        deltas = [p.detach() - w0 for (_, p), w0 in zip(named, start, strict=True)]
        points: list[tuple[str, float, list[torch.Tensor]]] = [("actual", c, deltas) for c in self.factors if c != 1.0]
        if self.random_baseline:
            u = random_direction(deltas, chunk_groups(ctx, [p for _, p in named]),
                                 direction_seed(ctx.config.run.seed, step))
            for direction in self.directions[1:]:
                sign = -1.0 if direction == "antithetic" else 1.0
                points += [(direction, sign * c, u) for c in self.factors]
        log_p = self._readouts(ctx, [{n: w0 + f * d for (n, _), w0, d in zip(named, start, way, strict=True)}
                                     for _, f, way in points])
        index = {(direction, abs(f)): i for i, (direction, f, _) in enumerate(points)}
        out: dict[str, Any] = {}
        shared = self._start(ctx, before)
        for direction in self.directions:
            scaled = {}
            for c in self.factors:
                if direction == "actual" and c == 1.0:
                    scaled[c] = readouts(ctx, step + 1, self.n_positions, self.seed)
                else:
                    scaled[c] = log_p[:, index[(direction, c)]]
            out.update(self._metrics(shared, before, scaled, direction))
        return out

    @torch.no_grad()
    def _readouts(self, ctx: HookContext, members: list[dict[str, torch.Tensor]]) -> torch.Tensor:
        """log p̃ of every member's adapters on the probe batch: float32 [K+1, P, N, V]."""
        if self.population is None or self.population.size != len(members):
            self.population = shared_population(ctx.chunked, len(members))
        for s, state in enumerate(members):
            self.population.load_member(s, state)
        batch = probe_batch(ctx, self.n_positions, self.seed)
        P = len(members)
        log_p = log_readouts(self.population.chunked, batch.input_ids.repeat(P, 1),
                             batch.attention_mask.repeat(P, 1), batch.mask.repeat(P, 1),
                             uniform_p0=ctx.config.method.p0 == "uniform", autocast=ctx.step_fn.autocast)
        return log_p.view(log_p.shape[0], P, -1, log_p.shape[-1])

    def on_end(self, ctx: HookContext) -> None:
        """Drop the kept parameters, readouts and the population."""
        super().on_end(ctx)
        self.population = None
