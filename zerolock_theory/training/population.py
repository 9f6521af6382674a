"""A training step over a population of adapters: S runs' steps in one forward per chunk.

``PopulationStep`` wraps the one step object of a run (``ZeroLockStep`` or ``BackpropStep``,
``steps.build_step``) built over a chunked model whose LoRA layers are stacked
(``models.population``). Its ``train_step`` takes one minibatch per member (each member its
own data order) and runs the wrapped step's own accumulation (``accumulator``) on S·b rows:

* the halves of Ĝ_t are each member's own (``split_halves`` of its minibatch); half i of the
  population is the members' halves i, member by member, so every LoRA layer sees S groups;
* the losses are normalised per member (n_s, its labelled tokens: ``losses._terms`` with n a
  tensor [S]), so member s's parameters receive exactly its single run's gradient;
* per member: ‖∇_k‖², Ĝ_t (its first-half snapshot), the finite check, clipping and the
  optimizer (a ``ChunkOptimizers`` of its own, ``steps.finish_update``), as in a single run.

``global_grad_sq_unbiased`` gives every member's global Ĝ_t (``run.global_grad_every``) the same
way: one full-backprop forward and gradient per half for all members, each member's loss
normalised by its own half's labelled tokens, its dropout drawn from its own stream without
advancing it.

All the step's scalars, of every member, are read from the device at once.

Checkpoints: ``member_states`` gives each member's ``TrainState`` in a single run's format (its
adapters under a single run's names, its optimizers' state dicts, its RNG with its dropout
generator as its device's global stream, its data position), so ``state.save_checkpoint`` writes a run
directory's checkpoint that a single run resumes from, and ``restore_members`` loads S of them
back into a population.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch

from zerolock_theory.config import MethodConfig, ModelConfig, OptimConfig
from zerolock_theory.models.population import Population
from zerolock_theory.theory.losses import IGNORE_INDEX
from zerolock_theory.training.gradients import Blocks, grad_sums, snapshot
from zerolock_theory.training.losses import LossSpec, chunk_loss
from zerolock_theory.training.optimizers import ChunkOptimizers
from zerolock_theory.training.state import TrainState, capture_rng
from zerolock_theory.training.steps import (
    Batch,
    TrainStep,
    accumulate_halves,
    build_step,
    finish_update,
    split_halves,
)

__all__ = [
    "PopulationStep", "build_population_step", "member_rng", "member_states", "restore_member_rng", "restore_members",
    "stack_batches",
]


def stack_batches(batches: list[Batch]) -> Batch:
    """The members' batches (equal shapes) as one batch, member by member along the rows."""
    return {key: torch.cat([b[key] for b in batches]) for key in batches[0]}


@dataclass(eq=False)
class PopulationStep:
    """S members' steps in one: ``inner`` accumulates over the stacked rows; each member updates alone.

    ``inner``'s own optimizers (over every member's parameters) are never stepped.
    """

    inner: TrainStep
    population: Population
    params: list[Blocks]  # per member, ω_k per chunk (``Population.member_blocks``)
    optimizers: list[ChunkOptimizers]  # per member
    unbiased_grad_sq: bool = True

    @property
    def size(self) -> int:
        """S."""
        return len(self.params)

    def train_step(self, batches: list[Batch], step: int) -> list[dict[str, float | None]]:
        """One update of every member on its own minibatch; each member's metrics as a single run's."""
        if len(batches) != self.size:
            raise ValueError(f"{len(batches)} batches for {self.size} members")
        per_member = [split_halves(b) for b in batches]
        halves = [stack_batches([h[i] for h in per_member]) for i in range(len(per_member[0]))]
        counts = torch.stack([torch.stack([(h["labels"] != IGNORE_INDEX).sum() for h in hs]) for hs in per_member]).tolist()
        sizes = [max(1, sum(c)) for c in counts]  # each member's n: its labelled tokens
        n = torch.tensor(sizes, dtype=torch.float64, device=halves[0]["labels"].device)
        keep = len(halves) == 2 and self.unbiased_grad_sq
        totals, first = accumulate_halves(self.inner.accumulator(step), halves, n,
                                          (lambda: [snapshot(p) for p in self.params]) if keep else None)
        K = len(self.params[0])
        rows, has = [], []
        for s, params in enumerate(self.params):
            sq, inner = grad_sums(params, None if first is None else first[s], counts[s], sizes[s])
            has.append(inner is not None)
            if inner is None:  # no Ĝ_t for this member (one sequence, or a half without a label)
                inner = [torch.zeros((), dtype=torch.float64, device=n.device)] * K
            rows.append(torch.stack([*(v[s].double() for v in totals.values()),
                                     *(v.double() for v in sq), *(v.double() for v in inner)]))
        values = torch.stack(rows).tolist()  # the step's one read of every member's scalars
        return [finish_update(self.optimizers[s], list(totals), values[s], K, has[s], step, self.inner.loss_name)
                for s in range(self.size)]

    def global_grad_sq_unbiased(self, batches: list[Batch]) -> list[float | None]:
        """Every member's ``steps.global_grad_sq_unbiased`` at the current parameters, in one pass.

        Half i of the population is the members' halves i (as in ``train_step``); per half, one
        forward through every chunk without detaching and one ``autograd.grad`` of the members'
        losses L_s = CE(p_y^ε, p_K) on their rows / n_s (n_s: member s's labelled tokens in the
        half). Member s's parameters receive ∇L_s alone, so its Ĝ_t = Σ_k ⟨g^{(1)}_k, g^{(2)}_k⟩ is
        summed in its single run's order. The global RNG and every member's dropout generator are
        restored afterwards (a single run forks its RNG here): training is bitwise unaffected.
        None for a member whose minibatch has one sequence or a half without a labelled token.
        """
        if len(batches) != self.size:
            raise ValueError(f"{len(batches)} batches for {self.size} members")
        per_member = [split_halves(b) for b in batches]
        if len(per_member[0]) < 2:
            return [None] * self.size
        halves = [stack_batches([h[i] for h in per_member]) for i in range(2)]
        counts = torch.stack([torch.stack([(h["labels"] != IGNORE_INDEX).sum() for h in hs])
                              for hs in per_member]).tolist()
        inner, chunked = self.inner, self.population.chunked
        spec, K = LossSpec.global_(inner.method), chunked.num_chunks
        flat = [p for params in self.params for ps in params for p in ps]
        gens = self.population.rng.generators
        saved = [g.get_state() for g in gens]
        devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
        grads: list[list[torch.Tensor]] = []
        try:
            with torch.random.fork_rng(devices=devices):
                for i, half in enumerate(halves):
                    n = torch.tensor([max(1, c[i]) for c in counts], dtype=torch.float64, device=half["labels"].device)
                    with inner.autocast():
                        hiddens = chunked.hiddens(half["input_ids"], half.get("attention_mask"))
                        loss = chunk_loss(inner.readout, spec, hiddens[-1], None, half["labels"], K, n).loss
                        grads.append([g.detach().double().reshape(-1)
                                      for g in torch.autograd.grad(loss, flat, torch.ones_like(loss))])
        finally:
            for g, state in zip(gens, saved, strict=True):
                g.set_state(state)
        sums, start = [], 0
        for params in self.params:
            size = sum(len(ps) for ps in params)
            pairs = zip(grads[0][start:start + size], grads[1][start:start + size], strict=True)
            sums.append(sum(torch.dot(a, b) for a, b in pairs))  # a single run's order of the sum
            start += size
        values = torch.stack(sums).tolist()  # one read for every member
        return [None if min(c) == 0 else v for c, v in zip(counts, values, strict=True)]


