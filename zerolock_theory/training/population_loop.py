"""The training loop over a population of runs: S configs, S run directories, one forward per chunk.

``train_population(configs, outs)`` trains S runs that differ only in their seeds (``run.seed``,
``data.seed``, ``data.order_seed``; every other setting equal) as one population of adapters
(``models.population``, ``training.population``) and writes each member's run directory as
``loop.train`` writes a single run's: ``config.json``, ``manifest.json``, ``metrics.jsonl``,
the checkpoints, the probes' stores and ``adapter/``. A member's directory is read, resumed and
exported as a single run's.

Per member, as in its single run: its model build (seed, LoRA initialisation, data split and
order, the dropout stream the build leaves), its minibatches, its Ĝ_t, gradient norms, clipping
and optimizer state, the initial and periodic evaluations, the global Ĝ_t at ω^t and every hook
(probe). Evaluation and hooks run inside ``Population.member(s)``, where the stacked model is
member s's single run (its rows, its trainable parameters, its RNG stream), so they need no change.
The training step and the global Ĝ_t are shared: ``PopulationStep`` runs the S members' minibatches
in one forward per chunk. A hook may also share its forwards: its ``prepare_members`` runs once
for all members after each update, before their ``after_step`` (``training.hooks``).

What differs from S single runs:

* ``train/step_time_s`` is the population step's wall time over S (each member's share) and
  ``train/tokens_per_s`` the member's tokens over that share;
* a non-finite loss in any member stops the whole population (the error names the step);
* the model is built S times at setup (each member's build, for its adapters' initial values and
  its RNG), and member 0's copy is kept as the population's frozen base;
* one progress bar for the population.

Resuming: every member resumes from the latest step that all members have a complete
checkpoint of (a kill between two members' checkpoints resumes from the earlier step, and each
member's log is cut back to it).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from zerolock_theory.config import TrainConfig, check_sources
from zerolock_theory.models import resolve_device, trainable_state_dict
from zerolock_theory.models.population import Population, stack_adapters
from zerolock_theory.records import (
    EVAL_CE,
    GLOBAL_GRAD_SQ_UNBIASED,
    GRAD_SQ_UNBIASED,
)
from zerolock_theory.training.export import ADAPTER_DIR, base_model_path
from zerolock_theory.training.gradients import count_labelled
from zerolock_theory.training.hooks import Hook, HookContext
from zerolock_theory.training.logger import open_loggers
from zerolock_theory.training.loop import (
    Run,
    RunSummary,
    build_components,
    evaluate,
    quiet_mode,
    step_record,
)
from zerolock_theory.training.manifest import write_manifest
from zerolock_theory.training.population import (
    PopulationStep,
    build_population_step,
    member_states,
    restore_members,
)
from zerolock_theory.training.resume import (
    check_metrics,
    check_resume,
    config_differences,
    read_saved_config,
    start_ce,
    write_text_atomic,
)
from zerolock_theory.training.rundir import check_out, prepare_out
from zerolock_theory.training.state import (
    checkpoint_step,
    complete_checkpoints,
    load_checkpoint,
    save_checkpoint,
)

__all__ = ["MEMBER_SEEDS", "PopulationRun", "check_members", "common_checkpoint", "execute_population",
           "setup_population", "train_population"]

MEMBER_SEEDS = ("run.seed", "data.seed", "data.order_seed")
"""The settings in which the members of one population may differ."""


@dataclasses.dataclass
class PopulationRun:
    """The state of a population between ``setup_population`` and the end of ``execute_population``:
    the shared step and, per member, a single run's ``Run`` whose model is the population's (used
    inside ``Population.member``) and whose step object is the member's own parameters and
    optimizers on the shared model."""

    population: Population
    step_fn: PopulationStep
    members: list[Run]
    start_step: int = 0


def check_members(configs: Sequence[TrainConfig]) -> None:
    """Raise ``ValueError`` unless the configs differ only in ``MEMBER_SEEDS`` (one population)."""
    if not configs:
        raise ValueError("a population needs at least one config")
    for s, config in enumerate(configs[1:], start=1):
        diff = {k: v for k, v in config_differences(configs[0], config).items() if k not in MEMBER_SEEDS}
        if diff:
            key, (a, b) = next(iter(diff.items()))
            raise ValueError(f"member {s} differs from member 0 in {key} ({json.dumps(a)} -> {json.dumps(b)}); "
                             f"the members of a population may differ only in {', '.join(MEMBER_SEEDS)}")
    if configs[0].model.lora.enabled is False:
        raise ValueError("a population trains LoRA adapters (model.lora.enabled = true)")


def common_checkpoint(outs: Sequence[Path]) -> int:
    """The latest step of which every member has a complete checkpoint (0 when there is none)."""
    steps = [{checkpoint_step(p) for p in complete_checkpoints(out)} for out in outs]
    shared = set.intersection(*steps) if steps else set()
    return max(shared, default=0)


def _checkpoint_at(out: Path, step: int) -> Path:
    return next(p for p in complete_checkpoints(out) if checkpoint_step(p) == step)


def setup_population(configs: Sequence[TrainConfig], outs: Sequence[str | Path], *, resume: bool = False,
                     overwrite: bool = False, hooks: Sequence[Sequence[Hook]] | None = None) -> PopulationRun:
    """Check every member's directory and config, build each member as its single run would, stack
    the members' adapters, restore the common checkpoint when resuming (module docstring).

    As ``loop.setup``: nothing is written before every check has passed. ``hooks[s]`` are member
    s's instruments (the CLI's probes of its config)."""
    outs = [Path(o) for o in outs]
    if len(configs) != len(outs) or len(set(outs)) != len(outs):
        raise ValueError(f"a population needs one distinct directory per config: {len(configs)} configs, "
                         f"{len(set(outs))} directories")
    hooks = [[] for _ in configs] if hooks is None else [list(h) for h in hooks]
    if len(hooks) != len(configs):
        raise ValueError(f"{len(hooks)} hook lists for {len(configs)} members")
    check_members(configs)
    actions = []
    for config, out in zip(configs, outs, strict=True):
        check_sources(config)
        actions.append(check_out(out, "train", resume=resume, overwrite=overwrite))
    start = common_checkpoint(outs) if all(a == "resume" for a in actions) else 0
    saved = [read_saved_config(out) if action == "resume" else None for out, action in zip(outs, actions, strict=True)]
    for config, out, action, old in zip(configs, outs, actions, saved, strict=True):
        if old is not None:
            check_resume(old, config, start)
        if action == "resume":
            check_metrics(out)
    first = configs[0]
    device = resolve_device(first.model.device)
    if first.run.threads is not None:
        torch.set_num_threads(first.run.threads)
    built, initial, streams = [], [], []
    for s, config in enumerate(configs):
        chunked, tokenizer, data, stream = build_components(config, device)
        initial.append({n: v.detach().clone() for n, v in trainable_state_dict(chunked.model).items()})
        streams.append(_dropout_stream(device))  # what the build leaves of the member's RNG: its dropout stream
        built.append((chunked if s == 0 else None, tokenizer, data, stream))
    chunked = built[0][0]
    population = stack_adapters(chunked, initial)
    population.rng.generators = streams
    step_fn = build_population_step(population, first.method, first.optim, first.model, first.run.steps,
                                    unbiased_grad_sq=first.run.unbiased_grad_sq, readout_every=first.run.eval_every)
    if start > 0:
        states = [load_checkpoint(_checkpoint_at(out, start)) for out in outs]
        restore_members(step_fn, states)
        for (_, _, _, stream), state in zip(built, states, strict=True):
            stream.load_state_dict(state.data)
    members = []
    for s, (config, out) in enumerate(zip(configs, outs, strict=True)):
        _, tokenizer, data, stream = built[s]
        prepare_out(out, "train", resume=resume, overwrite=overwrite)
        for later in [p for p in complete_checkpoints(out) if checkpoint_step(p) > start]:
            shutil.rmtree(later)  # past the common step: retrained from it
        if start < config.run.steps:
            if saved[s] is None or saved[s].to_dict() != config.to_dict():
                write_text_atomic(out / "config.json", json.dumps(config.to_dict(), indent=2))
            write_manifest(out, device, "train", tokenizer=tokenizer)
        own = dataclasses.replace(step_fn.inner, params=step_fn.params[s], optimizers=step_fn.optimizers[s])
        ctx = HookContext(config, out, chunked, own, data, device, start)
        members.append(Run(config, out, chunked, tokenizer, data, stream, own, hooks[s], ctx, start, device))
    return PopulationRun(population, step_fn, members, start)


def _dropout_stream(device: torch.device) -> torch.Generator:
    """A generator holding the global RNG's state on ``device`` (where a single run draws dropout)."""
    gen = torch.Generator(device=device)
    gen.set_state(torch.cuda.get_rng_state(device) if device.type == "cuda" else torch.get_rng_state())
    return gen


