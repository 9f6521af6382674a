"""Model shapes, their FLOPs, and per-stage costs scaled from measured FLOP rates.

FLOPs per token (a multiply-add is 2 FLOPs), for a decoder layer of width d, FFN width f,
h heads of which h_kv for keys/values (head size d/h), on sequences of T tokens:

  layer forward  = 2·(d·d + 2·d·d_kv + d·d + 3·d·f) + 2·T·d      (d_kv = h_kv·d/h; the last
                   term is causal attention, QKᵀ and AV over T/2 keys on average)
  readout        = 2·d·V                                           (one head matmul)

With a frozen base and LoRA adapters, a layer's backward computes input gradients (the same
matmul FLOPs as its forward) plus the attention backward; its measured rate
(``flop_rates["layer_backward"]``, counted against the forward's FLOPs) absorbs the
difference. ``scaled_costs`` assumes every op kind runs at the FLOP rate measured for it
(``Calibration.flop_rates``) on any shape, and the loss over the vocabulary at the measured
seconds per token·vocabulary entry; sends cost nothing (they overlap compute in both
pipelines) unless ``link_bytes_per_s`` is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zerolock_theory.pipeline.schedule_model import StageCosts

__all__ = ["SHAPES", "ModelShape", "layer_flops", "readout_flops", "scaled_costs", "split_layers"]


@dataclass(frozen=True)
class ModelShape:
    """What the costs of a decoder-only LM depend on."""

    name: str
    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    vocab: int

    def __post_init__(self) -> None:
        for key in ("layers", "hidden", "ffn", "heads", "kv_heads", "vocab"):
            if int(getattr(self, key)) < 1:
                raise ValueError(f"ModelShape.{key} must be >= 1, got {getattr(self, key)}")

    @classmethod
    def of(cls, config: Any, name: str = "model") -> ModelShape:
        """From a transformers config (Llama/Qwen names, GPT-2 names as fallback)."""
        d = int(getattr(config, "hidden_size", getattr(config, "n_embd", 0)))
        heads = int(getattr(config, "num_attention_heads", getattr(config, "n_head", 1)))
        ffn = getattr(config, "intermediate_size", None) or getattr(config, "n_inner", None) or 4 * d
        return cls(name, int(getattr(config, "num_hidden_layers", getattr(config, "n_layer", 0))), d, int(ffn),
                   heads, int(getattr(config, "num_key_value_heads", None) or heads), int(config.vocab_size))


SHAPES: dict[str, ModelShape] = {
    "smollm2-135m": ModelShape("SmolLM2-135M", 30, 576, 1536, 9, 3, 49152),
    "qwen2.5-0.5b": ModelShape("Qwen2.5-0.5B", 24, 896, 4864, 14, 2, 151936),
    "llama-3-8b": ModelShape("Llama-3-8B", 32, 4096, 14336, 32, 8, 128256),
}
"""The shapes the throughput prediction covers (from the models' published configs)."""


def layer_flops(shape: ModelShape, seq_len: int) -> float:
    """Forward FLOPs of one decoder layer per token (module docstring)."""
    d, f = shape.hidden, shape.ffn
    d_kv = shape.kv_heads * d // shape.heads
    return 2.0 * (2 * d * d + 2 * d * d_kv + 3 * d * f) + 2.0 * seq_len * d


def readout_flops(shape: ModelShape) -> float:
    """FLOPs of one readout h → logits per token: 2·d·V."""
    return 2.0 * shape.hidden * shape.vocab


def split_layers(layers: int, chunks: int) -> list[int]:
    """Layers per chunk, earlier chunks taking the remainder (``models.chunking.even_boundaries``)."""
    if not 1 <= chunks <= layers:
        raise ValueError(f"cannot split {layers} decoder layers into {chunks} chunks")
    base, extra = divmod(layers, chunks)
    return [base + (1 if k < extra else 0) for k in range(chunks)]


def scaled_costs(shape: ModelShape, chunks: int, tokens: int, seq_len: int, flop_rates: dict[str, float],
                 loss_s_per_element: dict[str, float], link_bytes_per_s: float | None = None,
                 bytes_per_value: int = 2) -> dict[str, list[StageCosts]]:
    """{"zerolock": [...], "baseline": [...]}: per-stage costs of a micro-batch of ``tokens``."""
    layer, head = layer_flops(shape, seq_len) * tokens, readout_flops(shape) * tokens
    send = 0.0 if link_bytes_per_s is None else tokens * shape.hidden * bytes_per_value / link_bytes_per_s
    out: dict[str, list[StageCosts]] = {}
    for method in ("zerolock", "baseline"):
        out[method] = [StageCosts(forward=n * layer / flop_rates["layer_forward"],
                                  backward=n * layer / flop_rates["layer_backward"],
                                  readout=head / flop_rates["readout"],
                                  readout_backward=head / flop_rates["readout_backward"],
                                  loss=loss_s_per_element[method] * tokens * shape.vocab,
                                  receive=send)
                       for n in split_layers(shape.layers, chunks)]
    return out
