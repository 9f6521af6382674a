"""Trainable parameters ω_k: LoRA adapters through peft (default) or full decoder layers."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from zerolock_theory.config import LoraSettings
from zerolock_theory.models.chunking import ChunkedLM
from zerolock_theory.models.families import FAMILIES

__all__ = [
    "DEFAULT_TARGETS", "PEFT_CONFIG", "PEFT_WEIGHTS", "attach_adapters", "init_lora_b", "peft_state_dict",
    "save_peft_adapter", "trainable_state_dict",
]

DEFAULT_TARGETS = {family.name: list(family.lora_targets) for family in FAMILIES}
"""Family name → default LoRA targets (``models.families``): every linear map of a decoder layer."""


def attach_adapters(chunked: ChunkedLM, settings: LoraSettings, seed: int = 0) -> None:
    """Inject LoRA into every decoder layer (in place) and set ``requires_grad``.

    Only adapter weights train with LoRA; with ``settings.enabled = False`` every decoder-layer
    parameter trains. The readout (final norm, LM head) and embeddings stay frozen either way.

    peft initialises A at random and B = 0, so the adapted model starts as the base model and
    the gradient in A starts at 0 (the LoRA warm-up: a gradient norm that first grows).
    ``settings.init_b_std`` = σ > 0 draws every B from N(0, σ²) instead, from a generator seeded
    by ``seed`` (the run seed) in parameter order, so the global RNG (and A) is untouched; σ = 0
    leaves peft's initialisation exactly as it is.
    """
    for p in chunked.model.parameters():
        p.requires_grad_(False)
    if not settings.enabled:
        for p in chunked.layers.parameters():
            p.requires_grad_(True)
        chunked.freeze_readout()
        return
    from peft import LoraConfig, inject_adapter_in_model

    family = chunked.family
    targets = settings.target_modules or list(family.lora_targets)
    config = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=targets,
        layers_to_transform=list(range(len(chunked.layers))),
        layers_pattern=family.layers_pattern,
        fan_in_fan_out=family.conv1d,
        bias="none",
    )
    inject_adapter_in_model(config, chunked.model)
    for name, p in chunked.model.named_parameters():
        p.requires_grad_("lora_" in name)
    chunked.freeze_readout()
    if not any(p.requires_grad for p in chunked.model.parameters()):
        raise ValueError(f"no LoRA target module matched {targets} in {type(chunked.model).__name__}")
    if settings.init_b_std > 0:
        init_lora_b(chunked.model, settings.init_b_std, seed)


@torch.no_grad()
def init_lora_b(model: nn.Module, std: float, seed: int) -> None:
    """Every LoRA B ~ N(0, std²), drawn in parameter order from ``torch.Generator().manual_seed(seed)``."""
    generator = torch.Generator().manual_seed(int(seed))
    for name, p in model.named_parameters():
        if ".lora_B." in name:
            p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float32) * std)


def trainable_state_dict(model: nn.Module) -> dict[str, object]:
    """Name → tensor (detached, contiguous) of every trainable parameter."""
    return {n: p.detach().contiguous() for n, p in model.named_parameters() if p.requires_grad}


PEFT_WEIGHTS = "adapter_model.safetensors"
PEFT_CONFIG = "adapter_config.json"


def peft_state_dict(params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Trained LoRA tensors under the keys peft saves: ``base_model.model.<name>`` without ``.default``.

    ``params`` are named as in the injected model (``model.layers.0.mlp.down_proj.lora_A.default.weight``).
    Raises ``ValueError`` when a tensor is not a LoRA weight (a full-layer run has no adapter).
    """
    out = {}
    for name, value in params.items():
        if ".lora_A.default." not in name and ".lora_B.default." not in name:
            raise ValueError(f"parameter {name!r} is not a LoRA weight; only LoRA runs "
                             f"(model.lora.enabled = true) export a PEFT adapter")
        out["base_model.model." + name.replace(".default.", ".")] = value.detach().cpu().contiguous()
    return out


def save_peft_adapter(params: dict[str, torch.Tensor], settings: LoraSettings, base_model: str,
                      out: str | Path) -> Path:
    """Write ``adapter_config.json`` and ``adapter_model.safetensors`` that peft loads.

    ``PeftModel.from_pretrained(base, out)`` then reproduces the trained model: the target
    modules are read from the tensor names, rank and alpha from ``settings``, and a family with
    transposed ``Conv1D`` weights (GPT-2, ``Family.conv1d``) sets ``fan_in_fan_out``.
    """
    from peft import LoraConfig
    from safetensors.torch import save_file

    tensors = peft_state_dict(params)
    if not tensors:
        raise ValueError("no LoRA weights to export")
    targets = sorted({key.split(".lora_")[0].rsplit(".", 1)[-1] for key in tensors})
    config = LoraConfig(
        r=settings.rank, lora_alpha=settings.alpha, lora_dropout=settings.dropout,
        target_modules=targets, bias="none", task_type="CAUSAL_LM",
        fan_in_fan_out=any(key.startswith(f"base_model.model.{family.layers}.")
                           for key in tensors for family in FAMILIES if family.conv1d),
        base_model_name_or_path=base_model,
    )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / PEFT_WEIGHTS), metadata={"format": "pt"})
    config.save_pretrained(str(out))
    return out
