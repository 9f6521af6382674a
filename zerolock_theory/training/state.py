"""The training ``State`` and its atomic checkpoints.

A checkpoint is a directory ``checkpoints/step_NNNNNNNN`` holding ``adapters.safetensors``
(the trainable parameters ω), ``state.pt`` (step, optimizers, RNG, data position) and a
``COMPLETE`` marker written last. It is assembled under a temporary name and renamed into
place, so a crash leaves either a whole checkpoint or none. Resume uses the latest complete.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save

__all__ = ["CheckpointError", "TrainState", "checkpoint_step", "latest_checkpoint", "load_checkpoint",
           "save_checkpoint"]

MARKER = "COMPLETE"


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete or does not match the model."""


def capture_rng() -> dict[str, Any]:
    """Every RNG stream training draws from."""
    state: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict[str, Any]) -> None:
    """Inverse of ``capture_rng``."""
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


@dataclass
class TrainState:
    """Everything that determines the rest of a run: saved and loaded as a whole."""

    step: int  # number of completed updates (the next step index)
    params: dict[str, torch.Tensor]  # trainable parameters by model name
    optimizers: list[dict[str, Any]]
    rng: dict[str, Any]
    data: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)  # a loop's own additions (the pipeline: its stage)


def _step_dir(root: Path, step: int) -> Path:
    return root / f"step_{step:08d}"


def save_checkpoint(run_dir: Path, state: TrainState, keep: int = 2) -> Path:
    """Write ``state`` atomically; keep the newest ``keep`` complete checkpoints."""
    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = _step_dir(root, state.step)
    tmp = root / f".tmp-{final.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    # Serialise in memory, then write with plain file writes: a full disk raises OSError(ENOSPC)
    # naming the file (torch.save and safetensors would report it as an opaque RuntimeError).
    adapters = save({k: v.detach().cpu().contiguous() for k, v in state.params.items()})
    buffer = io.BytesIO()
    torch.save(
        {"step": state.step, "optimizers": state.optimizers, "rng": state.rng, "data": state.data, "extra": state.extra},
        buffer,
    )
    try:
        tmp.mkdir()
        _write_bytes(tmp / "adapters.safetensors", adapters)
        _write_bytes(tmp / "state.pt", buffer.getvalue())
        _write_bytes(tmp / MARKER, json.dumps({"step": state.step}).encode())
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # the previous checkpoints stay as they were
        raise
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    for old in sorted(complete_checkpoints(run_dir))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _write_bytes(path: Path, data: bytes) -> None:
    """Write and fsync one file of a checkpoint."""
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def checkpoint_step(path: Path | None) -> int:
    """Completed steps of a checkpoint directory ``step_NNNNNNNN`` (0 for None)."""
    return 0 if path is None else int(Path(path).name.split("_")[-1])


def complete_checkpoints(run_dir: Path) -> list[Path]:
    """Checkpoint directories that carry the completion marker."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob("step_*") if (p / MARKER).is_file())


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint, or None."""
    done = complete_checkpoints(run_dir)
    return done[-1] if done else None


def load_checkpoint(path: Path) -> TrainState:
    """Read a complete checkpoint directory back into a ``TrainState``."""
    path = Path(path)
    if not (path / MARKER).is_file():
        raise CheckpointError(f"{path} is not a complete checkpoint (no {MARKER} marker)")
    try:
        params = load_file(str(path / "adapters.safetensors"))
        raw = torch.load(path / "state.pt", map_location="cpu", weights_only=False)
    except Exception as exc:  # corrupt or truncated files
        raise CheckpointError(f"cannot read checkpoint {path}: {exc}") from exc
    return TrainState(raw["step"], params, raw["optimizers"], raw["rng"], raw["data"], raw.get("extra", {}))
