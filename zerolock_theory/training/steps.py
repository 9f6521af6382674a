"""The two step objects of the one training loop: ZeroLock and the backprop baseline.

Both implement the ``TrainStep`` protocol with the same parts (``ChunkOptimizers``, the
schedule, clipping, ``sliced_backward``) and the same update (``update_on_halves``); they
differ only in where the loss that updates ω_k comes from (docs/MATH.md, "Local losses"):

* ``ZeroLockStep``: chunk k runs on the detached input h^t_{k-1}, reads out p_k and
  minimizes its local loss ℓ_k (α·task + (1-α)·consistency to the detached p^t_{k-1}),
  then steps its optimizer, in order k = 1..K. No gradient crosses a chunk boundary.
* ``BackpropStep``: L = CE(p_y^ε, p_K) backpropagated through all chunks.

Ĝ_t (docs/MATH.md, "Theorem 1"): the minibatch's sequences are split into two halves, run one
after the other, both summed over labelled positions / n (n = labelled tokens of the whole
minibatch), so ``.grad`` ends as the full-batch gradient (the update is unchanged up to
float summation order). The first half's gradient is kept; with n_i the labelled tokens of
half i, the half-batch mean gradients are g^{(1)} = S_1/n_1 and g^{(2)} = S_2/n_2 and
``chunk/{k}/grad_sq_unbiased`` = ⟨g^{(1)}_k, g^{(2)}_k⟩, an unbiased estimate of ‖∇_{ω_k} R^t‖²
(it can be negative); ``train/grad_sq_unbiased`` is its sum over chunks. Null when the
minibatch has one sequence or a half has no labelled token.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import torch

from zerolock_theory.config import MethodConfig, ModelConfig, OptimConfig
from zerolock_theory.models.chunking import ChunkedLM
from zerolock_theory.training.gradients import (
    Blocks,
    count_labelled,
    global_gradient,
    grad_sq,
    half_inner,
    labelled_tokens,
    local_gradients,
    snapshot,
)
from zerolock_theory.training.losses import (
    LossSpec,
    NonFiniteLossError,
    Readout,
    check_finite,
    chunk_loss,
    sliced_backward,
)
from zerolock_theory.training.optimizers import ChunkOptimizers

__all__ = [
    "BackpropStep", "NonFiniteLossError", "TrainStep", "ZeroLockStep", "build_step", "global_grad_sq_unbiased",
    "split_halves", "step_parts", "update_on_halves",
]

Batch = dict[str, torch.Tensor]


class TrainStep(Protocol):
    """What the loop, the probes and the tests use of a step object."""

    name: str
    chunked: ChunkedLM
    method: MethodConfig
    readout: Readout
    params: Blocks
    optimizers: ChunkOptimizers
    capture_gradients: bool  # tests: keep each chunk's gradients before the update ...
    last_gradients: Blocks  # ... here

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


def update_on_halves(step_fn: TrainStep, accumulate: Callable[[Batch, int], dict[str, float]],
                     batch: Batch, step: int, loss_name: Callable[[int], str]) -> dict[str, float | None]:
    """Accumulate ``.grad`` over the two halves, measure ‖∇‖² and Ĝ_t, then update (module docstring)."""
    n = labelled_tokens(batch)
    halves = split_halves(batch)
    metrics: dict[str, float] = {}
    first: Blocks | None = None
    for i, half in enumerate(halves):
        for key, value in accumulate(half, n).items():
            metrics[key] = metrics.get(key, 0.0) + value
        if i == 0 and len(halves) == 2:
            first = snapshot(step_fn.params)
    K = len(step_fn.params)
    for k in range(1, K + 1):
        if f"chunk/{k}/loss" in metrics:
            check_finite(metrics[f"chunk/{k}/loss"], step, loss_name(k))
    sq = [grad_sq(ps) for ps in step_fn.params]
    inner = half_inner(step_fn.params, first, [count_labelled(h["labels"]) for h in halves], n)
    out: dict[str, float | None] = dict(metrics)
    for k in range(1, K + 1):
        out[f"chunk/{k}/grad_norm_sq"] = sq[k - 1]
        out[f"chunk/{k}/grad_sq_unbiased"] = None if inner is None else inner[k - 1]
    out["train/final_ce"] = metrics[f"chunk/{K}/ce"]
    out["train/grad_norm_sq"] = sum(sq)
    out["train/grad_sq_unbiased"] = None if inner is None else sum(inner)
    if step_fn.capture_gradients:
        step_fn.last_gradients = snapshot(step_fn.params)
    out["train/lr"] = step_fn.optimizers.step(step, sq)
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
    capture_gradients: bool = False
    last_gradients: Blocks = field(default_factory=list)

    def train_step(self, batch: Batch, step: int) -> dict[str, float | None]:
        return update_on_halves(self, self._accumulate, batch, step, lambda k: f"chunk {k} local loss")

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        return self.readout.autocast()

    def _accumulate(self, batch: Batch, n: int) -> dict[str, float]:
        """∇(Σ_k ℓ_k on ``batch`` / n) into ``.grad``, chunk by chunk; the loss terms."""
        labels, spec = batch["labels"], LossSpec.local(self.method)
        with self.autocast():
            hidden, ctx = self.chunked.embed(batch["input_ids"], batch.get("attention_mask"))
        metrics: dict[str, float] = {}
        log_prev = None  # log p_{k-1}, reused from chunk k-1's readout when unsliced
        for k in range(1, self.chunked.num_chunks + 1):
            h_in = hidden.detach()
            with self.autocast():
                hidden = self.chunked.forward_chunk(k, h_in, ctx)
            sums, log_prev = sliced_backward(self.readout, spec, hidden, h_in, labels, k, n, log_prev)
            metrics.update({f"chunk/{k}/{key}": value for key, value in sums.items()})
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
    capture_gradients: bool = False
    last_gradients: Blocks = field(default_factory=list)

    def train_step(self, batch: Batch, step: int) -> dict[str, float | None]:
        return update_on_halves(self, self._accumulate, batch, step, lambda k: "loss")

    def local_gradients(self, batch: Batch) -> Blocks:
        return local_gradients(self.readout, self.method, self.params, batch)

    def _accumulate(self, batch: Batch, n: int) -> dict[str, float]:
        """∇(L on ``batch`` / n) into ``.grad``; CE of every chunk's readout as metrics."""
        labels, spec = batch["labels"], LossSpec.global_(self.method)
        with self.autocast():
            hiddens = self.chunked.hiddens(batch["input_ids"], batch.get("attention_mask"))
        K = self.chunked.num_chunks
        sums, _ = sliced_backward(self.readout, spec, hiddens[-1], None, labels, K, n)
        metrics: dict[str, float] = {}
        with torch.no_grad():
            for k in range(1, K):
                metrics[f"chunk/{k}/ce"] = chunk_ce(self.readout, spec, hiddens[k].detach(), labels, k, n)
        metrics[f"chunk/{K}/ce"] = sums["ce"]
        metrics[f"chunk/{K}/loss"] = sums["loss"]
        return metrics

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        return self.readout.autocast()

    def global_gradient(self, batch: Batch) -> Blocks:
        return global_gradient(self.readout, self.method, self.params, batch)


def chunk_ce(readout: Readout, spec: LossSpec, hidden: torch.Tensor, labels: torch.Tensor, k: int, n: int) -> float:
    """CE(p_y^ε, p_k) of chunk k's readout, summed over labelled positions / n."""
    return chunk_loss(readout, spec, hidden, None, labels, k, n).sums["ce"]


def build_step(chunked: ChunkedLM, method: MethodConfig, optim: OptimConfig, model_cfg: ModelConfig,
               total_steps: int) -> TrainStep:
    """The step object for ``method.name``."""
    cls = {"zerolock": ZeroLockStep, "backprop": BackpropStep}[method.name]
    return cls(chunked, method, *step_parts(chunked, optim, model_cfg, total_steps))
