"""Export a run's trained LoRA adapters in peft's format (``adapter_config.json`` + weights).

The loop writes ``RUN/adapter/`` at the end of every LoRA run; ``export_run`` writes the same
from the latest complete checkpoint of any run directory (``zerolock export RUN --out DIR``).
"""

from __future__ import annotations

import json
from pathlib import Path

from torch import nn

from zerolock_theory.config import TrainConfig
from zerolock_theory.models.adapters import save_peft_adapter
from zerolock_theory.models.loading import resolve_model_path
from zerolock_theory.training.state import latest_checkpoint, load_checkpoint

__all__ = ["ADAPTER_DIR", "base_model_path", "export_run", "save_run_adapter"]

ADAPTER_DIR = "adapter"
"""Sub-directory of a run that holds its PEFT adapter after the last step."""


def base_model_path(config: TrainConfig) -> str:
    """The local base-model directory that the adapter belongs to (``embedded`` resolved)."""
    return str(resolve_model_path(config.model.path))


def save_run_adapter(config: TrainConfig, model: nn.Module, run_dir: str | Path) -> Path:
    """Write the trained LoRA weights of ``model`` to ``run_dir/adapter`` (end of a run)."""
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    return save_peft_adapter(params, config.model.lora, base_model_path(config), Path(run_dir) / ADAPTER_DIR)


def export_run(run_dir: str | Path, out: str | Path) -> Path:
    """Write the adapter of ``run_dir``'s latest complete checkpoint to ``out``.

    Raises ``FileNotFoundError`` when ``run_dir`` is not a run or has no complete checkpoint,
    and ``ValueError`` for a full-layer (non-LoRA) run, or an ``out`` that already holds a
    different adapter (nothing is overwritten).
    """
    run_dir, out = Path(run_dir), Path(out)
    saved = run_dir / "config.json"
    if not saved.is_file():
        raise FileNotFoundError(f"{run_dir} is not a run directory (no config.json)")
    config = TrainConfig.from_dict(json.loads(saved.read_text()))
    if not config.model.lora.enabled:
        raise ValueError(f"{run_dir} trained full decoder layers (model.lora.enabled = false); "
                         "only LoRA runs have a PEFT adapter")
    checkpoint = latest_checkpoint(run_dir)
    if checkpoint is None:
        raise FileNotFoundError(f"{run_dir} has no complete checkpoint to export")
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"--out {out} is not empty; choose a new directory")
    state = load_checkpoint(checkpoint)
    return save_peft_adapter(state.params, config.model.lora, base_model_path(config), out)
