"""The one training loop: ``setup`` builds a ``Run``, ``execute`` runs it.

ZeroLock and backprop differ only in ``Run.step_fn`` (see ``steps.py``). Instruments attach
through the hook protocol of ``hooks.py``; the caller builds them and the loop names none.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from zerolock_theory import records
from zerolock_theory.config import TrainConfig, check_sources
from zerolock_theory.data import DataStream, LMData
from zerolock_theory.models import ChunkedLM, attach_adapters, load_model, resolve_device
from zerolock_theory.records import (
    DATA_EPOCH,
    EVAL_CE,
    EVAL_CE_INITIAL,
    EVAL_CHUNK,
    EVAL_OBJECTIVE,
    EVAL_OBJECTIVE_INITIAL,
    FINAL_CE,
    GLOBAL_GRAD_SQ_UNBIASED,
    GRAD_SQ_UNBIASED,
    STEP_TIME_S,
    TEST,
    TEST_CE,
    TEST_CHUNK,
    TOKENS,
    TOKENS_PER_S,
)
from zerolock_theory.theory.losses import IGNORE_INDEX, local_loss_from_logits
from zerolock_theory.training.export import save_run_adapter
from zerolock_theory.training.gradients import count_labelled
from zerolock_theory.training.hooks import Hook, HookContext
from zerolock_theory.training.logger import open_loggers
from zerolock_theory.training.losses import LossSpec, prev_log_probs
from zerolock_theory.training.manifest import write_manifest
from zerolock_theory.training.resume import (
    check_metrics,
    check_resume,
    read_saved_config,
    start_ce,
    write_text_atomic,
)
from zerolock_theory.training.rundir import check_out, prepare_out
from zerolock_theory.training.state import (
    TrainState,
    capture_rng,
    checkpoint_step,
    latest_checkpoint,
    load_checkpoint,
    restore_rng,
    save_checkpoint,
)
from zerolock_theory.training.steps import TrainStep, build_step, global_grad_sq_unbiased

__all__ = ["Run", "RunSummary", "build_components", "evaluate", "execute", "quiet_mode", "setup", "step_record", "train"]

TIMING_KEYS = (TOKENS_PER_S, STEP_TIME_S)


@dataclass
class Run:
    """The state of a run between ``setup`` and the end of ``execute``."""

    config: TrainConfig
    run_dir: Path
    chunked: ChunkedLM
    tokenizer: Any
    data: LMData
    stream: DataStream
    step_fn: TrainStep
    hooks: list[Hook]
    hook_ctx: HookContext
    start_step: int = 0
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))


@dataclass
class RunSummary:
    """What a finished run reports."""

    run_dir: Path
    steps: int
    initial_eval_ce: float | None
    final_eval_ce: float | None
    seconds: float
    noop: bool = False  # a resume of a run that had already completed its steps


def build_components(config: TrainConfig, device: torch.device) -> tuple[ChunkedLM, Any, LMData, DataStream]:
    """Seed, load the model, chunk it, attach adapters, build the data: what every process shares."""
    torch.manual_seed(config.run.seed)
    if not config.run.progress:  # transformers' "Loading weights" bars too (--no-progress, verify)
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    model, tokenizer = load_model(config.model.path, config.model.dtype, str(device))
    chunked = ChunkedLM(model, config.model.chunks, config.model.boundaries)
    attach_adapters(chunked, config.model.lora, config.run.seed)
    chunked.to(device)
    data = LMData(config.data, tokenizer)
    stream = DataStream(data, config.data.batch_size, config.data.stream_seed)
    return chunked, tokenizer, data, stream


def setup(
    config: TrainConfig,
    out: str | Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    hooks: Sequence[Hook] = (),
) -> Run:
    """Load model and data, attach adapters, restore the latest checkpoint when resuming.

    Everything is validated (the directory's kind, the resumed config, the checkpoint)
    before the first write, so a refused or failed start leaves ``out`` as it was.
    ``hooks`` are the instruments the loop drives (``hooks.py``); the CLI passes the probes
    of the config's ``[probes]`` table.
    """
    out = Path(out)
    check_sources(config)
    action = check_out(out, "train", resume=resume, overwrite=overwrite)
    checkpoint = latest_checkpoint(out) if action == "resume" else None
    saved = read_saved_config(out) if action == "resume" else None
    if saved is not None:
        check_resume(saved, config, checkpoint_step(checkpoint))
    if action == "resume":
        check_metrics(out)  # a log broken mid-file is refused before config.json is rewritten
    device = resolve_device(config.model.device)
    if config.run.threads is not None:
        torch.set_num_threads(config.run.threads)
    chunked, tokenizer, data, stream = build_components(config, device)
    step_fn = build_step(chunked, config.method, config.optim, config.model, config.run.steps,
                         unbiased_grad_sq=config.run.unbiased_grad_sq, readout_every=config.run.eval_every)
    start = 0
    if checkpoint is not None:
        state = load_checkpoint(checkpoint)
        _restore(chunked, step_fn, stream, state)
        start = state.step
    prepare_out(out, "train", resume=resume, overwrite=overwrite)
    if start < config.run.steps:  # a no-op resume leaves config.json and manifest.json alone
        if saved is None or saved.to_dict() != config.to_dict():
            write_text_atomic(out / "config.json", json.dumps(config.to_dict(), indent=2))
        write_manifest(out, device, "train", tokenizer=tokenizer)
    ctx = HookContext(config, out, chunked, step_fn, data, device, start)
    return Run(config, out, chunked, tokenizer, data, stream, step_fn, list(hooks), ctx, start, device)


def _restore(chunked: ChunkedLM, step_fn: TrainStep, stream: DataStream, state: TrainState) -> None:
    params = dict(chunked.model.named_parameters())
    missing = set(state.params) ^ {n for n, p in params.items() if p.requires_grad}
    if missing:
        raise ValueError(f"checkpoint does not match the model's trainable parameters: {sorted(missing)[:5]}")
    with torch.no_grad():
        for name, value in state.params.items():
            params[name].copy_(value)
    for opt, saved in zip(step_fn.optimizers, state.optimizers, strict=True):
        opt.load_state_dict(saved)
    stream.load_state_dict(state.data)
    restore_rng(state.rng)


@contextlib.contextmanager
def quiet_mode(chunked: ChunkedLM) -> Iterator[None]:
    """Eval mode under a forked RNG: what probes and evaluation run inside."""
    was_training = chunked.training
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        chunked.eval()
        try:
            yield
        finally:
            chunked.train(was_training)


@torch.no_grad()
def evaluate(run: Run) -> dict[str, float]:
    """Held-out CE(e_y, p_k) of every chunk, and the run's own objective, on the fixed eval batches.

    ``eval/objective`` is what the method minimises, per labelled token: Σ_k ℓ_k (ZeroLock's
    local losses, with its α, direction, ε and p_0) or CE(p_y^ε, p_K) (backprop). Being taken on
    the same fixed batches at every evaluation, its change is paired: the pilot's and
    ``diverged``'s regime check (``analyses.stats.seeds``) read it, not the training batches' losses,
    whose content changes from batch to batch.
    """
    K = run.chunked.num_chunks
    method = run.config.method
    local = run.step_fn.name == "zerolock"  # ZeroLock: every chunk's ℓ_k; backprop: chunk K's L only
    specs = [LossSpec.local(method, k) if local else LossSpec.global_(method) for k in range(1, K + 1)]
    sums, count, objective = [0.0] * (K + 1), 0, 0.0
    for batch in run.data.eval_batches():
        batch = {k: v.to(run.device) for k, v in batch.items()}
        hiddens = run.chunked.hiddens(batch["input_ids"], batch.get("attention_mask"))
        labels = batch["labels"]
        mask = labels != IGNORE_INDEX
        count += count_labelled(labels)
        log_prev = prev_log_probs(run.chunked, hiddens[0], 1, specs[0].p0) if specs[0].alpha < 1.0 else None
        for k, spec in enumerate(specs, start=1):  # one log-softmax per readout: CE(e_y, p_k), the objective's terms
            terms = local_loss_from_logits(run.chunked.readout(hiddens[k]), labels, log_prev, spec.alpha,
                                           spec.direction, spec.epsilon)
            sums[k] += float(terms.ce[mask].sum())
            if local or k == K:
                objective += float(terms.loss[mask].sum())
            log_prev = terms.log_p
    out = {EVAL_CHUNK.key(k, "ce"): sums[k] / max(1, count) for k in range(1, K + 1)}
    out[EVAL_CE] = out[EVAL_CHUNK.key(K, "ce")]
    out[EVAL_OBJECTIVE] = objective / max(1, count)
    if run.data.n_test:  # a three-way split: the held-out part above is validation, this one reports
        out.update(_test_ce(run))
    return out


def _test_ce(run: Run) -> dict[str, float]:
    """Test-split CE(e_y, p_k) of every chunk (``test/chunk/{k}/ce``, ``test/ce`` = chunk K's)."""
    K = run.chunked.num_chunks
    sums, count = [0.0] * (K + 1), 0
    for batch in run.data.test_batches():
        batch = {k: v.to(run.device) for k, v in batch.items()}
        hiddens = run.chunked.hiddens(batch["input_ids"], batch.get("attention_mask"))
        labels = batch["labels"]
        mask = labels != IGNORE_INDEX
        count += count_labelled(labels)
        for k in range(1, K + 1):
            log_p = torch.log_softmax(run.chunked.readout(hiddens[k]).float(), dim=-1)
            picked = log_p.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            sums[k] -= float(picked[mask].sum())
    out = {TEST_CHUNK.key(k, "ce"): sums[k] / max(1, count) for k in range(1, K + 1)}
    out[TEST_CE] = out[TEST_CHUNK.key(K, "ce")]
    return out


def _checkpoint(run: Run, step: int) -> None:
    with quiet_mode(run.chunked):
        for hook in run.hooks:
            hook.on_checkpoint(run.hook_ctx, step)
    params = {n: p for n, p in run.chunked.model.named_parameters() if p.requires_grad}
    state = TrainState(
        step, params, [o.state_dict() for o in run.step_fn.optimizers], capture_rng(), run.stream.state_dict()
    )
    save_checkpoint(run.run_dir, state, keep=run.config.run.keep_checkpoints)


def step_record(run: Run, step: int, metrics: dict[str, Any], tokens: int, elapsed: float,
                initial: dict[str, float] | None) -> dict[str, Any]:
    """The record of ``step``: the step's metrics, its labelled tokens, the data epoch, its timing
    (``elapsed`` seconds) and, at step 0, the evaluation at ω^0 (``initial``)."""
    record: dict[str, Any] = {"step": step, **metrics, TOKENS: tokens, DATA_EPOCH: run.stream.epoch}
    record[STEP_TIME_S] = elapsed
    record[TOKENS_PER_S] = tokens / max(elapsed, 1e-9)
    if step == 0 and initial is not None:
        record[EVAL_CE_INITIAL] = initial[EVAL_CE]
        record[EVAL_OBJECTIVE_INITIAL] = initial[EVAL_OBJECTIVE]
        if run.data.n_test:  # every readout at ω^0 on both splits (the per-chunk curves' start)
            record.update({records.initial(k): v for k, v in initial.items()
                           if k.startswith((EVAL_CHUNK.prefix, TEST.prefix))})
    return record


def execute(run: Run) -> RunSummary:
    """Run steps ``start_step .. steps-1``; log, evaluate, probe and checkpoint."""
    from tqdm.auto import tqdm

    cfg = run.config.run
    if run.start_step >= cfg.steps:  # resumed a finished run: nothing to do, nothing rewritten
        return RunSummary(run.run_dir, cfg.steps, None, None, 0.0, noop=True)
    logger = open_loggers(run.run_dir, cfg.report_to, keep_before=run.start_step, config=run.config.to_dict())
    t_start = time.perf_counter()
    initial = final = None
    with quiet_mode(run.chunked):
        for hook in run.hooks:
            hook.on_start(run.hook_ctx)
        if run.start_step == 0:
            initial = evaluate(run)
    bar = tqdm(total=cfg.steps, initial=run.start_step, disable=not cfg.progress, desc="train", unit="step")
    before = [h for h in run.hooks if callable(getattr(h, "before_step", None))]
    try:
        run.chunked.train()
        for step in range(run.start_step, cfg.steps):
            batch = {k: v.to(run.device) for k, v in run.stream.next_batch().items()}
            if before:  # optional hook method (hooks.py): sees ω^step before the update
                with quiet_mode(run.chunked):
                    for hook in before:
                        hook.before_step(run.hook_ctx, step)
            own = run.step_fn.name == "backprop" and run.config.run.unbiased_grad_sq  # its own Ĝ_t is the global one
            glob = cfg.global_grad_every > 0 and step % cfg.global_grad_every == 0
            g_hat = global_grad_sq_unbiased(run.step_fn, batch) if glob and not own else None  # at ω^step
            tic = time.perf_counter()
            metrics = run.step_fn.train_step(batch, step)
            elapsed = time.perf_counter() - tic
            if glob:
                metrics = {**metrics, GLOBAL_GRAD_SQ_UNBIASED: metrics[GRAD_SQ_UNBIASED] if own else g_hat}
            record = step_record(run, step, metrics, count_labelled(batch["labels"]), elapsed, initial)
            due = (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps
            if due or run.hooks:  # eval mode and back visit every module: only when used
                with quiet_mode(run.chunked):
                    if due:
                        record.update(evaluate(run))
                        final = record[EVAL_CE]
                    for hook in run.hooks:
                        record.update(hook.after_step(run.hook_ctx, step, record))
            logger.log(record)
            bar.update(1)
            bar.set_postfix(loss=f"{record[FINAL_CE]:.3f}", tok_s=f"{record[TOKENS_PER_S]:.0f}")
            if (step + 1) % cfg.checkpoint_every == 0 or step + 1 == cfg.steps:
                logger.flush()
                _checkpoint(run, step + 1)
    finally:
        bar.close()
        logger.close()
        with quiet_mode(run.chunked):
            for hook in run.hooks:
                hook.on_end(run.hook_ctx)
    if run.config.model.lora.enabled:
        save_run_adapter(run.config, run.chunked.model, run.run_dir)
    seconds = time.perf_counter() - t_start
    return RunSummary(run.run_dir, cfg.steps, start_ce(run.run_dir, initial), final, seconds)


def train(
    config: TrainConfig,
    out: str | Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    hooks: Sequence[Hook] = (),
) -> RunSummary:
    """``setup`` then ``execute``."""
    return execute(setup(config, out, resume=resume, overwrite=overwrite, hooks=hooks))
