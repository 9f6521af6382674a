"""The step objects of the one training loop: ZeroLock, the backprop baseline and ZeroLock's
un-detached twin (``UndetachedStep``, ``method.detach = false``: undetached.py).

All implement the ``TrainStep`` protocol with the same parts (``ChunkOptimizers``, the
schedule, clipping, ``sliced_backward``) and the same update (``update_on_halves``); they
differ only in where the loss that updates ω_k comes from (docs/MATH.md, "Local losses"):

* ``ZeroLockStep``: chunk k runs on the detached input h^t_{k-1}, reads out p_k and
  minimizes its local loss ℓ_k (α·task + (1-α)·consistency to the detached p^t_{k-1}),
  then steps its optimizer, in order k = 1..K. No gradient crosses a chunk boundary.
* ``BackpropStep``: L = CE(p_y^ε, p_K) backpropagated through all chunks.
* ``UndetachedStep``: ZeroLock's ℓ_k summed and backpropagated through all chunks (a
  ``ZeroLockStep`` whose accumulation alone differs).

Each step object splits its ``train_step`` into what it accumulates per half
(``accumulator(step)``) and the update shared by all (``accumulate_halves``, then one read of
the scalars, then ``finish_update``), so a population of runs (``training.population``) reuses
the same accumulation over S members' rows.

Ĝ_t (docs/MATH.md, "Theorem 1"): the minibatch's sequences are split into two halves, run one
after the other, both summed over labelled positions / n (n = labelled tokens of the whole
minibatch), so ``.grad`` ends as the full-batch gradient (the update is unchanged up to
float summation order). The first half's gradient is kept; with n_i the labelled tokens of
half i, the half-batch mean gradients are g^{(1)} = S_1/n_1 and g^{(2)} = S_2/n_2 and
``chunk/{k}/grad_sq_unbiased`` = ⟨g^{(1)}_k, g^{(2)}_k⟩, an unbiased estimate of ‖∇_{ω_k} R^t‖²
(it can be negative); ``train/grad_sq_unbiased`` is its sum over chunks. Null when the
minibatch has one sequence or a half has no labelled token, or when the step's
``unbiased_grad_sq`` is off (``run.unbiased_grad_sq``: the kept copy costs one more gradient's
memory, ``gradients.snapshot_bytes``; small with LoRA, as large as the gradients in full
fine-tuning).

Host synchronisations: every per-step scalar (the loss terms, ‖∇‖², Ĝ_t) stays on the device
until one read at the end of the step, after the halves' label counts (one read), so a step
synchronises a fixed number of times whatever the number of chunks and parameter tensors.

Backprop's per-chunk readouts (``chunk/{k}/ce`` for k < K, a no-grad readout of each h_k that
its update does not need) are computed every ``readout_every`` steps (the loop passes
``run.eval_every``: they land on the evaluated records), so the baseline's step pays only for
its own loss in between; 0 = never.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import torch

from zerolock_theory.config import MethodConfig, ModelConfig, OptimConfig, alpha_of
from zerolock_theory.models.chunking import ChunkedLM
from zerolock_theory.records import CHUNK, FINAL_CE, GRAD_NORM_SQ, GRAD_SQ_UNBIASED, LR
from zerolock_theory.theory.losses import IGNORE_INDEX
from zerolock_theory.training.gradients import (
    Blocks,
    count_labelled,
    global_gradient,
    grad_sums,
    local_gradients,
    snapshot,
)
from zerolock_theory.training.losses import (
    SUM_KEYS,
    LossSpec,
    NonFiniteLossError,
    Readout,
    check_finite,
    chunk_loss,
    sliced_backward_totals,
)
from zerolock_theory.training.optimizers import ChunkOptimizers
from zerolock_theory.training.undetached import undetached_backward

__all__ = [
    "BackpropStep", "NonFiniteLossError", "TrainStep", "UndetachedStep", "ZeroLockStep", "accumulate_halves",
    "build_step", "drop_frozen_grads", "finish_update", "global_grad_sq_unbiased", "half_counts", "split_halves",
    "step_parts", "update_on_halves",
]

Batch = dict[str, torch.Tensor]
Totals = dict[str, torch.Tensor]
"""Metric name → a scalar on the device (read once per step by ``update_on_halves``)."""


class TrainStep(Protocol):
    """What the loop, the probes and the pipeline use of a step object."""

    name: str
    method: MethodConfig
    readout: Readout
    params: Blocks
    optimizers: ChunkOptimizers

    def train_step(self, batch: Batch, step: int) -> dict[str, float | None]:
        """One update ω^t → ω^{t+1} on the full minibatch; metrics include Ĝ_t."""
        ...

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """bf16/fp16 autocast when configured, else a no-op."""
        ...

    def global_gradient(self, batch: Batch) -> Blocks:
        """Blocks ∇_{ω_k} L by full backprop (no ``.grad``, no optimizer)."""
        ...

    def local_gradients(self, batch: Batch) -> Blocks:
        """Blocks ∇_{ω_k} ℓ_k on detached inputs (no ``.grad``, no optimizer)."""
        ...


def split_halves(batch: Batch) -> list[Batch]:
    """The minibatch's sequences in two halves (rows ``[:b//2]`` and ``[b//2:]``); one part if b < 2."""
    rows = batch["input_ids"].shape[0]
    if rows < 2:
        return [batch]
    mid = rows // 2
    return [{k: v[:mid] for k, v in batch.items()}, {k: v[mid:] for k, v in batch.items()}]


