"""Stage-local checkpoints: each stage saves its own adapters, optimizer and step.

Layout under the run directory::

    stages/stage_{k}/checkpoints/step_NNNNNNNN/   adapters.safetensors (chunk k only),
                                                  state.pt, COMPLETE   (``training.state``)
    stages/stage_{k}/metrics.jsonl                chunk k's per-step metrics

Stage k checkpoints after every W = ``run.checkpoint_every`` completed steps (and at the
end) on its own, with no barrier: other stages keep working. The format is the trainer's
(``training/state.py``), so writes are atomic and a torn checkpoint is never loaded.

Restart point. A restarted stage must re-produce what its downstream still needs, so it
restarts from its newest checkpoint at or before the step its downstream will ask for next;
``restart_point`` gives the step it announces upstream while running (the newest multiple of
W it could fall back to), so upstream keeps exactly the activations such a restart replays.
"""

from __future__ import annotations

from pathlib import Path

import torch

from zerolock_theory.pipeline.stage import Stage
from zerolock_theory.training.state import (
    TrainState,
    capture_rng,
    complete_checkpoints,
    load_checkpoint,
    restore_rng,
    save_checkpoint,
)

__all__ = ["choose_checkpoint", "common_resume_step", "restart_point", "restore_stage", "resume_stage", "save_stage",
           "stage_dir"]


def stage_dir(run_dir: Path, k: int) -> Path:
    """``run_dir/stages/stage_{k}``."""
    return Path(run_dir) / "stages" / f"stage_{k}"


def _step_of(path: Path) -> int:
    return int(path.name.split("_")[-1])


def save_stage(stage: Stage, run_dir: Path, step: int) -> Path:
    """Save chunk k's adapters, optimizer, RNG and data position after ``step`` updates."""
    params = {n: p for n, p in stage.chunked.named_chunk_parameters(stage.k)}
    state = TrainState(
        step, params, [opt.state_dict() for opt in stage.step.optimizers], capture_rng(),
        stage.stream.state_dict(), {"stage": stage.k, "stages": stage.K},
    )
    return save_checkpoint(stage_dir(run_dir, stage.k), state, keep=stage.config.run.keep_checkpoints)


def choose_checkpoint(run_dir: Path, k: int, at_most: int | None) -> Path | None:
    """Newest complete checkpoint of stage k with step ≤ ``at_most`` (None: no limit)."""
    done = [p for p in complete_checkpoints(stage_dir(run_dir, k))
            if at_most is None or _step_of(p) <= at_most]
    return done[-1] if done else None


def restore_stage(stage: Stage, path: Path) -> int:
    """Load a stage checkpoint into ``stage``; returns its step (the next step to run)."""
    state = load_checkpoint(path)
    if state.extra.get("stage") != stage.k:
        raise ValueError(f"{path} belongs to stage {state.extra.get('stage')}, not {stage.k}")
    params = dict(stage.chunked.named_chunk_parameters(stage.k))
    if set(params) != set(state.params):
        diff = sorted(set(params) ^ set(state.params))[:5]
        raise ValueError(f"{path} does not match chunk {stage.k}'s parameters: {diff}")
    with torch.no_grad():
        for name, value in state.params.items():
            params[name].copy_(value)
    stage.step.optimizers[0].load_state_dict(state.optimizers[0])
    stage.stream.load_state_dict(state.data)
    restore_rng(state.rng)
    return state.step


def resume_stage(stage: Stage, run_dir: Path, step: int) -> int:
    """Restore stage k from its checkpoint at exactly ``step`` (``zerolock pipeline --resume``)."""
    path = choose_checkpoint(run_dir, stage.k, step)
    if path is None or _step_of(path) != step:
        raise ValueError(f"stage {stage.k} has no complete checkpoint at step {step} to resume from")
    return restore_stage(stage, path)


def common_resume_step(run_dir: Path, K: int) -> int:
    """The newest step at which every one of the K stages holds a complete checkpoint (0: none)."""
    common: set[int] | None = None
    for k in range(1, K + 1):
        steps = {_step_of(p) for p in complete_checkpoints(stage_dir(run_dir, k))}
        common = steps if common is None else common & steps
    return max(common) if common else 0


def restart_point(completed: int, downstream_completed: int | None, every: int) -> int:
    """The step this stage would restart from now: newest multiple of W ≤ what is still needed.

    ``downstream_completed`` is None for the last stage (no downstream to serve).
    """
    limit = completed if downstream_completed is None else min(completed, downstream_completed)
    return (limit // every) * every
