"""GPipe and 1F1B baselines on PyTorch's own pipeline engine (``torch.distributed.pipelining``).

Same model, stages, micro-batches, adapters and per-chunk optimizers as the ZeroLock
pipeline, but *backprop* semantics: L = CE(p_y^ε, p_K) on the last stage, gradients flow back
through every stage (``PipelineStage`` + ``ScheduleGPipe`` / ``Schedule1F1B``). The loss of
micro-batch m is Σ_{positions in m} CE / n with n the step's labelled-token count and
``scale_grads=False``, so the micro-batch losses sum to the full-batch loss of
``BackpropStep`` and the accumulated gradients equal its gradients.
"""

from __future__ import annotations

import contextlib
import datetime
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from zerolock_theory.models import ChunkedLM
from zerolock_theory.pipeline.checkpoints import resume_stage, save_stage, stage_dir
from zerolock_theory.pipeline.memory import (
    SavedTensorMeter,
    cuda_peak_bytes,
    memory_split,
    storage_bytes,
    unneeded_weights,
)
from zerolock_theory.pipeline.runtime import Runtime, StepTimer
from zerolock_theory.pipeline.stage import Stage
from zerolock_theory.records import CHUNK, FINAL_CE, LR, TOKENS
from zerolock_theory.training.gradients import labelled_tokens
from zerolock_theory.training.logger import JsonlLogger
from zerolock_theory.training.losses import LossSpec, check_finite, chunk_loss

__all__ = ["StageModule", "run_baseline_stage"]


class StageModule(nn.Module):
    """Chunk k as a pipeline-stage module: (h_{k-1} or input ids, ids, mask) → h_k.

    Every stage receives the micro-batch's ``ids`` and ``mask`` as keyword inputs (its own
    data stream provides them) to rebuild the causal mask and rotary context; stage 1 also
    embeds them into h_0.
    """

    def __init__(self, chunked: ChunkedLM, k: int) -> None:
        super().__init__()
        self.chunked, self.k = chunked, k

    def forward(self, x: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h0, ctx = self.chunked.embed(ids, mask)
        return self.chunked.forward_chunk(self.k, h0 if self.k == 1 else x, ctx)


def _schedule(name: str) -> Any:
    from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe

    return {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}[name]


def _init_group(stage: Stage, rt: Runtime) -> None:
    """The world process group of the K stage processes (the pipelining engine needs it)."""
    dist.init_process_group(
        rt.settings.backend, store=dist.PrefixStore(f"baseline/{rt.options.schedule}", rt.store),
        rank=stage.k - 1, world_size=stage.K, timeout=datetime.timedelta(seconds=rt.options.comm_timeout_s),
    )


def _recv_buffer_bytes(pstage: Any) -> int:
    """The engine's receive buffers: activations from upstream and gradients from downstream."""
    infos = [*getattr(pstage, "args_recv_info", {}).values(), *getattr(pstage, "grad_recv_info", {}).values()]
    return storage_bytes(getattr(info, "buffer", None) for group in infos for info in group)


def run_baseline_stage(stage: Stage, rt: Runtime) -> dict[str, Any]:
    """Train chunk k with backprop through the pipeline; returns the stage's report."""
    from torch.distributed.pipelining import PipelineStage

    k, K, cfg, opts = stage.k, stage.K, stage.config, rt.options
    _init_group(stage, rt)
    step_fn = stage.step
    current: dict[str, Any] = {"n": 1, "sums": []}

    def loss_fn(hidden: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        part = chunk_loss(step_fn.readout, LossSpec.global_(step_fn.method), hidden, None, labels, K, current["n"])
        current["sums"].append(part.sums)  # the engine's first step also calls it once for shape inference
        return part.loss

    module = StageModule(stage.chunked, k)
    pstage = PipelineStage(module, k - 1, K, stage.device)
    schedule = _schedule(opts.schedule)(pstage, n_microbatches=opts.micro_batches, loss_fn=loss_fn,
                                        scale_grads=False)
    start = resume_stage(stage, rt.run_dir, rt.resume_step) if rt.resume_step else 0
    logger = JsonlLogger(stage_dir(rt.run_dir, k) / "metrics.jsonl", keep_before=start)
    meter = SavedTensorMeter.for_module(stage.chunked) if opts.measure_memory else None
    timer = StepTimer(opts.warmup_steps, start)
    try:
        for t in range(start, cfg.run.steps):
            timer.begin()
            batch = {key: v.to(stage.device) for key, v in stage.stream.next_batch().items()}
            current["n"], current["sums"] = labelled_tokens(batch), []
            ids, mask = batch["input_ids"], batch["attention_mask"]
            args = (ids,) if k == 1 else ()
            losses: list[torch.Tensor] = []
            with meter if meter is not None else contextlib.nullcontext():
                schedule.step(*args, ids=ids, mask=mask, target=batch["labels"], losses=losses)
            grad_sq = step_fn.grad_sq()
            lr = step_fn.update(t, grad_sq)
            record: dict[str, Any] = {"step": t, LR: lr, TOKENS: current["n"],
                                      CHUNK.key(k, "grad_norm_sq"): grad_sq}
            if k == K:
                loss = float(sum(float(v.detach()) for v in losses))
                check_finite(loss, t, "loss")
                record[CHUNK.key(K, "loss")] = loss
                record[FINAL_CE] = sum(s["ce"] for s in current["sums"][-opts.micro_batches:])
            if (t + 1) % cfg.run.checkpoint_every == 0 or t + 1 == cfg.run.steps:
                save_stage(stage, rt.run_dir, t + 1)
            record[f"stage/{k}/step_time_s"] = timer.end(t, current["n"])
            logger.log(record)
        dist.barrier()
    finally:
        logger.close()
    return {
        "stage": k, "start_step": start, "steps": cfg.run.steps,
        "peak_saved_bytes": meter.peak if meter is not None else None,
        "memory": memory_split(stage.chunked, step_fn.optimizers, meter.peak if meter is not None else None,
                               _recv_buffer_bytes(pstage),
                               unneeded=unneeded_weights(stage.chunked, k, K, readout_everywhere=False)),
        "cuda_max_memory_allocated": cuda_peak_bytes(stage.device),
        "tokens_per_s": timer.tokens_per_s, "step_times": timer.step_times, "step_cpu_times": timer.cpu_times, "recovery": None,
    }