def half_counts(halves: list[Batch]) -> list[int]:
    """Labelled tokens of each half, read from the device at once (one synchronisation)."""
    return [int(c) for c in torch.stack([(h["labels"] != IGNORE_INDEX).sum() for h in halves]).tolist()]


def update_on_halves(step_fn: TrainStep, accumulate: Callable[[Batch, int], Totals],
                     batch: Batch, step: int, loss_name: Callable[[int], str]) -> dict[str, float | None]:
    """Accumulate ``.grad`` over the two halves, measure ‖∇‖² and Ĝ_t, then update (module docstring)."""
    halves = split_halves(batch)
    counts = half_counts(halves)
    n = max(1, sum(counts))  # labelled_tokens(batch)
    keep = len(halves) == 2 and getattr(step_fn, "unbiased_grad_sq", True)
    totals, first = accumulate_halves(accumulate, halves, n, (lambda: snapshot(step_fn.params)) if keep else None)
    K = len(step_fn.params)
    sq_tensors, inner = grad_sums(step_fn.params, first, counts, n)  # each gradient read once
    scalars = [*totals.values(), *sq_tensors, *(inner or [])]
    values = torch.stack([v.double() for v in scalars]).tolist()  # the step's one read of its scalars
    return finish_update(step_fn.optimizers, list(totals), values, K, inner is not None, step, loss_name)


def accumulate_halves(accumulate: Callable[[Batch, Any], Totals], halves: list[Batch], n: Any,
                      keep_first: Callable[[], Any] | None) -> tuple[Totals, Any]:
    """Run ``accumulate`` on each half (``.grad`` adds up), summing its totals; ``keep_first()``
    (the first half's gradient snapshot, for Ĝ_t) is taken after the first of two halves."""
    totals: Totals = {}
    first = None
    for i, half in enumerate(halves):
        for key, value in accumulate(half, n).items():
            totals[key] = totals[key] + value if key in totals else value
        if i == 0 and len(halves) == 2 and keep_first is not None:
            first = keep_first()
    return totals, first


def finish_update(optimizers: ChunkOptimizers, keys: list[str], values: list[float], K: int, has_inner: bool,
                  step: int, loss_name: Callable[[int], str]) -> dict[str, float | None]:
    """The step's metrics from its read scalars (``keys``' totals, K ‖∇_k‖², K Ĝ_t terms when
    ``has_inner``), checked finite; then every chunk's optimizer steps."""
    metrics = dict(zip(keys, values, strict=False))
    sq, inner_values = values[len(keys): len(keys) + K], values[len(keys) + K:] if has_inner else None
    for k in range(1, K + 1):
        if CHUNK.key(k, "loss") in metrics:
            check_finite(metrics[CHUNK.key(k, "loss")], step, loss_name(k))
    out: dict[str, float | None] = dict(metrics)
    for k in range(1, K + 1):
        out[CHUNK.key(k, "grad_norm_sq")] = sq[k - 1]
        out[CHUNK.key(k, "grad_sq_unbiased")] = None if inner_values is None else inner_values[k - 1]
    out[FINAL_CE] = metrics[CHUNK.key(K, "ce")]
    out[GRAD_NORM_SQ] = sum(sq)
    out[GRAD_SQ_UNBIASED] = None if inner_values is None else sum(inner_values)
    out[LR] = optimizers.step(step, sq)
    return out


