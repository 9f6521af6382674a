"""The pipelined ZeroLock stage: early forwarding, streaming micro-batches, local updates.

Stage k runs, for every step t and micro-batch m:

1. h_{k-1}^{t,m}: the embedding (k = 1) or received from stage k-1;
2. h_k^{t,m} = F_k(h_{k-1}^{t,m}; ω_k^t), sent downstream at once (early forwarding);
3. the local loss ℓ_k from readout(h_k) against the labels and the detached
   p_{k-1} = softmax(readout(h_{k-1})), recomputed here with the frozen head, and its
   backward into ω_k (gradients accumulate over the M micro-batches, normalised by the
   step's labelled-token count n exactly as the sequential step normalises the full batch);

then the optimizer step ω_k^t → ω_k^{t+1} at η_t, a checkpoint every W steps, and an
acknowledgement upstream. Stage k+1 consumes h_k^t computed with ω_k^t, which is exactly what
the sequential ``ZeroLockStep`` feeds chunk k+1 at step t, so the pipelined run reproduces
the sequential run while stage k already works on step t+1 as stage k+1 works on step t.
Labels and input ids never travel: every stage draws the same deterministic ``DataStream``.
"""

from __future__ import annotations

import contextlib
from typing import Any

from zerolock_theory.pipeline.channels import ActivationReceiver, ActivationSender
from zerolock_theory.pipeline.checkpoints import (
    choose_checkpoint,
    restart_point,
    restore_stage,
    resume_stage,
    save_stage,
    stage_dir,
)
from zerolock_theory.pipeline.links import Link
from zerolock_theory.pipeline.memory import (
    SavedTensorMeter,
    cuda_peak_bytes,
    memory_split,
    unneeded_weights,
)
from zerolock_theory.pipeline.replay import ReplayBuffer
from zerolock_theory.pipeline.runtime import Runtime, StepTimer
from zerolock_theory.pipeline.stage import Stage, split_batch
from zerolock_theory.records import CHUNK, LR, TOKENS
from zerolock_theory.training.gradients import labelled_tokens
from zerolock_theory.training.logger import JsonlLogger
from zerolock_theory.training.losses import SUM_KEYS, LossSpec, check_finite, sliced_backward

__all__ = ["run_zerolock_stage"]



def _connect(stage: Stage, rt: Runtime) -> tuple[ActivationSender | None, ActivationReceiver | None, int]:
    """Form both links, downstream first: a restarted stage must learn what downstream needs
    before it picks the checkpoint to restart from."""
    k, K, opts = stage.k, stage.K, rt.options
    sender = receiver = None
    if k < K:
        buffer = ReplayBuffer(opts.replay_capacity(stage.config))
        sender = ActivationSender(Link(rt.store, k, k, rt.settings), buffer, opts.max_lead, rt.wire)
        sender.connect()
    start = 0
    if rt.recovering:
        path = choose_checkpoint(rt.run_dir, k, sender.resume[0] if sender else None)
        start = restore_stage(stage, path) if path is not None else 0
    elif rt.resume_step:
        start = resume_stage(stage, rt.run_dir, rt.resume_step)
    if k > 1:
        receiver = ActivationReceiver(Link(rt.store, k - 1, k, rt.settings), rt.wire, stage.device)
        receiver.connect(start)
    return sender, receiver, start


def _micro_step(stage: Stage, rt: Runtime, t: int, m: int, mb: dict, n: int,
                sender: ActivationSender | None, receiver: ActivationReceiver | None) -> dict[str, float]:
    """Forward, early send, local backward of one micro-batch; returns the loss sums."""
    k, step = stage.k, stage.step
    with step.autocast():
        h0, ctx = stage.chunked.embed(mb["input_ids"], mb.get("attention_mask"))
    if receiver is None:
        h_in = h0.detach()
    else:
        shape = (mb["input_ids"].shape[0], mb["input_ids"].shape[1], stage.hidden_size)
        h_in = receiver.recv(t, m, shape, stage.hidden_dtype)
    with step.autocast():
        hidden = stage.chunked.forward_chunk(k, h_in, ctx)
    if sender is not None:
        if hidden.dtype != stage.hidden_dtype:
            raise TypeError(f"stage {k} output dtype {hidden.dtype}, links carry {stage.hidden_dtype}")
        sender.send(t, m, hidden.detach())
    rt.maybe_fail(k, t, m)
    sums, _ = sliced_backward(step.readout, LossSpec.local(step.method, k), hidden, h_in, mb["labels"], k, n)
    return sums


