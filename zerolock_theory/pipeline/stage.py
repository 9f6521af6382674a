"""One pipeline stage: chunk k of the model, its optimizer, its data stream.

Every stage process rebuilds exactly what the sequential trainer (``training.loop.setup``)
builds, in the same order: ``torch.manual_seed(run.seed)``, load the model, chunk it, attach
LoRA to the *whole* model (so chunk k's adapters get the same random initialisation as in the
single-process run), then build the per-chunk optimizers. Only then does the stage keep chunk
k: the other chunks' decoder layers are emptied (their weights never run here), while the
embedding (for h_0 on stage 1 and the per-batch mask/rotary context everywhere) and the frozen
readout (every stage reads out p_k and recomputes p_{k-1}) stay.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import torch

from zerolock_theory.config import MethodConfig, ModelConfig, OptimConfig, TrainConfig
from zerolock_theory.data import DataStream, LMData
from zerolock_theory.models import ChunkedLM
from zerolock_theory.models.loading import torch_dtype
from zerolock_theory.training.gradients import grad_sq
from zerolock_theory.training.loop import build_components
from zerolock_theory.training.losses import check_finite
from zerolock_theory.training.steps import step_parts

__all__ = ["Stage", "StageStep", "build_stage", "split_batch", "stage_device"]


class StageStep:
    """Chunk k's part of a step: its optimizer, schedule, clipping and readout loss.

    Built exactly like the sequential step (``steps._parts``: one optimizer per chunk, in chunk
    order), then keeps only chunk k's, so schedule and optimizer semantics cannot drift from
    ``steps.py``.
    """

    name = "stage"

    def __init__(self, chunked: ChunkedLM, k: int, method: MethodConfig, optim: OptimConfig,
                 model_cfg: ModelConfig, total_steps: int) -> None:
        self.readout, params, optimizers = step_parts(chunked, optim, model_cfg, total_steps)
        self.k, self.method = k, method
        self.params = [params[k - 1]]
        self.optimizers = optimizers.only(k)

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """bf16/fp16 autocast when configured, else a no-op."""
        return self.readout.autocast()

    def grad_sq(self) -> float:
        """‖∇_{ω_k}‖² of the accumulated gradient."""
        return grad_sq(self.params[0])

    def update(self, step: int, grad_sq: float) -> float:
        """Clip and apply chunk k's gradient at η_t (same code path as the sequential step)."""
        check_finite(grad_sq, step, f"chunk {self.k} gradient norm²")
        return self.optimizers.step(step, [grad_sq])


@dataclass
class Stage:
    """What one stage process holds."""

    k: int  # 1-based stage = chunk index
    K: int
    config: TrainConfig
    chunked: ChunkedLM
    step: StageStep
    data: LMData
    stream: DataStream
    device: torch.device

    @property
    def hidden_dtype(self) -> torch.dtype:
        """dtype of the hidden states sent between stages (the parameter dtype)."""
        return torch_dtype(self.config.model.dtype)

    @property
    def hidden_size(self) -> int:
        """d: width of the residual stream."""
        return int(self.chunked.config.hidden_size)


def stage_device(config: TrainConfig, k: int) -> torch.device:
    """cuda:(k-1 mod #GPUs) when the run is on CUDA, else cpu."""
    from zerolock_theory.models import resolve_device

    device = resolve_device(config.model.device)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", (k - 1) % torch.cuda.device_count())
    return device


def _release_other_chunks(chunked: ChunkedLM, k: int) -> None:
    """Empty the weights of every decoder layer outside chunk k (they never run here)."""
    keep = set(chunked.chunk_layers[k - 1])
    for i, layer in enumerate(chunked.layers):
        if i in keep:
            continue
        for p in layer.parameters():
            p.requires_grad_(False)
            p.data = torch.empty(0, dtype=p.dtype, device=p.device)


def build_stage(config: TrainConfig, k: int, device: torch.device) -> Stage:
    """Seed, load, chunk, attach adapters and build optimizers as ``setup`` does; keep chunk k."""
    chunked, _, data, stream = build_components(config, device)
    step = StageStep(chunked, k, config.method, config.optim, config.model, config.run.steps)
    _release_other_chunks(chunked, k)
    chunked.train()
    return Stage(k, config.model.chunks, config, chunked, step, data, stream, device)


def split_batch(batch: dict[str, torch.Tensor], micro_batches: int) -> list[dict[str, torch.Tensor]]:
    """Cut a batch into ``micro_batches`` equal row blocks (the batch size must divide)."""
    rows = batch["input_ids"].shape[0]
    if rows % micro_batches:
        raise ValueError(f"batch of {rows} rows does not split into {micro_batches} micro-batches")
    size = rows // micro_batches
    return [{key: value[i * size:(i + 1) * size] for key, value in batch.items()}
            for i in range(micro_batches)]