def global_grad_sq_unbiased(step_fn: TrainStep, batch: Batch) -> float | None:
    """Ĝ_t of the task loss L = CE(p_y^ε, p_K): Σ_k ⟨g^{(1)}_k, g^{(2)}_k⟩ with g^{(i)} = ∇L on half i.

    The halves are ``split_halves``'s (the step's own), each gradient by full backprop through
    all chunks and normalised by its half's labelled tokens (``global_gradient``), at the
    current parameters. Autograd only: no ``.grad``, no optimizer; the forward runs under a
    forked RNG (adapter dropout), so training is bitwise unaffected. None without two halves
    or when a half has no labelled token. For backprop this is the step's own
    ``train/grad_sq_unbiased`` (same estimator; the loop reuses that).
    """
    halves = split_halves(batch)
    if len(halves) < 2 or min(count_labelled(h["labels"]) for h in halves) == 0:
        return None
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    grads = []
    with torch.random.fork_rng(devices=devices):
        for half in halves:
            with step_fn.autocast():
                blocks = step_fn.global_gradient(half)
            grads.append([g.detach().double().reshape(-1) for b in blocks for g in b])
    return float(sum(torch.dot(a, b) for a, b in zip(*grads, strict=True)))


def drop_frozen_grads(params: Blocks, frozen: list[int]) -> None:
    """Forget the accumulated ``.grad`` of the chunks in ``frozen`` (1-based): their optimizers then
    skip them (``method.frozen_chunks``)."""
    for k in frozen:
        for p in params[k - 1]:
            p.grad = None


def step_parts(chunked: ChunkedLM, optim: OptimConfig, model_cfg: ModelConfig,
           total_steps: int) -> tuple[Readout, Blocks, ChunkOptimizers]:
    """The readout, each chunk's trainable parameters and their optimizers."""
    autocast = getattr(torch, model_cfg.autocast) if model_cfg.autocast else None
    params = [chunked.chunk_parameters(k) for k in range(1, chunked.num_chunks + 1)]
    for k, ps in enumerate(params, start=1):
        if not ps:
            raise ValueError(f"chunk {k} has no trainable parameters")
    return Readout(chunked, autocast, model_cfg.readout_chunk_size), params, ChunkOptimizers(params, optim, total_steps)


@dataclass(eq=False)
class ZeroLockStep:
    """Each chunk: forward on detached inputs, local backward; then every optimizer steps."""

    name: ClassVar[str] = "zerolock"
    chunked: ChunkedLM
    method: MethodConfig
    readout: Readout
    params: Blocks
    optimizers: ChunkOptimizers
    unbiased_grad_sq: bool = True  # Ĝ_t from the two halves (module docstring)

    def train_step(self, batch: Batch, step: int) -> dict[str, float | None]:
        return update_on_halves(self, self.accumulator(step), batch, step, self.loss_name)

    def accumulator(self, step: int) -> Callable[[Batch, Any], Totals]:
        """What step ``step`` accumulates per half: ``.grad`` and the loss terms (``update_on_halves``)."""
        return self._accumulate

    @staticmethod
    def loss_name(k: int) -> str:
        """The loss a non-finite chunk-k value is reported as."""
        return f"chunk {k} local loss"

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        return self.readout.autocast()

    def _accumulate(self, batch: Batch, n: int | torch.Tensor) -> Totals:
        """∇(Σ_k ℓ_k on ``batch`` / n) into ``.grad``, chunk by chunk; the loss terms (on the device).

        Each chunk's ℓ_k has its own α (``config.alpha_of``); a chunk of ``method.frozen_chunks``
        runs forward without a graph and only reports its terms."""
        labels, K, frozen = batch["labels"], self.chunked.num_chunks, set(self.method.frozen_chunks)
        with self.autocast():
            hidden, ctx = self.chunked.embed(batch["input_ids"], batch.get("attention_mask"))
        metrics: Totals = {}
        log_prev = None  # log p_{k-1}, reused from chunk k-1's readout when unsliced
        for k in range(1, K + 1):
            h_in, spec = hidden.detach(), LossSpec.local(self.method, k)
            keep = k < K and alpha_of(self.method, k + 1) < 1.0  # chunk k+1 reads p_k as its target
            with self.autocast(), torch.no_grad() if k in frozen else contextlib.nullcontext():
                hidden = self.chunked.forward_chunk(k, h_in, ctx)
            if k in frozen:
                with torch.no_grad():
                    part = chunk_loss(self.readout, spec, hidden, h_in, labels, k, n, log_prev)
                totals, log_prev = part.totals, part.prev if keep else None
            else:
                totals, log_prev = sliced_backward_totals(self.readout, spec, hidden, h_in, labels, k, n, log_prev,
                                                          keep)
            metrics.update({CHUNK.key(k, key): totals[i] for i, key in enumerate(SUM_KEYS)})
        return metrics

    def global_gradient(self, batch: Batch) -> Blocks:
        return global_gradient(self.readout, self.method, self.params, batch)

    def local_gradients(self, batch: Batch) -> Blocks:
        return local_gradients(self.readout, self.method, self.params, batch)


