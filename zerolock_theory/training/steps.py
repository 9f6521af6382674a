"""The two step objects of the one training loop: ZeroLock and the backprop baseline.

Both own one optimizer per chunk and apply the same schedule, clipping and logging; they
differ only in where the loss that updates ω_k comes from (docs/MATH.md, "Local losses"):

* ``ZeroLockStep``: chunk k runs on the detached input h^t_{k-1}, reads out p_k and
  minimizes its local loss ℓ_k (α·task + (1-α)·consistency to the detached p^t_{k-1}),
  then steps its optimizer, in order k = 1..K. No gradient crosses a chunk boundary.
* ``BackpropStep``: L = CE(p_y^ε, p_K) backpropagated through all chunks.

The readout loss is computed in slices of the sequence (``readout_chunk_size``) into a leaf
copy of h_k, then pushed through the chunk, so at most one slice of fp32 logits exists.

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
import math
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F

from zerolock_theory.config import MethodConfig, ModelConfig, OptimConfig
from zerolock_theory.models.chunking import ChunkedLM
from zerolock_theory.theory.losses import IGNORE_INDEX, local_loss_from_logits
from zerolock_theory.training.schedules import learning_rate

__all__ = ["BackpropStep", "NonFiniteLossError", "StepBase", "ZeroLockStep", "build_step", "split_halves"]


class NonFiniteLossError(RuntimeError):
    """A loss or gradient became NaN or infinite; training stops with the step and chunk."""


def _build_optimizer(params: list[torch.nn.Parameter], optim: OptimConfig) -> torch.optim.Optimizer:
    if optim.name == "sgd":
        return torch.optim.SGD(params, lr=optim.lr, momentum=optim.momentum, weight_decay=optim.weight_decay)
    return torch.optim.AdamW(params, lr=optim.lr, betas=optim.betas, weight_decay=optim.weight_decay)


def split_halves(batch: dict[str, torch.Tensor]) -> list[dict[str, torch.Tensor]]:
    """The minibatch's sequences in two halves (rows ``[:b//2]`` and ``[b//2:]``); one part if b < 2."""
    rows = batch["input_ids"].shape[0]
    if rows < 2:
        return [batch]
    mid = rows // 2
    return [{k: v[:mid] for k, v in batch.items()}, {k: v[mid:] for k, v in batch.items()}]


def _labelled(labels: torch.Tensor) -> int:
    return int((labels != IGNORE_INDEX).sum())