def _receive_bytes(stage: Stage, micro_batches: int) -> int:
    """One received h_{k-1} message: (B/M)·T·d values of the links' dtype."""
    rows = stage.config.data.batch_size // micro_batches
    return rows * stage.config.data.seq_len * stage.hidden_size * stage.hidden_dtype.itemsize


def run_zerolock_stage(stage: Stage, rt: Runtime) -> dict[str, Any]:
    """Train chunk k for ``run.steps`` steps in the pipeline; returns the stage's report."""
    k, cfg, opts = stage.k, stage.config, rt.options
    sender, receiver, start = _connect(stage, rt)
    rt.store.set(f"ready/{k}", "1")  # from here on a failure is worth a restart
    rt.start_recovery_clock(k, start)
    logger = JsonlLogger(stage_dir(rt.run_dir, k) / "metrics.jsonl", keep_before=start)
    meter = SavedTensorMeter.for_module(stage.chunked) if opts.measure_memory else None
    timer = StepTimer(opts.warmup_steps, start)
    W = cfg.run.checkpoint_every
    try:
        for t in range(start, cfg.run.steps):
            if sender is not None:
                sender.wait_for_credit(t)
            timer.begin()
            batch = {key: v.to(stage.device) for key, v in stage.stream.next_batch().items()}
            n = labelled_tokens(batch)
            sums = dict.fromkeys(SUM_KEYS, 0.0)
            with meter if meter is not None else contextlib.nullcontext():
                for m, mb in enumerate(split_batch(batch, opts.micro_batches)):
                    for key, value in _micro_step(stage, rt, t, m, mb, n, sender, receiver).items():
                        sums[key] += value
            check_finite(sums["loss"], t, f"chunk {k} local loss")
            grad_sq = stage.step.grad_sq()
            lr = stage.step.update(t, grad_sq)
            record = {"step": t, LR: lr, TOKENS: n, CHUNK.key(k, "grad_norm_sq"): grad_sq,
                      **{CHUNK.key(k, key): value for key, value in sums.items()}}
            if (t + 1) % W == 0 or t + 1 == cfg.run.steps:
                logger.flush()
                save_stage(stage, rt.run_dir, t + 1)
            record[f"stage/{k}/step_time_s"] = timer.end(t, n)
            logger.log(record)
            if receiver is not None:
                down = sender.completed if sender is not None else None
                receiver.ack(t + 1, restart_point(t + 1, down, W))
            rt.after_step(t)
        if sender is not None:
            sender.finish(cfg.run.steps)
        if receiver is not None:
            receiver.finish()
    finally:
        logger.close()
    return {
        "stage": k, "start_step": start, "steps": cfg.run.steps,
        "peak_saved_bytes": meter.peak if meter is not None else None,
        "memory": memory_split(stage.chunked, stage.step.optimizers, meter.peak if meter is not None else None,
                               _receive_bytes(stage, opts.micro_batches) if receiver is not None else 0,
                               sender.buffer.peak_bytes if sender else 0,
                               unneeded_weights(stage.chunked, k, stage.K, readout_everywhere=True)),
        "cuda_max_memory_allocated": cuda_peak_bytes(stage.device),
        "tokens_per_s": timer.tokens_per_s, "step_times": timer.step_times, "step_cpu_times": timer.cpu_times,
        "bytes_sent": sender.bytes_sent if sender else 0,
        "replayed_messages": sender.replayed if sender else 0,
        "replay_peak_steps": sender.buffer.peak_steps if sender else 0,
        "replay_peak_bytes": sender.buffer.peak_bytes if sender else 0,
        "replay_capacity_steps": sender.buffer.capacity if sender else 0,
        "recovery": rt.recovery or None,
    }

