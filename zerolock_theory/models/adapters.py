"""Trainable parameters ω_k: LoRA adapters through peft (default) or full decoder layers."""

from __future__ import annotations

from torch import nn

from zerolock_theory.config import LoraSettings
from zerolock_theory.models.chunking import ChunkedLM

__all__ = ["DEFAULT_TARGETS", "attach_adapters", "trainable_state_dict"]

# Attention and MLP projections per layout: every linear map of a decoder layer.
DEFAULT_TARGETS = {
    "llama": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    "gpt2": ["c_attn", "c_proj", "c_fc"],
}


def attach_adapters(chunked: ChunkedLM, settings: LoraSettings) -> None:
    """Inject LoRA into every decoder layer (in place) and set ``requires_grad``.

    Only adapter weights train with LoRA; with ``settings.enabled = False`` every decoder-layer
    parameter trains. The readout (final norm, LM head) and embeddings stay frozen either way.
    """
    for p in chunked.model.parameters():
        p.requires_grad_(False)
    if not settings.enabled:
        for p in chunked.layers.parameters():
            p.requires_grad_(True)
        chunked.freeze_readout()
        return
    from peft import LoraConfig, inject_adapter_in_model

    targets = settings.target_modules or DEFAULT_TARGETS[chunked.layout]
    layer_prefix = "model.layers" if chunked.layout == "llama" else "transformer.h"
    config = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=targets,
        layers_to_transform=list(range(len(chunked.layers))),
        layers_pattern=layer_prefix.split(".")[-1],
        fan_in_fan_out=chunked.layout == "gpt2",
        bias="none",
    )
    inject_adapter_in_model(config, chunked.model)
    for name, p in chunked.model.named_parameters():
        p.requires_grad_("lora_" in name)
    chunked.freeze_readout()
    if not any(p.requires_grad for p in chunked.model.parameters()):
        raise ValueError(f"no LoRA target module matched {targets} in {type(chunked.model).__name__}")


def trainable_state_dict(model: nn.Module) -> dict[str, object]:
    """Name → tensor (detached, contiguous) of every trainable parameter."""
    return {n: p.detach().contiguous() for n, p in model.named_parameters() if p.requires_grad}