class StepBase:
    """Shared machinery: per-chunk optimizers, schedule, clipping, readout slices."""

    name = "base"

    def __init__(
        self,
        chunked: ChunkedLM,
        method: MethodConfig,
        optim: OptimConfig,
        model_cfg: ModelConfig,
        total_steps: int,
    ) -> None:
        self.chunked = chunked
        self.method = method
        self.optim_cfg = optim
        self.total_steps = total_steps
        self.slice_size = model_cfg.readout_chunk_size
        self.autocast_dtype = getattr(torch, model_cfg.autocast) if model_cfg.autocast else None
        self.params = [chunked.chunk_parameters(k) for k in range(1, chunked.num_chunks + 1)]
        for k, params in enumerate(self.params, start=1):
            if not params:
                raise ValueError(f"chunk {k} has no trainable parameters")
        self.optimizers = [_build_optimizer(p, optim) for p in self.params]
        self.capture_gradients = False  # tests: keep each chunk's gradients before the update
        self.last_log_probs: torch.Tensor | None = None
        self.last_gradients: list[list[torch.Tensor]] = []

    # -- helpers ---------------------------------------------------------------------------
    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """bf16/fp16 autocast when configured, else a no-op."""
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        device = next(self.chunked.parameters()).device.type
        return torch.autocast(device_type=device, dtype=self.autocast_dtype)

    def _slices(self, length: int) -> Iterator[slice]:
        size = self.slice_size or length
        for start in range(0, length, size):
            yield slice(start, min(length, start + size))

    def prev_log_probs(self, h_prev: torch.Tensor | None, k: int) -> torch.Tensor | None:
        """log p_{k-1} (detached) from h_{k-1}; p_0 is the embedding readout or uniform."""
        if h_prev is None:
            return None
        with torch.no_grad():
            logits = self.chunked.readout(h_prev).float()
            if k == 1 and self.method.p0 == "uniform":
                return torch.full_like(logits, -math.log(logits.shape[-1]))
            return F.log_softmax(logits, dim=-1)

    def readout_loss(
        self,
        hidden: torch.Tensor,
        h_prev: torch.Tensor | None,
        labels: torch.Tensor,
        k: int,
        alpha: float,
        normalizer: float,
        backward: bool,
        direction: str | None = None,
        log_prev: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor | None, dict[str, float]]:
        """Local loss of chunk k, summed over labelled positions / ``normalizer``.

        ``backward=True``: computed slice by slice into a leaf copy of ``hidden`` and
        backpropagated into ``hidden``'s graph; returns (None, sums). ``backward=False``:
        returns the loss tensor with its graph (one slice) for ``torch.autograd.grad``.
        ``direction`` defaults to the method's; the global loss L always uses "forward" (CE).
        ``log_prev``: log p_{k-1} already at hand (unsliced only), else recomputed from
        ``h_prev``. When the loss ran as one slice, ``self.last_log_probs`` keeps log p_k
        (detached) for the next chunk; otherwise it is None.
        """
        direction = direction or self.method.direction
        leaf = hidden.detach().requires_grad_(True) if backward else hidden
        sums = {"loss": 0.0, "task": 0.0, "consistency": 0.0, "ce": 0.0}
        total = None
        slices = list(self._slices(hidden.shape[1])) if backward else [slice(None)]
        self.last_log_probs = None
        for s in slices:
            if log_prev is None or len(slices) > 1:
                log_prev = self.prev_log_probs(h_prev[:, s] if h_prev is not None else None, k)
            with self.autocast():
                logits = self.chunked.readout(leaf[:, s])
            terms = local_loss_from_logits(
                logits, labels[:, s], log_prev, alpha, direction, self.method.epsilon
            )
            loss = terms.loss.sum() / normalizer
            if backward:
                loss.backward()
            else:
                total = loss
            for key in sums:
                sums[key] += float(getattr(terms, key).detach().sum()) / normalizer
        if len(slices) == 1:
            self.last_log_probs = terms.log_p.detach()
        if backward:
            hidden.backward(leaf.grad)
        return total, sums

    def _update(self, step: int, grad_sq: list[float]) -> float:
        """Check, clip and apply each chunk's gradient at η_t; returns η_t."""
        lr = learning_rate(self.optim_cfg, step, self.total_steps)
        if self.capture_gradients:
            self.last_gradients = [[p.grad.detach().clone() for p in ps] for ps in self.params]
        for k, (opt, params) in enumerate(zip(self.optimizers, self.params, strict=True), start=1):
            if not math.isfinite(grad_sq[k - 1]):
                raise NonFiniteLossError(f"step {step}: chunk {k} gradient is not finite")
            if self.optim_cfg.max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(params, self.optim_cfg.max_grad_norm)
            for group in opt.param_groups:
                group["lr"] = lr
            opt.step()
            opt.zero_grad(set_to_none=True)
        return lr

    def train_step(self, batch: dict[str, torch.Tensor], step: int) -> dict[str, float | None]:
        """One update ω^t → ω^{t+1} on the full minibatch; metrics include Ĝ_t (module docstring)."""
        n = max(1, _labelled(batch["labels"]))
        halves = split_halves(batch)
        metrics: dict[str, float] = {}
        first: list[list[torch.Tensor]] | None = None
        for i, half in enumerate(halves):
            for key, value in self._accumulate(half, n).items():
                metrics[key] = metrics.get(key, 0.0) + value
            if i == 0 and len(halves) == 2:
                first = [[self._grad_of(p).clone() for p in ps] for ps in self.params]
        K = self.chunked.num_chunks
        for k in range(1, K + 1):
            if f"chunk/{k}/loss" in metrics:
                what = "loss" if self.name == "backprop" else f"chunk {k} local loss"
                self._check(metrics[f"chunk/{k}/loss"], step, what)
        grad_sq = [self._grad_sq(k) for k in range(1, K + 1)]
        inner = self._half_inner(first, [_labelled(h["labels"]) for h in halves], n)
        out: dict[str, float | None] = dict(metrics)
        for k in range(1, K + 1):
            out[f"chunk/{k}/grad_norm_sq"] = grad_sq[k - 1]
            out[f"chunk/{k}/grad_sq_unbiased"] = None if inner is None else inner[k - 1]
        out["train/final_ce"] = metrics[f"chunk/{K}/ce"]
        out["train/grad_norm_sq"] = sum(grad_sq)
        out["train/grad_sq_unbiased"] = None if inner is None else sum(inner)
        out["train/lr"] = self._update(step, grad_sq)
        return out

    def _accumulate(self, batch: dict[str, torch.Tensor], n: int) -> dict[str, float]:
        """Add ∇(loss on ``batch`` summed / n) into ``.grad``; return the metric sums (subclasses)."""
        raise NotImplementedError

    def _half_inner(self, first, counts: list[int], n: int) -> list[float] | None:
        """⟨g^{(1)}_k, g^{(2)}_k⟩ per chunk from the first half's and the full accumulated gradient."""
        if first is None or min(counts) == 0:
            return None
        scale = n * n / (counts[0] * counts[1])
        out = []
        for ps, firsts in zip(self.params, first, strict=True):
            total = 0.0
            for p, g1 in zip(ps, firsts, strict=True):
                g1 = g1.double()
                total += float(torch.dot(g1.reshape(-1), (self._grad_of(p).double() - g1).reshape(-1)))
            out.append(scale * total)
        return out

    @staticmethod
    def _grad_of(p: torch.nn.Parameter) -> torch.Tensor:
        return p.grad.detach() if p.grad is not None else torch.zeros_like(p)

    def _grad_sq(self, k: int) -> float:
        return float(sum(p.grad.detach().float().pow(2).sum() for p in self.params[k - 1] if p.grad is not None))

    @staticmethod
    def _check(value: float, step: int, what: str) -> None:
        if not math.isfinite(value):
            raise NonFiniteLossError(f"step {step}: {what} is {value}; lower the learning rate or check the data")

    # -- gradients for probes and tests (no optimizer, no .grad) -----------------------------
    def global_gradient(self, batch: dict[str, torch.Tensor]) -> list[list[torch.Tensor]]:
        """Blocks ∇_{ω_k} L of L = CE(p_y^ε, p_K) by full backprop, per chunk."""
        labels = batch["labels"]
        n = max(1, int((labels != IGNORE_INDEX).sum()))
        hiddens = self.chunked.hiddens(batch["input_ids"], batch.get("attention_mask"))
        loss, _ = self.readout_loss(hiddens[-1], None, labels, self.chunked.num_chunks, 1.0, n, backward=False, direction="forward")
        flat = [p for ps in self.params for p in ps]
        grads = torch.autograd.grad(loss, flat)
        out, i = [], 0
        for ps in self.params:
            out.append(list(grads[i : i + len(ps)]))
            i += len(ps)
        return out

    def local_gradients(self, batch: dict[str, torch.Tensor]) -> list[list[torch.Tensor]]:
        """Blocks ∇_{ω_k} ℓ_k of each chunk's local loss on detached inputs."""
        labels = batch["labels"]
        n = max(1, int((labels != IGNORE_INDEX).sum()))
        hidden, ctx = self.chunked.embed(batch["input_ids"], batch.get("attention_mask"))
        out = []
        for k in range(1, self.chunked.num_chunks + 1):
            h_in = hidden.detach()
            hidden = self.chunked.forward_chunk(k, h_in, ctx)
            loss, _ = self.readout_loss(hidden, h_in, labels, k, self.method.alpha, n, backward=False)
            out.append(list(torch.autograd.grad(loss, self.params[k - 1])))
        return out


