"""The fixed-point experiment: which target does training reach? (docs/MATH.md, "Lemma 2").

For each seed s: load the model (``TrainConfig`` defaults with the settings below), chunk it
into K chunks and attach LoRA adapters seeded by s; take the probe batch of
``n_positions`` held-out positions chosen by s; compute h_{k-1} (chunks 1..k-1 at their
initial, untrained adapters) and log p_{k-1} ONCE, detached. Then, from chunk k's initial
adapters, train chunk k alone (Adam, ``lr``, full batch, the other chunks untouched) on
ℓ^F_k, and separately, from the same start, on ℓ^R_k (both with p_y^ε, ε = ``epsilon``):

Stopping criterion. Let L_t be the local loss at step t and B_t = min_{s ≤ t} L_s. Training
stops at the first t ≥ ``window`` with B_{t−window} − B_t < ``tolerance``·|B_{t−window}|
(the best loss improved by less than a relative ``tolerance`` over the last ``window``
steps: "converged"), or after ``steps_max`` steps ("not converged", counted in the result).
The reached readout is the one at the best loss B (its adapters are kept). TV to m_k and g_k
are taken over the full vocabulary, with the entropy-matched null of the start readout
(``analyses.lemma2.fixed_point.reached``), and
``analyses.lemma2.fixed_point.fixed_point_decision`` decides.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from analyses.lemma2.fixed_point import (
    FixedPointResult,
    FixedPointSeed,
    Reached,
    fixed_point_decision,
    reached,
)
from zerolock_theory.config import TrainConfig
from zerolock_theory.models import ChunkedLM, resolve_device
from zerolock_theory.theory.lemma2 import readout_distances
from zerolock_theory.theory.losses import local_loss_from_logits
from zerolock_theory.training.loop import build_components

__all__ = ["FixedPointSettings", "SeedBatch", "prepare_seed", "run_fixed_point", "train_chunk_alone", "train_from_start"]


@dataclass(frozen=True)
class FixedPointSettings:
    """The experiment's settings; every value is checked on construction (``ValueError``)."""

    model: str = "embedded"
    chunks: int = 4
    chunk: int = 1
    seeds: int = 5
    first_seed: int = 0
    alpha: float = 0.5
    epsilon: float = 0.1
    lr: float = 1e-2
    steps_max: int = 400
    window: int = 20
    tolerance: float = 1e-3
    n_positions: int = 64
    lora_rank: int = 8
    data: str = "embedded"
    text_field: str = "text"
    """The corpus's text field or column (as ``data.text_field``)."""
    seq_len: int = 128
    """Tokens per sequence (as ``data.seq_len``; a verify suite passes its runs' value)."""
    batch_size: int = 8
    """Sequences per held-out batch (as ``data.batch_size``)."""
    eval_batches: int = 4
    """Held-out batches (as ``data.eval_batches``)."""
    eval_fraction: float = 0.1
    """Share of blocks held out (as ``data.eval_fraction``; the probe batch is drawn from them)."""
    data_seed: int = 0
    """Seed of the train/held-out split (as ``data.seed``)."""
    device: str = "auto"
    """Where the chunks run: auto (cuda when present, else cpu), cpu, mps, cuda or cuda:N (as ``model.device``)."""
    dtype: str = "float32"
    """Parameter dtype (as ``model.dtype``)."""
    autocast: str | None = None
    """Autocast dtype of the forward passes, bfloat16 or float16; None = none (as ``model.autocast``)."""

    def __post_init__(self) -> None:
        checks = [
            (self.chunks >= 1, f"chunks must be >= 1, got {self.chunks}"),
            (1 <= self.chunk <= self.chunks, f"chunk must lie in [1, {self.chunks}], got {self.chunk}"),
            (self.seeds >= 1, f"seeds must be >= 1, got {self.seeds}"),
            (self.first_seed >= 0, f"first_seed must be >= 0, got {self.first_seed}"),
            (0.0 < self.alpha < 1.0, f"alpha must lie in (0, 1), got {self.alpha}"),
            (0.0 < self.epsilon < 1.0, f"epsilon must lie in (0, 1) (the reverse loss needs epsilon > 0), "
                                       f"got {self.epsilon}"),
            (math.isfinite(self.lr) and self.lr > 0, f"lr must be a positive number, got {self.lr}"),
            (self.window >= 1, f"window must be >= 1, got {self.window}"),
            (self.steps_max > self.window, f"steps_max must exceed window ({self.window}), got {self.steps_max}"),
            (math.isfinite(self.tolerance) and self.tolerance > 0, f"tolerance must be > 0, got {self.tolerance}"),
            (self.n_positions >= 1, f"n_positions must be >= 1, got {self.n_positions}"),
            (self.lora_rank >= 1, f"lora_rank must be >= 1, got {self.lora_rank}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    def config(self, seed: int) -> TrainConfig:
        """The ``TrainConfig`` that builds the model, adapters and data of one seed."""
        return TrainConfig.from_dict({
            "model": {"path": self.model, "chunks": self.chunks, "device": self.device, "dtype": self.dtype,
                      "autocast": self.autocast, "lora": {"rank": self.lora_rank}},
            "data": {"source": self.data, "text_field": self.text_field, "seq_len": self.seq_len,
                     "batch_size": self.batch_size, "eval_batches": self.eval_batches,
                     "eval_fraction": self.eval_fraction, "seed": self.data_seed, "order_seed": seed},
            "method": {"alpha": self.alpha, "epsilon": self.epsilon},
            "run": {"seed": seed, "progress": False},
        })


def _autocast(chunked: ChunkedLM, settings: FixedPointSettings) -> contextlib.AbstractContextManager:
    """The settings' autocast on the chunks' device (a no-op when None)."""
    if settings.autocast is None:
        return contextlib.nullcontext()
    device = next(chunked.parameters()).device.type
    return torch.autocast(device_type=device, dtype=getattr(torch, settings.autocast))


def _loss(chunked: ChunkedLM, k: int, hidden: torch.Tensor, ctx, mask: torch.Tensor, labels: torch.Tensor,
          log_prev: torch.Tensor, settings: FixedPointSettings, direction: str):
    with _autocast(chunked, settings):
        logits = chunked.readout(chunked.forward_chunk(k, hidden, ctx)[mask])
    terms = local_loss_from_logits(logits, labels, log_prev, settings.alpha, direction, settings.epsilon)
    return terms.loss.mean(), terms.log_p


def train_chunk_alone(chunked: ChunkedLM, k: int, hidden: torch.Tensor, ctx, mask: torch.Tensor,
                      labels: torch.Tensor, log_prev: torch.Tensor, log_start: torch.Tensor,
                      settings: FixedPointSettings, direction: str) -> tuple[Reached, torch.Tensor]:
    """Train chunk k's adapters from where they are on the fixed batch (module docstring).

    ``log_start``: chunk k's readout before training (the null's base). Returns the
    training's ``Reached`` record and the reached log p^d [N, V]; the chunk's parameters
    are left at the best point.
    """
    params = chunked.chunk_parameters(k)
    if not params:
        raise ValueError(f"chunk {k} has no trainable parameters (LoRA adapters are required)")
    optimizer = torch.optim.Adam(params, lr=settings.lr)
    best, best_params, bests, start, steps, converged = math.inf, None, [], math.nan, 0, False
    for t in range(settings.steps_max):
        loss, _ = _loss(chunked, k, hidden, ctx, mask, labels, log_prev, settings, direction)
        value = float(loss.detach())
        if not math.isfinite(value):
            raise ValueError(f"{direction} training of chunk {k}: the local loss is {value} at step {t}; lower lr")
        start = value if t == 0 else start
        if value < best:
            best, best_params = value, [p.detach().clone() for p in params]
        bests.append(best)
        steps = t
        if t >= settings.window and bests[t - settings.window] - best < settings.tolerance * abs(bests[t - settings.window]):
            converged = True
            break
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        for p, q in zip(params, best_params or [], strict=True):
            p.copy_(q)
        _, log_p = _loss(chunked, k, hidden, ctx, mask, labels, log_prev, settings, direction)
    record = reached(direction, log_prev, log_start, log_p, labels, settings.alpha, settings.epsilon, steps=steps,
                     converged=converged, loss_start=start, loss_end=best)
    return record, log_p


@dataclass
class SeedBatch:
    """One seed's model and fixed batch: chunk k's input h_{k-1} (and context), the label mask and
    labels, log p_{k-1}, the start readout log p^0, chunk k's initial adapters, the start's distances."""

    chunked: ChunkedLM
    k: int
    hidden: torch.Tensor
    ctx: object
    mask: torch.Tensor
    labels: torch.Tensor
    log_prev: torch.Tensor
    start_log_p: torch.Tensor
    initial: list[torch.Tensor]
    start: dict[str, torch.Tensor]


def prepare_seed(settings: FixedPointSettings, seed: int) -> SeedBatch:
    """Build seed ``seed``'s model, adapters and probe batch; compute h_{k-1}, log p_{k-1} and p^0 once."""
    config = settings.config(seed)
    chunked, _, data, _ = build_components(config, resolve_device(settings.device))
    chunked.train(False)  # no dropout: the fixed batch gives one loss per point
    batch = data.probe_batch(settings.n_positions, seed)
    device = next(chunked.parameters()).device
    ids, attention, all_labels = (batch[name].to(device) for name in ("input_ids", "attention_mask", "labels"))
    mask = all_labels != -100
    labels = all_labels[mask]
    k = settings.chunk
    with torch.no_grad(), _autocast(chunked, settings):
        hidden, ctx = chunked.embed(ids, attention)
        for j in range(1, k):
            hidden = chunked.forward_chunk(j, hidden, ctx)
        log_prev = torch.log_softmax(chunked.readout(hidden[mask]).float(), dim=-1)
        start_log_p = torch.log_softmax(chunked.readout(chunked.forward_chunk(k, hidden, ctx)[mask]).float(), dim=-1)
    start = readout_distances(log_prev, start_log_p, labels, settings.alpha, settings.epsilon)
    initial = [p.detach().clone() for p in chunked.chunk_parameters(k)]
    return SeedBatch(chunked, k, hidden, ctx, mask, labels, log_prev, start_log_p, initial, start)


def train_from_start(b: SeedBatch, settings: FixedPointSettings, direction: str,
                     labels: torch.Tensor | None = None) -> tuple[Reached, torch.Tensor]:
    """Reset chunk k to its initial adapters and train it alone with ``direction``'s loss on
    ``labels`` (default: the batch's own); the record's distances use the batch's own labels."""
    with torch.no_grad():
        for p, q in zip(b.chunked.chunk_parameters(b.k), b.initial, strict=True):
            p.copy_(q)
    if labels is None:
        return train_chunk_alone(b.chunked, b.k, b.hidden, b.ctx, b.mask, b.labels, b.log_prev, b.start_log_p,
                                 settings, direction)
    _, log_p = train_chunk_alone(b.chunked, b.k, b.hidden, b.ctx, b.mask, labels, b.log_prev, b.start_log_p,
                                 settings, direction)
    return reached(direction, b.log_prev, b.start_log_p, log_p, b.labels, settings.alpha, settings.epsilon), log_p


def _one_seed(settings: FixedPointSettings, seed: int) -> FixedPointSeed:
    began = time.perf_counter()
    b = prepare_seed(settings, seed)
    out = {direction: train_from_start(b, settings, direction)[0] for direction in ("forward", "reverse")}
    return FixedPointSeed(seed, out["forward"], out["reverse"], float(b.start["tv_m"].mean()),
                         float(b.start["tv_g"].mean()), float(b.start["tv_m_g"].mean()), time.perf_counter() - began)


def run_fixed_point(settings: FixedPointSettings, progress: Callable[[FixedPointSeed], None] | None = None,
                    level: float = 0.95) -> FixedPointResult:
    """Run every seed and decide (``analyses.lemma2.fixed_point.fixed_point_decision``)."""
    records = []
    for seed in range(settings.first_seed, settings.first_seed + settings.seeds):
        records.append(_one_seed(settings, seed))
        if progress is not None:
            progress(records[-1])
    described = {name: str(value) for name, value in asdict(settings).items()}
    return fixed_point_decision(records, settings.chunk, settings.alpha, settings.epsilon, level, described)