def build_population_step(population: Population, method: MethodConfig, optim: OptimConfig,
                          model_cfg: ModelConfig, total_steps: int, *, unbiased_grad_sq: bool = True,
                          readout_every: int = 1) -> PopulationStep:
    """The population's step for ``method.name``: the run's own step object around the stacked model,
    and per member its parameters and optimizers."""
    inner = build_step(population.chunked, method, optim, model_cfg, total_steps,
                       unbiased_grad_sq=unbiased_grad_sq, readout_every=readout_every)
    params = [population.member_blocks(s) for s in range(population.size)]
    optimizers = [ChunkOptimizers(p, optim, total_steps) for p in params]
    return PopulationStep(inner, population, params, optimizers, unbiased_grad_sq)


def member_rng(gen: torch.Generator | None) -> dict[str, Any]:
    """A member's RNG in a single run's ``state.capture_rng`` format: its dropout generator's state
    as the global stream of the generator's device (a single run draws dropout from that stream);
    without a generator, the global state."""
    rng = capture_rng()
    if gen is None:
        return rng
    if gen.device.type == "cuda":
        rng["cuda"][gen.device.index or 0] = gen.get_state()
    else:
        rng["torch"] = gen.get_state()
    return rng


def restore_member_rng(gen: torch.Generator, rng: dict[str, Any]) -> None:
    """The inverse of ``member_rng`` for the generator (the global RNG is left alone)."""
    gen.set_state(rng["cuda"][gen.device.index or 0] if gen.device.type == "cuda" else rng["torch"])


def member_states(step_fn: PopulationStep, step: int, data: list[dict[str, Any]] | None = None) -> list[TrainState]:
    """Each member's ``TrainState`` after ``step`` completed updates, in a single run's format.

    ``rng`` holds the member's dropout generator as its device's global stream (``member_rng``).
    ``data`` holds each member's data position (``DataStream.state_dict``), empty when None.
    """
    population = step_fn.population
    gens = population.rng.generators
    out = []
    for s in range(step_fn.size):
        rng = member_rng(gens[s] if gens else None)
        params = {n: v.clone() for n, v in population.member_state_dict(s).items()}
        optimizers = [copy.deepcopy(o.state_dict()) for o in step_fn.optimizers[s]]  # a snapshot, not the live state
        out.append(TrainState(step, params, optimizers, rng, {} if data is None else data[s]))
    return out


def restore_members(step_fn: PopulationStep, states: list[TrainState]) -> int:
    """Load S members' states (``member_states``, or S single runs' checkpoints) into the population;
    return the step they resume at (all members must have completed the same number of steps).

    As ``Optimizer.load_state_dict``, the optimizers keep the states' tensors: load a state once."""
    if len(states) != step_fn.size:
        raise ValueError(f"{len(states)} states for {step_fn.size} members")
    steps = {state.step for state in states}
    if len(steps) != 1:
        raise ValueError(f"members stopped at different steps: {sorted(steps)}")
    population = step_fn.population
    for s, state in enumerate(states):
        population.load_member(s, state.params)
        for opt, saved in zip(step_fn.optimizers[s], state.optimizers, strict=True):
            opt.load_state_dict(saved)
    if population.rng.generators:
        for gen, state in zip(population.rng.generators, states, strict=True):
            restore_member_rng(gen, state.rng)
    return steps.pop()