class ZeroLockStep(StepBase):
    """Each chunk: forward on detached inputs, local backward; then every optimizer steps."""

    name = "zerolock"

    def _accumulate(self, batch: dict[str, torch.Tensor], n: int) -> dict[str, float]:
        labels = batch["labels"]
        with self.autocast():
            hidden, ctx = self.chunked.embed(batch["input_ids"], batch.get("attention_mask"))
        metrics: dict[str, float] = {}
        log_prev = None  # log p_{k-1}, reused from chunk k-1's readout when unsliced
        for k in range(1, self.chunked.num_chunks + 1):
            h_in = hidden.detach()
            with self.autocast():
                hidden = self.chunked.forward_chunk(k, h_in, ctx)
            _, sums = self.readout_loss(
                hidden, h_in, labels, k, self.method.alpha, n, backward=True, log_prev=log_prev
            )
            log_prev = self.last_log_probs
            for key, value in sums.items():
                metrics[f"chunk/{k}/{key}"] = value
        return metrics


class BackpropStep(StepBase):
    """L = CE(p_y^ε, p_K) through all chunks; same adapters, optimizers and schedule."""

    name = "backprop"

    def _accumulate(self, batch: dict[str, torch.Tensor], n: int) -> dict[str, float]:
        labels = batch["labels"]
        with self.autocast():
            hiddens = self.chunked.hiddens(batch["input_ids"], batch.get("attention_mask"))
        K = self.chunked.num_chunks
        _, sums = self.readout_loss(hiddens[-1], None, labels, K, 1.0, n, backward=True, direction="forward")
        metrics: dict[str, float] = {}
        with torch.no_grad():
            for k in range(1, K):
                _, chunk_sums = self.readout_loss(
                    hiddens[k].detach(), None, labels, k, 1.0, n, backward=False, direction="forward"
                )
                metrics[f"chunk/{k}/ce"] = chunk_sums["ce"]
        metrics[f"chunk/{K}/ce"] = sums["ce"]
        metrics[f"chunk/{K}/loss"] = sums["loss"]
        return metrics


def build_step(chunked: ChunkedLM, method: MethodConfig, optim: OptimConfig, model_cfg: ModelConfig, total_steps: int) -> StepBase:
    """The step object for ``method.name``."""
    cls = {"zerolock": ZeroLockStep, "backprop": BackpropStep}[method.name]
    return cls(chunked, method, optim, model_cfg, total_steps)