@dataclass(eq=False)
class BackpropStep:
    """L = CE(p_y^ε, p_K) through all chunks; same adapters, optimizers and schedule."""

    name: ClassVar[str] = "backprop"
    chunked: ChunkedLM
    method: MethodConfig
    readout: Readout
    params: Blocks
    optimizers: ChunkOptimizers
    unbiased_grad_sq: bool = True  # Ĝ_t from the two halves (module docstring)
    readout_every: int = 1  # chunk/{k}/ce for k < K every so many steps (module docstring); 0 = never

    def train_step(self, batch: Batch, step: int) -> dict[str, float | None]:
        return update_on_halves(self, self.accumulator(step), batch, step, self.loss_name)

    def accumulator(self, step: int) -> Callable[[Batch, Any], Totals]:
        """What step ``step`` accumulates per half, with the per-chunk readouts when they are due."""
        every = self.readout_every
        readouts = every > 0 and (step + 1) % every == 0
        return lambda half, n: self._accumulate(half, n, readouts)

    @staticmethod
    def loss_name(k: int) -> str:
        """The loss a non-finite value is reported as."""
        return "loss"

    def local_gradients(self, batch: Batch) -> Blocks:
        return local_gradients(self.readout, self.method, self.params, batch)

    def _accumulate(self, batch: Batch, n: int | torch.Tensor, readouts: bool = True) -> Totals:
        """∇(L on ``batch`` / n) into ``.grad``; L's CE and, with ``readouts``, every chunk's CE (on the device)."""
        labels, spec = batch["labels"], LossSpec.global_(self.method)
        with self.autocast():
            hiddens = self.chunked.hiddens(batch["input_ids"], batch.get("attention_mask"))
        K = self.chunked.num_chunks
        totals, _ = sliced_backward_totals(self.readout, spec, hiddens[-1], None, labels, K, n)
        drop_frozen_grads(self.params, self.method.frozen_chunks)
        metrics: Totals = {}
        if readouts:
            with torch.no_grad():
                for k in range(1, K):
                    metrics[CHUNK.key(k, "ce")] = chunk_loss(self.readout, spec, hiddens[k].detach(), None, labels,
                                                          k, n).totals[SUM_KEYS.index("ce")]
        metrics[CHUNK.key(K, "ce")] = totals[SUM_KEYS.index("ce")]
        metrics[CHUNK.key(K, "loss")] = totals[SUM_KEYS.index("loss")]
        return metrics

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        return self.readout.autocast()

    def global_gradient(self, batch: Batch) -> Blocks:
        return global_gradient(self.readout, self.method, self.params, batch)


@dataclass(eq=False)
class UndetachedStep(ZeroLockStep):
    """ZeroLock's local losses summed (weights ``method.loss_weights``) and backpropagated through
    every chunk (``undetached.py``); ZeroLock's step in every other part (the update on halves, the
    optimizers, schedule and clipping, the gradients the probes read), only the accumulation differs."""

    def _accumulate(self, batch: Batch, n: int | torch.Tensor) -> Totals:
        """∇(Σ_k w_k·ℓ_k on ``batch`` / n) into ``.grad`` through every chunk; the loss terms (on the device)."""
        metrics = undetached_backward(self.readout, self.method, batch, n)
        drop_frozen_grads(self.params, self.method.frozen_chunks)
        return metrics


def build_step(chunked: ChunkedLM, method: MethodConfig, optim: OptimConfig, model_cfg: ModelConfig,
               total_steps: int, *, unbiased_grad_sq: bool = True, readout_every: int = 1) -> TrainStep:
    """The step object for ``method.name`` (``readout_every``: backprop's per-chunk readouts)."""
    parts = step_parts(chunked, optim, model_cfg, total_steps)
    if method.name == "backprop":
        return BackpropStep(chunked, method, *parts, unbiased_grad_sq=unbiased_grad_sq, readout_every=readout_every)
    if not method.detach:
        return UndetachedStep(chunked, method, *parts, unbiased_grad_sq=unbiased_grad_sq)
    return ZeroLockStep(chunked, method, *parts, unbiased_grad_sq=unbiased_grad_sq)
