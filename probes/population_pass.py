"""The probe batch of every member of a population in one forward (``models.population``).

In a population each member's probes run inside ``Population.member(s)``, one member after another,
and each forward of the probe batch pays a whole forward's per-operation cost for B rows. Outside
member mode the stacked model applies member s's adapters to rows ``[s·B, (s+1)·B)``, so the
members' probe batches, stacked, go through the model once:

* ``prefetch_readouts``: log p̃ and h_0..h_K at ω^{t+1} of every member, written into each
  member's ``ProbeCache`` as ``readout_pass.readouts`` would (the same step key), so every probe
  of that step reads them from the cache;
* ``member_chunk_outputs``: log p_k(ω_k; h_{k-1}) of every member for given per-member inputs
  (the proof probe's R^t(ω^{t+1}) reads chunk k at ω^{t+1} on its old input h^t_{k-1}).

Each row's computation is the one a member's own forward does (the base layers on more rows, the
LoRA product as a batched matmul with one matrix per member), so the values equal the per-member
ones; the population tests hold every probe value to a single run's. Members whose probe batches
differ in shape cannot be stacked: the functions return False / None and the probes compute per
member as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from probes.readout_pass import ProbeBatch, log_readouts
from zerolock_theory.training.hooks import HookContext, ProbeCache

__all__ = ["member_chunk_outputs", "prefetch_readouts", "stacked_batch"]


def stacked_batch(ctxs: Sequence[HookContext]) -> ProbeBatch | None:
    """The members' probe batches, member by member along the rows; None when a member has not built
    its batch yet or the batches differ in shape or in N (they cannot share one forward)."""
    batches = [ctx.cache.batch for ctx in ctxs]
    if len(batches) < 2 or any(b is None for b in batches):
        return None
    first = batches[0]
    if any(b.input_ids.shape != first.input_ids.shape or b.n_positions != first.n_positions for b in batches):
        return None
    return ProbeBatch(torch.cat([b.input_ids for b in batches]), torch.cat([b.attention_mask for b in batches]),
                      torch.cat([b.labels for b in batches]), first.n_positions, first.seed)


def prefetch_readouts(ctxs: Sequence[HookContext], step: int, cache: ProbeCache) -> bool:
    """Every member's ``readouts(ctx, step)`` and ``hidden_states(ctx, step)`` from one forward of the
    stacked probe batches; True when written. Call outside member mode, while the model holds every
    member's ω^step. ``cache`` is the population's own (its p_0, reused while unchanged)."""
    if all(ctx.cache.readouts is not None and ctx.cache.readouts[0] == step for ctx in ctxs):
        return True
    batch = stacked_batch(ctxs)
    if batch is None:
        return False
    first = ctxs[0]
    hiddens: list[torch.Tensor] = []
    log_p = log_readouts(first.chunked, batch.input_ids, batch.attention_mask, batch.mask,
                         uniform_p0=first.config.method.p0 == "uniform", autocast=first.step_fn.autocast,
                         cache=cache, hiddens_out=hiddens)
    rows, n = len(ctxs[0].cache.batch.input_ids), batch.n_positions
    if log_p.shape[1] != n * len(ctxs):  # a member's batch without exactly N labels: per member
        return False
    for s, ctx in enumerate(ctxs):
        mine = log_p[:, s * n:(s + 1) * n]
        ctx.cache.readouts = (step, mine)
        ctx.cache.hiddens = (step, [h[s * rows:(s + 1) * rows] for h in hiddens])
    return True


@torch.no_grad()
def member_chunk_outputs(ctxs: Sequence[HookContext], inputs: Sequence[Sequence[torch.Tensor]],
                         start: int) -> list[list[torch.Tensor]] | None:
    """Per member s, log p_k(ω_k; inputs[s][j]) for k = start + j at the probe positions, float32 [N, V]
    each: one forward of chunk k over every member's input. None when the batches cannot be stacked."""
    batch = stacked_batch(ctxs)
    if batch is None:
        return None
    chunked, autocast = ctxs[0].chunked, ctxs[0].step_fn.autocast
    n = batch.n_positions
    with autocast():
        _, embed_ctx = chunked.embed(batch.input_ids, batch.attention_mask)
    out: list[list[torch.Tensor]] = [[] for _ in ctxs]
    for j, k in enumerate(range(start, start + len(inputs[0]))):
        h_in = torch.cat([member[j] for member in inputs])
        with autocast():
            hidden = chunked.forward_chunk(k, h_in, embed_ctx)
            logits = chunked.readout(hidden[batch.mask])
        log_p = torch.log_softmax(logits.float(), dim=-1)
        if log_p.shape[0] != n * len(ctxs):
            return None
        for s in range(len(ctxs)):
            out[s].append(log_p[s * n:(s + 1) * n])
    return out