def _checkpoint(prun: PopulationRun, step: int) -> None:
    for s, run in enumerate(prun.members):
        with prun.population.member(s), quiet_mode(run.chunked):
            for hook in run.hooks:
                hook.on_checkpoint(run.hook_ctx, step)
    states = member_states(prun.step_fn, step, [run.stream.state_dict() for run in prun.members])
    for run, state in zip(prun.members, states, strict=True):
        save_checkpoint(run.run_dir, state, keep=run.config.run.keep_checkpoints)


def _prepare_members(prun: PopulationRun, step: int) -> None:
    """Each hook's ``prepare_members`` (``training.hooks``), once for all members, after update ``step``:
    outside member mode (the stacked model), in eval mode under a forked RNG."""
    members = prun.members
    if len({len(run.hooks) for run in members}) != 1:
        return
    for group in zip(*(run.hooks for run in members), strict=True):
        prepare = getattr(type(group[0]), "prepare_members", None)
        if prepare is not None and all(type(h) is type(group[0]) for h in group):
            with quiet_mode(members[0].chunked):
                prepare(list(group), [run.hook_ctx for run in members], step)


def execute_population(prun: PopulationRun) -> list[RunSummary]:
    """Run steps ``start_step .. steps-1`` of every member; log, evaluate, probe and checkpoint each."""
    from tqdm.auto import tqdm

    from zerolock_theory.models.adapters import save_peft_adapter

    members, population, S = prun.members, prun.population, len(prun.members)
    cfg = members[0].config.run
    if prun.start_step >= cfg.steps:
        return [RunSummary(run.run_dir, cfg.steps, None, None, 0.0, noop=True) for run in members]
    loggers = [open_loggers(run.run_dir, run.config.run.report_to, keep_before=prun.start_step,
                            config=run.config.to_dict()) for run in members]
    t_start = time.perf_counter()
    initial: list[dict[str, float] | None] = [None] * S
    final: list[float | None] = [None] * S
    for s, run in enumerate(members):
        with population.member(s), quiet_mode(run.chunked):
            for hook in run.hooks:
                hook.on_start(run.hook_ctx)
            if prun.start_step == 0:
                initial[s] = evaluate(run)
    bar = tqdm(total=cfg.steps, initial=prun.start_step, disable=not cfg.progress, desc=f"train x{S}", unit="step")
    try:
        members[0].chunked.train()
        for step in range(prun.start_step, cfg.steps):
            batches = [{k: v.to(run.device) for k, v in run.stream.next_batch().items()} for run in members]
            own = members[0].step_fn.name == "backprop" and cfg.unbiased_grad_sq  # its own Ĝ_t is the global one
            glob = cfg.global_grad_every > 0 and step % cfg.global_grad_every == 0
            for s, run in enumerate(members):
                before = [h for h in run.hooks if callable(getattr(h, "before_step", None))]
                if before:
                    with population.member(s), quiet_mode(run.chunked):
                        for hook in before:
                            hook.before_step(run.hook_ctx, step)
            g_hat: list[float | None] = [None] * S
            if glob and not own:
                g_hat = prun.step_fn.global_grad_sq_unbiased(batches)  # at ω^step, every member at once
            tic = time.perf_counter()
            metrics = prun.step_fn.train_step(batches, step)
            share = (time.perf_counter() - tic) / S
            _prepare_members(prun, step)
            for s, (run, batch) in enumerate(zip(members, batches, strict=True)):
                mine = metrics[s]
                if glob:
                    mine = {**mine, GLOBAL_GRAD_SQ_UNBIASED: mine[GRAD_SQ_UNBIASED] if own else g_hat[s]}
                record = step_record(run, step, mine, count_labelled(batch["labels"]), share, initial[s])
                due = (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps
                if due or run.hooks:
                    with population.member(s), quiet_mode(run.chunked):
                        if due:
                            record.update(evaluate(run))
                            final[s] = record[EVAL_CE]
                        for hook in run.hooks:
                            record.update(hook.after_step(run.hook_ctx, step, record))
                loggers[s].log(record)
            bar.update(1)
            if (step + 1) % cfg.checkpoint_every == 0 or step + 1 == cfg.steps:
                for logger in loggers:
                    logger.flush()
                _checkpoint(prun, step + 1)
    finally:
        bar.close()
        for logger in loggers:
            logger.close()
        for s, run in enumerate(members):
            with population.member(s), quiet_mode(run.chunked):
                for hook in run.hooks:
                    hook.on_end(run.hook_ctx)
    for s, run in enumerate(members):
        save_peft_adapter(population.member_state_dict(s), run.config.model.lora, base_model_path(run.config),
                          run.run_dir / ADAPTER_DIR)
    seconds = time.perf_counter() - t_start
    return [RunSummary(run.run_dir, cfg.steps, start_ce(run.run_dir, initial[s]), final[s], seconds)
            for s, run in enumerate(members)]


def train_population(configs: Sequence[TrainConfig], outs: Sequence[str | Path], *, resume: bool = False,
                     overwrite: bool = False, hooks: Sequence[Sequence[Hook]] | None = None) -> list[RunSummary]:
    """``setup_population`` then ``execute_population``: S single runs' directories from one population."""
    return execute_population(setup_population(configs, outs, resume=resume, overwrite=overwrite, hooks=hooks))
